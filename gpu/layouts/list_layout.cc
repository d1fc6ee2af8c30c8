// Builders of the GPU layouts (gpu/list_format.h) and the index-list transcoder.
#include "gpu/layouts/list_layout.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gpu/layouts/layout_builder.h"

namespace tandem::gpu {
namespace {

using layout_builder::BitLength;
using layout_builder::CheckLength;
using layout_builder::Copy;
using layout_builder::Exceptions;
using layout_builder::Gaps;
using layout_builder::Histogram;
using layout_builder::ImageBuilder;
using layout_builder::LengthHistogram;
using layout_builder::Pack;

// ---- PForDelta ----------------------------------------------------------------------------------

// The width of a one-level PForDelta array whose exceptions cost two plain words each: the w that
// minimises n*w + 64*exceptions(w), ties to the larger w.
uint32_t SubArrayWidth(absl::Span<const uint32_t> values) {
  const LengthHistogram h = Histogram(values);
  uint32_t best = 32;
  uint64_t best_bits = std::numeric_limits<uint64_t>::max();
  for (int w = 32; w >= 0; --w) {
    const uint64_t bits = values.size() * uint64_t(w) + 64 * Exceptions(h, w);
    if (bits < best_bits) {
      best = w;
      best_bits = bits;
    }
  }
  return best;
}

// Everything of a PForDelta layout that depends on the choice of b, before it is written out.
struct PForPlan {
  uint32_t b = 0;
  std::vector<uint32_t> exc_begin;  // per block, plus the total
  std::vector<uint32_t> offsets;    // gap-coded positions inside the block
  std::vector<uint32_t> highs;      // (gap >> b) - 1
  uint32_t offset_bits = 0, high_bits = 0;
  std::vector<uint32_t> sub_index, sub_high, sub_begin;
  uint64_t image_words = 0;
};

PForPlan PlanPFor(absl::Span<const uint32_t> gaps, uint32_t block_size, uint32_t b) {
  PForPlan p;
  p.b = b;
  const uint64_t n = gaps.size();
  const uint32_t nb = static_cast<uint32_t>((n + block_size - 1) / block_size);
  p.exc_begin.resize(nb + 1);
  for (uint32_t k = 0; k < nb; ++k) {
    p.exc_begin[k] = static_cast<uint32_t>(p.offsets.size());
    const uint64_t first = uint64_t{k} * block_size;
    const uint64_t end = std::min<uint64_t>(first + block_size, n);
    int64_t previous = -1;
    for (uint64_t i = first; b < 32 && i < end; ++i) {
      if ((gaps[i] >> b) == 0) continue;
      const int64_t pos = static_cast<int64_t>(i - first);
      p.offsets.push_back(static_cast<uint32_t>(pos - previous - 1));
      p.highs.push_back((gaps[i] >> b) - 1);
      previous = pos;
    }
  }
  p.exc_begin[nb] = static_cast<uint32_t>(p.offsets.size());

  // One level of recursion (section 6.2): the two exception arrays are PForDelta-coded; their own
  // exceptions are kept plainly, in one list sorted by exception index.
  p.offset_bits = SubArrayWidth(p.offsets);
  p.high_bits = SubArrayWidth(p.highs);
  const uint32_t e = static_cast<uint32_t>(p.offsets.size());
  p.sub_begin.resize(nb + 1);
  uint32_t k = 0;
  for (uint32_t j = 0; j < e; ++j) {
    while (k < nb && p.exc_begin[k] <= j)
      p.sub_begin[k++] = static_cast<uint32_t>(p.sub_index.size());
    if (p.offset_bits < 32 && (p.offsets[j] >> p.offset_bits) != 0) {
      p.sub_index.push_back(j << 1);
      p.sub_high.push_back(p.offsets[j] >> p.offset_bits);
    }
    if (p.high_bits < 32 && (p.highs[j] >> p.high_bits) != 0) {
      p.sub_index.push_back((j << 1) | 1);
      p.sub_high.push_back(p.highs[j] >> p.high_bits);
    }
  }
  while (k <= nb) p.sub_begin[k++] = static_cast<uint32_t>(p.sub_index.size());

  p.image_words = PackedArrayWords(n, b) + 3 * AlignedWords(uint64_t{nb} + 1) +
                  PackedArrayWords(e, p.offset_bits) + PackedArrayWords(e, p.high_bits) +
                  2 * AlignedWords(p.sub_index.size());
  return p;
}

// Section 6.2: one b for the whole list such that most gaps fit. Tries b90, the smallest width that
// at least 90% of the gaps fit, and the one or two widths below it as long as they leave at most a
// fifth of the gaps as exceptions; the smallest image wins, ties going to the wider slots (fewer
// exceptions to patch).
PForPlan ChoosePFor(absl::Span<const uint32_t> gaps, uint32_t block_size) {
  const LengthHistogram h = Histogram(gaps);
  const uint64_t limit = gaps.size() / 5;
  uint32_t b90 = 0;  // the smallest width that ~90% of the gaps fit
  while (Exceptions(h, b90) > gaps.size() / 10) ++b90;
  PForPlan best = PlanPFor(gaps, block_size, b90);
  for (uint32_t b = b90; b-- > 0 && b + 2 >= b90;) {
    if (Exceptions(h, b) > limit) break;
    PForPlan candidate = PlanPFor(gaps, block_size, b);
    if (candidate.image_words < best.image_words) best = std::move(candidate);
  }
  return best;
}

// ---- Frequencies --------------------------------------------------------------------------------

// Section 8's fetchable layout: the width with the smallest image, counting 8 position bits plus
// high_bits per exception (high_bits covers the largest exception).
uint32_t ChooseFreqWidth(absl::Span<const uint32_t> values) {
  const LengthHistogram h = Histogram(values);
  const uint32_t max_value = *std::max_element(values.begin(), values.end());
  uint32_t best = 32;
  uint64_t best_bits = std::numeric_limits<uint64_t>::max();
  for (int w = 32; w >= 0; --w) {
    const uint64_t e = Exceptions(h, w);
    const uint32_t high_bits = e == 0 ? 0 : BitLength((max_value >> w) - 1);
    const uint64_t bits = values.size() * uint64_t(w) + e * (8 + high_bits);
    if (bits < best_bits) {
      best = w;
      best_bits = bits;
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<PForImage> BuildPForDocids(absl::Span<const uint32_t> docids,
                                          const PForOptions& options) {
  if (absl::Status s = CheckLength(docids.size()); !s.ok()) return s;
  const uint32_t block_size = options.block_size;
  if (block_size != 128 && block_size != 512) {
    return absl::InvalidArgumentError(
        absl::StrCat("GPU PForDelta block size must be 128 or 512, not ", block_size));
  }
  if (options.bit_width && *options.bit_width > 32) {
    return absl::InvalidArgumentError("PForDelta bit width above 32");
  }
  const std::vector<uint32_t> gaps = Gaps(docids);
  const PForPlan plan = options.bit_width ? PlanPFor(gaps, block_size, *options.bit_width)
                                          : ChoosePFor(gaps, block_size);
  const uint32_t n = static_cast<uint32_t>(docids.size());
  const uint32_t nb = (n + block_size - 1) / block_size;
  const uint32_t e = static_cast<uint32_t>(plan.offsets.size());

  PForImage out;
  PForDesc& d = out.desc;
  d.num_postings = n;
  d.num_blocks = nb;
  d.block_size = block_size;
  d.bit_width = plan.b;
  d.num_exceptions = e;
  d.offset_bits = plan.offset_bits;
  d.high_bits = plan.high_bits;
  d.num_sub_exceptions = static_cast<uint32_t>(plan.sub_index.size());
  ImageBuilder layout;
  d.slots = layout.Add(PackedWords(n, plan.b) + 1);
  d.bases = layout.Add(uint64_t{nb} + 1);
  d.exc_begin = layout.Add(uint64_t{nb} + 1);
  d.sub_begin = layout.Add(uint64_t{nb} + 1);
  d.exc_offsets = layout.Add(PackedWords(e, plan.offset_bits) + 1);
  d.exc_highs = layout.Add(PackedWords(e, plan.high_bits) + 1);
  d.sub_index = layout.Add(d.num_sub_exceptions);
  d.sub_high = layout.Add(d.num_sub_exceptions);
  d.image_words = layout.size();

  out.words.assign(d.image_words, 0);
  Pack(gaps, plan.b, d.slots, &out.words);  // low b bits of every gap, exceptions included
  for (uint32_t k = 0; k <= nb; ++k) {
    out.words[d.bases + k] =
        k == 0 ? 0 : docids[std::min<uint64_t>(uint64_t{k} * block_size, n) - 1];
  }
  Copy(plan.exc_begin, d.exc_begin, &out.words);
  Copy(plan.sub_begin, d.sub_begin, &out.words);
  Pack(plan.offsets, plan.offset_bits, d.exc_offsets, &out.words);
  Pack(plan.highs, plan.high_bits, d.exc_highs, &out.words);
  Copy(plan.sub_index, d.sub_index, &out.words);
  Copy(plan.sub_high, d.sub_high, &out.words);
  return out;
}

absl::StatusOr<RiceImage> BuildRiceDocids(absl::Span<const uint32_t> docids,
                                          const RiceOptions& options) {
  if (absl::Status s = CheckLength(docids.size()); !s.ok()) return s;
  const std::vector<uint32_t> gaps = Gaps(docids);
  const uint32_t n = static_cast<uint32_t>(docids.size());
  uint32_t b = 0;
  if (options.bit_width) {
    if (*options.bit_width > 32) return absl::InvalidArgumentError("Rice bit width above 32");
    b = *options.bit_width;
  } else {
    uint64_t sum = 0;
    for (uint32_t g : gaps) sum += g;
    const uint64_t mean = sum / n;
    b = mean == 0 ? 0 : static_cast<uint32_t>(std::bit_width(mean)) - 1;
  }
  auto quotient = [b](uint32_t g) -> uint32_t { return b == 32 ? 0 : g >> b; };
  uint64_t total_q = 0;
  for (uint32_t g : gaps) total_q += quotient(g);
  if (total_q > 0xffffffffull) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Rice with b = %d needs %d unary one-bits, over the 2^32 the layout counts", b, total_q));
  }
  const uint32_t nb = (n + kRiceBlock - 1) / kRiceBlock;

  RiceImage out;
  RiceDesc& d = out.desc;
  d.num_postings = n;
  d.num_blocks = nb;
  d.bit_width = b;
  d.unary_bits = n + total_q;
  ImageBuilder layout;
  d.binary = layout.Add(PackedWords(n, b) + 1);
  d.unary = layout.Add(PackedWords(d.unary_bits, 1) + 1);
  d.bases = layout.Add(uint64_t{nb} + 1);
  d.unary_bases = layout.Add(uint64_t{nb} + 1);
  d.image_words = layout.size();
  out.words.assign(d.image_words, 0);

  std::vector<uint32_t> remainders(n);
  for (uint32_t i = 0; i < n; ++i) remainders[i] = b == 32 ? gaps[i] : gaps[i] & ((1u << b) - 1);
  Pack(remainders, b, d.binary, &out.words);

  // Unary part: all ones up to unary_bits, then a zero at each terminator position i + Q_i, Q_i the
  // sum of q over postings 0..i.
  uint32_t* unary = out.words.data() + d.unary;
  const uint64_t full_words = d.unary_bits / 32;
  std::fill_n(unary, full_words, ~0u);
  if (d.unary_bits % 32 != 0) unary[full_words] = (1u << (d.unary_bits % 32)) - 1;
  uint64_t q_sum = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i % kRiceBlock == 0) {
      out.words[d.bases + i / kRiceBlock] = i == 0 ? 0 : docids[i - 1];
      out.words[d.unary_bases + i / kRiceBlock] = static_cast<uint32_t>(q_sum);
    }
    q_sum += quotient(gaps[i]);
    const uint64_t terminator = i + q_sum;
    unary[terminator / 32] &= ~(1u << (terminator % 32));
  }
  out.words[d.bases + nb] = docids[n - 1];
  out.words[d.unary_bases + nb] = static_cast<uint32_t>(q_sum);
  return out;
}

absl::StatusOr<FreqImage> BuildFreqs(absl::Span<const uint32_t> freqs, const FreqOptions& options) {
  if (absl::Status s = CheckLength(freqs.size()); !s.ok()) return s;
  const uint32_t n = static_cast<uint32_t>(freqs.size());
  std::vector<uint32_t> values(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (freqs[i] == 0) return absl::InvalidArgumentError("term frequency 0 in a posting list");
    values[i] = freqs[i] - 1;
  }
  if (options.bit_width && *options.bit_width > 32) {
    return absl::InvalidArgumentError("frequency bit width above 32");
  }
  const uint32_t b = options.bit_width ? *options.bit_width : ChooseFreqWidth(values);
  const uint32_t nb = (n + kFreqBlock - 1) / kFreqBlock;

  std::vector<uint32_t> exc_begin(nb + 1), highs;
  std::vector<uint8_t> positions;
  uint32_t max_high = 0;
  for (uint32_t i = 0; i < n; ++i) {
    if (i % kFreqBlock == 0) exc_begin[i / kFreqBlock] = static_cast<uint32_t>(highs.size());
    if (b < 32 && (values[i] >> b) != 0) {
      positions.push_back(static_cast<uint8_t>(i % kFreqBlock));
      highs.push_back((values[i] >> b) - 1);
      max_high = std::max(max_high, highs.back());
    }
  }
  const uint32_t e = static_cast<uint32_t>(highs.size());
  exc_begin[nb] = e;

  FreqImage out;
  FreqDesc& d = out.desc;
  d.num_postings = n;
  d.num_blocks = nb;
  d.bit_width = b;
  d.high_bits = e == 0 ? 0 : BitLength(max_high);
  d.num_exceptions = e;
  ImageBuilder layout;
  d.slots = layout.Add(PackedWords(n, b) + 1);
  d.exc_begin = layout.Add(uint64_t{nb} + 1);
  d.exc_pos = layout.Add(PackedWords(e, 8) + 1);
  d.exc_highs = layout.Add(PackedWords(e, d.high_bits) + 1);
  d.image_words = layout.size();
  out.words.assign(d.image_words, 0);
  Pack(values, b, d.slots, &out.words);
  Copy(exc_begin, d.exc_begin, &out.words);
  if (e > 0) std::memcpy(out.words.data() + d.exc_pos, positions.data(), e);
  Pack(highs, d.high_bits, d.exc_highs, &out.words);
  return out;
}

GpuCodec DefaultGpuCodec(const index::BlockCodec& codec) {
  return codec.name() == "rice" ? GpuCodec::kRice : GpuCodec::kPFor;
}

uint64_t GpuPostingList::bytes() const {
  const uint64_t doc_words =
      std::visit([](const auto& image) { return image.words.size(); }, docids);
  return 4 * (doc_words + freqs.words.size());
}

absl::StatusOr<GpuPostingList> TranscodeList(const index::PostingListView& list,
                                             const index::BlockCodec& codec,
                                             const TranscodeOptions& options) {
  const uint32_t n = list.num_postings();
  std::vector<uint32_t> docids(n), freqs(n);
  for (uint32_t block = 0; block < list.num_blocks(); ++block) {
    const size_t first = size_t{block} * index::kBlockSize;
    if (absl::Status s = list.DecodeDocids(codec, block, docids.data() + first); !s.ok()) return s;
    if (absl::Status s = list.DecodeFreqs(codec, block, freqs.data() + first); !s.ok()) return s;
  }
  // A list changed after its checksum was computed shows as frequencies off the lexicon's cf; the
  // CPU engine's cursors check the same (cpu/cursor.h), and the whole list is at hand here.
  uint64_t cf = 0;
  for (uint32_t f : freqs) cf += f;
  if (cf != list.cf()) {
    return absl::DataLossError(
        absl::StrFormat("the frequencies sum to %d, the lexicon's cf is %d", cf, list.cf()));
  }
  if (options.num_docs != 0) {
    for (uint32_t i = 0; i < n; ++i) {
      if (docids[i] >= options.num_docs || (i > 0 && docids[i] <= docids[i - 1])) {
        return absl::DataLossError(absl::StrFormat(
            "posting %d of a list: docID %d is %s", i, docids[i],
            docids[i] >= options.num_docs
                ? absl::StrFormat("not below the collection size %d", options.num_docs)
                : std::string("not above the one before")));
      }
    }
  }
  GpuPostingList out;
  if (options.codec == GpuCodec::kPFor) {
    PForOptions pfor;
    pfor.block_size = options.pfor_block_size;
    absl::StatusOr<PForImage> image = BuildPForDocids(docids, pfor);
    if (!image.ok()) return image.status();
    out.docids = *std::move(image);
  } else {
    absl::StatusOr<RiceImage> image = BuildRiceDocids(docids);
    if (!image.ok()) return image.status();
    out.docids = *std::move(image);
  }
  absl::StatusOr<FreqImage> freq_image = BuildFreqs(freqs);
  if (!freq_image.ok()) return freq_image.status();
  out.freqs = *std::move(freq_image);
  if (options.seglrc_docids) {
    absl::StatusOr<LrcImage> seglrc = BuildLrcDocids(docids);  // SegLRC, segments of 256
    if (!seglrc.ok()) return seglrc.status();
    out.seglrc = *std::move(seglrc);
  }
  return out;
}

}  // namespace tandem::gpu
