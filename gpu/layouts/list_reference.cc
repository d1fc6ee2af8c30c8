// CPU reference decoders of the GPU layouts (declared in gpu/list_layout.h): plain sequential code,
// written apart from the kernels so that the kernels' tests compare two independent readings of
// gpu/list_format.h. Every per-block sum stored in a layout is checked against the decoded values.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "absl/strings/str_format.h"
#include "gpu/layouts/list_layout.h"

namespace tandem::gpu {
namespace {

// Value `index` of width w of the bit-packed array at word offset `at`. The spare word after every
// packed array makes the second load safe.
uint32_t GetBits(const std::vector<uint32_t>& words, uint64_t at, uint64_t index, uint32_t w) {
  if (w == 0) return 0;
  const uint64_t bit = index * w;
  const uint64_t word = at + bit / 32;
  const uint64_t pair = (uint64_t{words[word + 1]} << 32 | words[word]) >> (bit % 32);
  return w == 32 ? static_cast<uint32_t>(pair) : static_cast<uint32_t>(pair) & ((1u << w) - 1);
}

// The w-bit value (w in 0..32) at bit `bit` from word `at`.
uint32_t GetBitsAt(const std::vector<uint32_t>& words, uint64_t at, uint64_t bit, uint32_t w) {
  if (w == 0) return 0;
  const uint64_t word = at + bit / 32;
  const uint64_t pair = (uint64_t{words[word + 1]} << 32 | words[word]) >> (bit % 32);
  return w == 32 ? static_cast<uint32_t>(pair) : static_cast<uint32_t>(pair) & ((1u << w) - 1);
}

template <typename Image>
absl::Status CheckImage(const Image& image) {
  if (const char* error = CheckDesc(image.desc)) {
    return absl::InvalidArgumentError(absl::StrFormat("bad GPU list descriptor: %s", error));
  }
  if (image.words.size() != image.desc.image_words) {
    return absl::InvalidArgumentError("GPU list image size does not match its descriptor");
  }
  return absl::OkStatus();
}

absl::Status Corrupt(absl::string_view what, uint32_t block) {
  return absl::DataLossError(absl::StrFormat("GPU list block %d: %s", block, what));
}

uint32_t Shifted(uint32_t high, uint32_t shift) {
  return static_cast<uint32_t>(uint64_t{high} << shift);  // modulo 2^32, as the kernels compute it
}

// ---- PForDelta ----------------------------------------------------------------------------------

// The gaps of block k, exceptions patched.
absl::StatusOr<std::vector<uint32_t>> PForBlockGaps(const PForImage& image, uint32_t k) {
  const PForDesc& d = image.desc;
  const std::vector<uint32_t>& w = image.words;
  const uint32_t first = k * d.block_size;
  const uint32_t count = std::min(d.block_size, d.num_postings - first);
  std::vector<uint32_t> gaps(count);
  for (uint32_t i = 0; i < count; ++i) gaps[i] = GetBits(w, d.slots, first + i, d.bit_width);

  const uint32_t eb = w[d.exc_begin + k], ee = w[d.exc_begin + k + 1];
  const uint32_t sb = w[d.sub_begin + k], se = w[d.sub_begin + k + 1];
  if (eb > ee || ee > d.num_exceptions || sb > se || se > d.num_sub_exceptions) {
    return Corrupt("exception ranges out of order", k);
  }
  for (uint32_t s = sb; s < se; ++s) {
    const uint32_t j = w[d.sub_index + s] >> 1;
    if (j < eb || j >= ee) return Corrupt("second-level exception outside the block", k);
  }
  int64_t position = -1;
  for (uint32_t j = eb; j < ee; ++j) {
    uint32_t offset_gap = GetBits(w, d.exc_offsets, j, d.offset_bits);
    uint32_t high = GetBits(w, d.exc_highs, j, d.high_bits);
    for (uint32_t s = sb; s < se; ++s) {
      const uint32_t key = w[d.sub_index + s];
      if (key >> 1 != j) continue;
      if (key & 1) {
        high |= Shifted(w[d.sub_high + s], d.high_bits);
      } else {
        offset_gap |= Shifted(w[d.sub_high + s], d.offset_bits);
      }
    }
    position += int64_t{offset_gap} + 1;
    if (position >= count) return Corrupt("exception position past the block", k);
    gaps[position] |= Shifted(high + 1, d.bit_width);
  }
  return gaps;
}

// ---- Rice ---------------------------------------------------------------------------------------

// Reads one unary code at bit `*pos` of the unary part: the one-bits before the next zero-bit.
absl::StatusOr<uint32_t> ReadUnary(const RiceImage& image, uint64_t* pos) {
  const RiceDesc& d = image.desc;
  uint64_t q = 0;
  while (true) {
    if (*pos >= d.unary_bits) return absl::DataLossError("GPU Rice unary part ends early");
    const uint32_t avail = 32 - *pos % 32;
    const uint32_t word = image.words[d.unary + *pos / 32] >> (*pos % 32);
    const uint32_t ones = static_cast<uint32_t>(std::countr_one(word));
    if (ones < avail) {
      q += ones;
      *pos += ones + 1;
      break;
    }
    q += avail;
    *pos += avail;
  }
  if (q > 0xffffffffull) return absl::DataLossError("GPU Rice unary code too long");
  return static_cast<uint32_t>(q);
}

// The gaps of postings [first, first + count), whose unary codes start at bit `pos`; their q values
// go to quotients[0..count).
absl::StatusOr<std::vector<uint32_t>> RiceGaps(const RiceImage& image, uint32_t first,
                                               uint32_t count, uint64_t pos,
                                               std::vector<uint32_t>* quotients) {
  const RiceDesc& d = image.desc;
  std::vector<uint32_t> gaps(count);
  quotients->resize(count);
  for (uint32_t i = 0; i < count; ++i) {
    absl::StatusOr<uint32_t> q = ReadUnary(image, &pos);
    if (!q.ok()) return q.status();
    if (d.bit_width == 32 && *q != 0) return absl::DataLossError("GPU Rice q > 0 with b = 32");
    (*quotients)[i] = *q;
    gaps[i] = (d.bit_width == 32 ? 0 : Shifted(*q, d.bit_width)) +
              GetBits(image.words, d.binary, first + i, d.bit_width);
  }
  return gaps;
}

void PrefixSum(uint32_t base, std::vector<uint32_t>* values) {
  for (uint32_t& v : *values) v = base += v;  // modulo 2^32
}

// ---- ParaPFor -----------------------------------------------------------------------------------

// The gaps of block k: slots first, then every exception patched from its index (Appendix G.2).
// *exceptions gets the block's exception count.
absl::StatusOr<std::vector<uint32_t>> ParaPForBlockGaps(const ParaPForImage& image, uint32_t k,
                                                        uint32_t* exceptions) {
  const ParaPForDesc& d = image.desc;
  const std::vector<uint32_t>& w = image.words;
  const uint32_t first = k * kParaPForBlock;
  const uint32_t count = std::min(kParaPForBlock, d.num_postings - first);
  const uint32_t header = w[d.headers + k];
  const uint32_t b = ParaPForSlotWidth(header), ib = ParaPForIndexWidth(header);
  const uint32_t hb = ParaPForOverflowWidth(header), en = ParaPForExceptions(header);
  if (b > 32 || hb > 32 || en > count || (en > 0 && (hb == 0 || b + hb > 32))) {
    return Corrupt("bad block header", k);
  }
  const uint32_t begin = w[d.offsets + k], end = w[d.offsets + k + 1];
  if (end < begin || uint64_t{end} + 1 > d.data_words) {
    return Corrupt("block data outside the data array", k);
  }
  const uint64_t bits = uint64_t{count} * b + uint64_t{en} * (ib + hb);
  if ((bits + 31) / 32 > end - begin) return Corrupt("block data shorter than its header", k);
  const uint64_t at = d.data + begin;
  std::vector<uint32_t> gaps(count);
  for (uint32_t i = 0; i < count; ++i) gaps[i] = GetBitsAt(w, at, uint64_t{i} * b, b);
  int64_t previous = -1;
  for (uint32_t j = 0; j < en; ++j) {
    const uint32_t index = GetBitsAt(w, at, uint64_t{count} * b + uint64_t{j} * ib, ib);
    const uint32_t overflow =
        GetBitsAt(w, at, uint64_t{count} * b + uint64_t{en} * ib + uint64_t{j} * hb, hb);
    if (index <= previous || index >= count) return Corrupt("exception indices not increasing", k);
    if (overflow == 0) return Corrupt("exception without overflow", k);
    previous = index;
    gaps[index] |= Shifted(overflow, b);
  }
  *exceptions = en;
  return gaps;
}

// ---- LRC ----------------------------------------------------------------------------------------

struct LrcSegment {
  uint32_t first = 0, count = 0, intercept = 0, offset = 0, width = 0;
  float slope = 0;
};

LrcSegment ReadSegment(const LrcImage& image, uint32_t s) {
  const LrcDesc& d = image.desc;
  const uint32_t* r = image.words.data() + d.segments + uint64_t{s} * kLrcRecordWords;
  LrcSegment seg;
  seg.first = r[0];
  seg.count = r[kLrcRecordWords] - r[0];
  seg.intercept = r[1];
  std::memcpy(&seg.slope, &r[2], sizeof(float));
  seg.offset = r[3];
  seg.width = GetBits(image.words, d.widths, s, 8);
  return seg;
}

// Checks every segment record against the descriptor and the records around it.
absl::Status CheckLrcSegments(const LrcImage& image) {
  const LrcDesc& d = image.desc;
  const uint32_t* sentinel =
      image.words.data() + d.segments + uint64_t{d.num_segments} * kLrcRecordWords;
  if (sentinel[0] != d.num_postings || uint64_t{sentinel[3]} + 1 > d.deviation_words) {
    return absl::DataLossError("LRC sentinel record disagrees with the descriptor");
  }
  for (uint32_t s = 0; s < d.num_segments; ++s) {
    const uint32_t* r = image.words.data() + d.segments + uint64_t{s} * kLrcRecordWords;
    if (r[kLrcRecordWords] < r[0] || r[kLrcRecordWords + 3] < r[3]) {
      return Corrupt("segments out of order", s);
    }
    const LrcSegment seg = ReadSegment(image, s);
    if ((s == 0 && seg.first != 0) ||
        (d.segment_length != 0 && seg.first != uint64_t{s} * d.segment_length)) {
      return Corrupt("segment starts at the wrong posting", s);
    }
    if (seg.width > 32 || PackedWords(seg.count, seg.width) > r[kLrcRecordWords + 3] - seg.offset) {
      return Corrupt("deviations wider than their words", s);
    }
    if (!(seg.slope >= 0.0f) ||
        (seg.count > 0 && !(seg.slope * static_cast<float>(seg.count - 1) < 4294967296.0f))) {
      return Corrupt("slope out of range", s);
    }
  }
  return absl::OkStatus();
}

uint32_t LrcDocid(const LrcImage& image, const LrcSegment& seg, uint32_t j) {
  return seg.intercept + LrcLine(seg.slope, j) +
         GetBits(image.words, image.desc.deviations + seg.offset, j, seg.width);  // modulo 2^32
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ReferenceDecodeBlock(const PForImage& image, uint32_t block,
                                                           DecodeOutput output) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  if (block >= image.desc.num_blocks) return absl::OutOfRangeError("no such block");
  absl::StatusOr<std::vector<uint32_t>> gaps = PForBlockGaps(image, block);
  if (!gaps.ok() || output == DecodeOutput::kGaps) return gaps;
  PrefixSum(image.words[image.desc.bases + block], &*gaps);
  if (gaps->back() != image.words[image.desc.bases + block + 1]) {
    return Corrupt("last docID differs from the next block's base", block);
  }
  return gaps;
}

absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const PForImage& image, DecodeOutput output) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  std::vector<uint32_t> out;
  out.reserve(image.desc.num_postings);
  for (uint32_t k = 0; k < image.desc.num_blocks; ++k) {
    absl::StatusOr<std::vector<uint32_t>> gaps = PForBlockGaps(image, k);
    if (!gaps.ok()) return gaps.status();
    out.insert(out.end(), gaps->begin(), gaps->end());
  }
  if (output == DecodeOutput::kGaps) return out;
  // One global prefix sum from 0, independent of the stored bases, which are checked against it.
  PrefixSum(0, &out);
  const PForDesc& d = image.desc;
  for (uint32_t k = 0; k <= d.num_blocks; ++k) {
    const uint64_t end = std::min<uint64_t>(uint64_t{k} * d.block_size, d.num_postings);
    if (image.words[d.bases + k] != (end == 0 ? 0 : out[end - 1])) {
      return Corrupt("stored base differs from the decoded docIDs", k);
    }
  }
  return out;
}

absl::StatusOr<std::vector<uint32_t>> ReferenceDecodeBlock(const RiceImage& image, uint32_t block,
                                                           DecodeOutput output) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  const RiceDesc& d = image.desc;
  if (block >= d.num_blocks) return absl::OutOfRangeError("no such block");
  const uint32_t first = block * kRiceBlock;
  const uint32_t count = std::min(kRiceBlock, d.num_postings - first);
  const uint32_t q_before = image.words[d.unary_bases + block];
  std::vector<uint32_t> quotients;
  absl::StatusOr<std::vector<uint32_t>> gaps =
      RiceGaps(image, first, count, uint64_t{first} + q_before, &quotients);
  if (!gaps.ok()) return gaps.status();
  uint64_t q_sum = q_before;
  for (uint32_t q : quotients) q_sum += q;
  if (q_sum != image.words[d.unary_bases + block + 1]) {
    return Corrupt("unary base differs from the decoded codes", block);
  }
  if (output == DecodeOutput::kGaps) return gaps;
  PrefixSum(image.words[d.bases + block], &*gaps);
  if (gaps->back() != image.words[d.bases + block + 1]) {
    return Corrupt("last docID differs from the next block's base", block);
  }
  return gaps;
}

absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const RiceImage& image, DecodeOutput output) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  const RiceDesc& d = image.desc;
  // One sequential pass over the whole unary part, independent of the per-block sums.
  std::vector<uint32_t> quotients;
  absl::StatusOr<std::vector<uint32_t>> gaps = RiceGaps(image, 0, d.num_postings, 0, &quotients);
  if (!gaps.ok()) return gaps.status();
  uint64_t q_sum = 0;
  for (uint32_t q : quotients) q_sum += q;
  if (d.num_postings + q_sum != d.unary_bits) {
    return absl::DataLossError("GPU Rice unary part longer than its codes");
  }
  std::vector<uint32_t> docids = *gaps;
  PrefixSum(0, &docids);
  uint64_t q_before = 0;
  for (uint32_t i = 0; i <= d.num_postings; ++i) {
    if (i % kRiceBlock == 0 || i == d.num_postings) {
      const uint32_t k = (i + kRiceBlock - 1) / kRiceBlock;
      if (image.words[d.bases + k] != (i == 0 ? 0 : docids[i - 1]) ||
          image.words[d.unary_bases + k] != static_cast<uint32_t>(q_before)) {
        return Corrupt("stored base sums differ from the decoded codes", k);
      }
    }
    if (i < d.num_postings) q_before += quotients[i];
  }
  return output == DecodeOutput::kGaps ? *std::move(gaps) : docids;
}

absl::StatusOr<std::vector<uint32_t>> ReferenceDecodeBlock(const ParaPForImage& image,
                                                           uint32_t block, DecodeOutput output) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  if (block >= image.desc.num_blocks) return absl::OutOfRangeError("no such block");
  uint32_t exceptions = 0;
  absl::StatusOr<std::vector<uint32_t>> gaps = ParaPForBlockGaps(image, block, &exceptions);
  if (!gaps.ok() || output == DecodeOutput::kGaps) return gaps;
  PrefixSum(image.words[image.desc.bases + block], &*gaps);
  if (gaps->back() != image.words[image.desc.bases + block + 1]) {
    return Corrupt("last docID differs from the next block's base", block);
  }
  return gaps;
}

absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const ParaPForImage& image,
                                                      DecodeOutput output) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  const ParaPForDesc& d = image.desc;
  std::vector<uint32_t> out;
  out.reserve(d.num_postings);
  uint64_t exceptions = 0;
  for (uint32_t k = 0; k < d.num_blocks; ++k) {
    uint32_t e = 0;
    absl::StatusOr<std::vector<uint32_t>> gaps = ParaPForBlockGaps(image, k, &e);
    if (!gaps.ok()) return gaps.status();
    out.insert(out.end(), gaps->begin(), gaps->end());
    exceptions += e;
  }
  if (exceptions != d.num_exceptions) {
    return absl::DataLossError("ParaPFor exception count differs from the blocks' headers");
  }
  if (output == DecodeOutput::kGaps) return out;
  PrefixSum(0, &out);
  for (uint32_t k = 0; k <= d.num_blocks; ++k) {
    const uint64_t end = std::min<uint64_t>(uint64_t{k} * kParaPForBlock, d.num_postings);
    if (image.words[d.bases + k] != (end == 0 ? 0 : out[end - 1])) {
      return Corrupt("stored base differs from the decoded docIDs", k);
    }
  }
  return out;
}

absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const LrcImage& image, DecodeOutput output) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  if (absl::Status s = CheckLrcSegments(image); !s.ok()) return s;
  const LrcDesc& d = image.desc;
  std::vector<uint32_t> out;
  out.reserve(d.num_postings);
  for (uint32_t s = 0; s < d.num_segments; ++s) {
    const LrcSegment seg = ReadSegment(image, s);
    for (uint32_t j = 0; j < seg.count; ++j) {
      const uint32_t x = LrcDocid(image, seg, j);
      if (d.kind == LrcKind::kHsLrc && (x >> d.hash_shift) != s) {
        return Corrupt("docID outside its hash bucket", s);
      }
      out.push_back(x);
    }
  }
  if (output == DecodeOutput::kGaps) {
    for (size_t i = out.size(); i-- > 1;) out[i] -= out[i - 1];  // modulo 2^32
  }
  return out;
}

absl::StatusOr<uint32_t> ReferenceLrcDocid(const LrcImage& image, uint32_t position) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  if (absl::Status s = CheckLrcSegments(image); !s.ok()) return s;
  const LrcDesc& d = image.desc;
  if (position >= d.num_postings) return absl::OutOfRangeError("no such posting");
  uint32_t s = 0;
  if (d.segment_length != 0) {
    s = position / d.segment_length;
  } else {  // the last segment starting at or before the position: the one holding it
    uint32_t lo = 0, hi = d.num_segments;
    while (hi - lo > 1) {
      const uint32_t mid = lo + (hi - lo) / 2;
      (ReadSegment(image, mid).first <= position ? lo : hi) = mid;
    }
    s = lo;
  }
  const LrcSegment seg = ReadSegment(image, s);
  return LrcDocid(image, seg, position - seg.first);
}

absl::StatusOr<uint32_t> ReferenceFetchFreq(const FreqImage& image, uint32_t position) {
  if (absl::Status s = CheckImage(image); !s.ok()) return s;
  const FreqDesc& d = image.desc;
  if (position >= d.num_postings) return absl::OutOfRangeError("no such posting");
  uint32_t value = GetBits(image.words, d.slots, position, d.bit_width);
  const uint32_t block = position / kFreqBlock;
  const uint32_t eb = image.words[d.exc_begin + block], ee = image.words[d.exc_begin + block + 1];
  if (eb > ee || ee > d.num_exceptions) return Corrupt("exception range out of order", block);
  int previous = -1;
  for (uint32_t j = eb; j < ee; ++j) {
    const int in_block = static_cast<int>(GetBits(image.words, d.exc_pos, j, 8));
    if (in_block <= previous || in_block >= static_cast<int>(kFreqBlock)) {
      return Corrupt("exception positions not increasing", block);
    }
    previous = in_block;
    if (static_cast<uint32_t>(in_block) == position % kFreqBlock) {
      value |= Shifted(GetBits(image.words, d.exc_highs, j, d.high_bits) + 1, d.bit_width);
    }
  }
  return value + 1;
}

}  // namespace tandem::gpu
