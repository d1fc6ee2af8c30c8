// The ParaPFor layout's builder (Ao et al. 2011, section 4.1 and Appendix G.1; gpu/list_format.h
// describes the arrays). Every block of kParaPForBlock gaps is one of the paper's segments with its
// own header: the slot width b is chosen per block, by a cap on the share of exceptions or for the
// smallest block, and each exception keeps its index in the block as it is, so the GPU patches all
// of them at once.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpu/layouts/layout_builder.h"
#include "gpu/layouts/list_layout.h"

namespace tandem::gpu {
namespace {

using layout_builder::BitLength;
using layout_builder::CheckLength;
using layout_builder::Copy;
using layout_builder::Gaps;
using layout_builder::ImageBuilder;
using layout_builder::PutBits;

// One block's encoding before it is written out.
struct ParaPForBlockPlan {
  uint32_t b = 0, index_bits = 0, overflow_bits = 0;
  std::vector<uint32_t> indices;    // exceptions' indices in the block, increasing
  std::vector<uint32_t> overflows;  // gap >> b, nonzero
};

// The bits of a block of `count` gaps with slot width b, e exceptions and the two widths.
uint64_t BlockBits(uint32_t count, uint32_t b, uint64_t e, uint32_t ib, uint32_t hb) {
  return uint64_t{count} * b + e * (ib + hb);
}

// Words of a block's data. Blocks follow each other word by word; the data array ends with a spare
// word, so reading a value's second word never leaves it.
uint64_t BlockWords(uint64_t bits) { return (bits + 31) / 32; }

ParaPForBlockPlan PlanBlock(absl::Span<const uint32_t> gaps, uint32_t b) {
  ParaPForBlockPlan p;
  p.b = b;
  uint32_t max_index = 0, all_overflows = 0;
  for (uint32_t i = 0; b < 32 && i < gaps.size(); ++i) {
    const uint32_t overflow = gaps[i] >> b;
    if (overflow == 0) continue;
    p.indices.push_back(i);
    p.overflows.push_back(overflow);
    max_index = i;
    all_overflows |= overflow;
  }
  p.index_bits = BitLength(max_index);
  p.overflow_bits = BitLength(all_overflows);
  return p;
}

// The slot width of one block: forced, the smallest that leaves at most `share` of the gaps as
// exceptions, or the one whose block takes the fewest words (then bits, then the larger b).
uint32_t ChooseWidth(absl::Span<const uint32_t> gaps, const ParaPForOptions& options) {
  if (options.bit_width) return *options.bit_width;
  const uint32_t count = static_cast<uint32_t>(gaps.size());
  // last[w]: the last index whose gap has bit length w; n_of[w]: how many have it.
  int64_t last[33];
  uint64_t n_of[33] = {};
  std::fill(last, last + 33, -1);
  uint32_t max_width = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t w = BitLength(gaps[i]);
    last[w] = i;
    ++n_of[w];
    max_width = std::max(max_width, w);
  }
  if (options.max_exception_share) {
    const uint64_t allowed = static_cast<uint64_t>(*options.max_exception_share * count);
    uint64_t above = 0;  // gaps longer than b bits
    uint32_t b = max_width;
    while (b > 0 && above + n_of[b] <= allowed) above += n_of[b--];
    return b;
  }
  uint32_t best = max_width;
  uint64_t best_words = BlockWords(BlockBits(count, max_width, 0, 0, 0));
  uint64_t best_bits = BlockBits(count, max_width, 0, 0, 0);
  uint64_t e = 0;
  int64_t last_exception = -1;
  for (uint32_t b = max_width; b-- > 0;) {
    e += n_of[b + 1];
    last_exception = std::max(last_exception, last[b + 1]);
    const uint32_t ib = last_exception <= 0 ? 0 : BitLength(static_cast<uint32_t>(last_exception));
    const uint64_t bits = BlockBits(count, b, e, ib, max_width - b);
    const uint64_t words = BlockWords(bits);
    if (words < best_words || (words == best_words && bits < best_bits)) {
      best = b;
      best_words = words;
      best_bits = bits;
    }
  }
  return best;
}

}  // namespace

absl::StatusOr<ParaPForImage> BuildParaPForDocids(absl::Span<const uint32_t> docids,
                                                  const ParaPForOptions& options) {
  if (absl::Status s = CheckLength(docids.size()); !s.ok()) return s;
  if (options.bit_width && *options.bit_width > 32) {
    return absl::InvalidArgumentError("ParaPFor bit width above 32");
  }
  if (options.max_exception_share &&
      !(*options.max_exception_share >= 0.0 && *options.max_exception_share <= 1.0)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "ParaPFor exception share must be in [0, 1], got %g", *options.max_exception_share));
  }
  const std::vector<uint32_t> gaps = Gaps(docids);
  const uint32_t n = static_cast<uint32_t>(docids.size());
  const uint32_t nb = (n + kParaPForBlock - 1) / kParaPForBlock;

  std::vector<ParaPForBlockPlan> plans(nb);
  std::vector<uint32_t> offsets(nb + 1);
  uint64_t data_words = 0, exceptions = 0;
  for (uint32_t k = 0; k < nb; ++k) {
    const uint32_t first = k * kParaPForBlock;
    const auto block =
        absl::MakeConstSpan(gaps).subspan(first, std::min(kParaPForBlock, n - first));
    plans[k] = PlanBlock(block, ChooseWidth(block, options));
    const ParaPForBlockPlan& p = plans[k];
    offsets[k] = static_cast<uint32_t>(data_words);
    data_words += BlockWords(BlockBits(static_cast<uint32_t>(block.size()), p.b, p.indices.size(),
                                       p.index_bits, p.overflow_bits));
    exceptions += p.indices.size();
    if (data_words > std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError("ParaPFor data beyond 2^32 words");
    }
  }
  offsets[nb] = static_cast<uint32_t>(data_words);
  data_words += 1;  // the spare word

  ParaPForImage out;
  ParaPForDesc& d = out.desc;
  d.num_postings = n;
  d.num_blocks = nb;
  d.num_exceptions = static_cast<uint32_t>(exceptions);
  d.data_words = data_words;
  ImageBuilder layout;
  d.headers = layout.Add(nb);
  d.offsets = layout.Add(uint64_t{nb} + 1);
  d.bases = layout.Add(uint64_t{nb} + 1);
  d.data = layout.Add(data_words);
  d.image_words = layout.size();

  out.words.assign(d.image_words, 0);
  Copy(offsets, d.offsets, &out.words);
  for (uint32_t k = 0; k < nb; ++k) {
    const ParaPForBlockPlan& p = plans[k];
    const uint32_t first = k * kParaPForBlock;
    const uint32_t count = std::min(kParaPForBlock, n - first);
    const uint32_t en = static_cast<uint32_t>(p.indices.size());
    out.words[d.headers + k] = ParaPForHeader(p.b, p.index_bits, p.overflow_bits, en);
    out.words[d.bases + k] = k == 0 ? 0 : docids[first - 1];
    const uint64_t at = d.data + offsets[k];
    uint64_t bit = 0;
    for (uint32_t i = 0; i < count; ++i, bit += p.b)
      PutBits(gaps[first + i], p.b, at, bit, &out.words);
    for (uint32_t j = 0; j < en; ++j, bit += p.index_bits) {
      PutBits(p.indices[j], p.index_bits, at, bit, &out.words);
    }
    for (uint32_t j = 0; j < en; ++j, bit += p.overflow_bits) {
      PutBits(p.overflows[j], p.overflow_bits, at, bit, &out.words);
    }
  }
  out.words[d.bases + nb] = docids[n - 1];
  return out;
}

}  // namespace tandem::gpu
