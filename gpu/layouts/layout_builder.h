// File: layout_builder.h
//
// What the builders of the GPU layouts (list_layout.cc, para_pfor_layout.cc, lrc_layout.cc) share:
// laying arrays out in an image at 16-byte boundaries, packing values into it, and the checks and
// gaps every builder starts from. Host code only; not for use outside gpu/.
#pragma once

#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "gpu/layouts/list_format.h"
#include "index/bit_packing.h"

namespace tandem::gpu::layout_builder {

inline uint32_t BitLength(uint32_t v) { return static_cast<uint32_t>(std::bit_width(v)); }

// Values of each bit length 0..32.
using LengthHistogram = std::array<uint64_t, 33>;

inline LengthHistogram Histogram(absl::Span<const uint32_t> values) {
  LengthHistogram h{};
  for (uint32_t v : values) ++h[BitLength(v)];
  return h;
}

// Values that do not fit in w bits.
inline uint64_t Exceptions(const LengthHistogram& h, uint32_t w) {
  uint64_t e = 0;
  for (uint32_t len = w + 1; len <= 32; ++len) e += h[len];
  return e;
}

// Lays out arrays in an image: every array starts at a multiple of 4 words.
class ImageBuilder {
 public:
  uint64_t Add(uint64_t words) {
    const uint64_t at = size_;
    size_ += AlignedWords(words);
    return at;
  }
  uint64_t size() const { return size_; }

 private:
  uint64_t size_ = 0;
};

// Packs values with width w at word offset `at` of a zeroed image (index/bit_packing.h's bit order
// is the little-endian order of list_format.h).
inline void Pack(absl::Span<const uint32_t> values, uint32_t w, uint64_t at,
                 std::vector<uint32_t>* image) {
  if (values.empty() || w == 0) return;
  index::PackBits(values.data(), values.size(), w, reinterpret_cast<uint8_t*>(image->data() + at));
}

// ORs the low w bits of `value` (w in 0..32) into the image at bit `bit` from word `at`.
inline void PutBits(uint32_t value, uint32_t w, uint64_t at, uint64_t bit,
                    std::vector<uint32_t>* image) {
  if (w == 0) return;
  const uint64_t v = w == 32 ? value : value & ((1u << w) - 1);
  uint32_t* p = image->data() + at + bit / 32;
  const uint64_t shifted = v << (bit % 32);
  p[0] |= static_cast<uint32_t>(shifted);
  if (bit % 32 + w > 32) p[1] |= static_cast<uint32_t>(shifted >> 32);
}

inline void Copy(absl::Span<const uint32_t> values, uint64_t at, std::vector<uint32_t>* image) {
  if (!values.empty()) std::memcpy(image->data() + at, values.data(), values.size() * 4);
}

inline std::vector<uint32_t> Gaps(absl::Span<const uint32_t> docids) {
  std::vector<uint32_t> gaps(docids.size());
  uint32_t previous = 0;
  for (size_t i = 0; i < docids.size(); ++i) {
    gaps[i] = docids[i] - previous;  // modulo 2^32
    previous = docids[i];
  }
  return gaps;
}

inline absl::Status CheckLength(size_t n) {
  if (n == 0) return absl::InvalidArgumentError("a GPU posting list needs at least one posting");
  if (n > kMaxListPostings) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d postings: GPU lists hold at most %d", n, kMaxListPostings));
  }
  return absl::OkStatus();
}

}  // namespace tandem::gpu::layout_builder
