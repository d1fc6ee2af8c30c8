// CPU reference decoders of the GPU layouts (declared in gpu/list_layout.h): plain sequential code,
// written apart from the kernels so that the kernels' tests compare two independent readings of
// gpu/list_format.h. Every per-block sum stored in a layout is checked against the decoded values.
#include <algorithm>
#include <bit>

#include "absl/strings/str_format.h"
#include "gpu/list_layout.h"

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
