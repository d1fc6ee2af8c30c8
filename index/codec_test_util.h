// File: codec_test_util.h
//
// What the block codecs' tests share (block_codec_test.cc, parapfor_codec_test.cc,
// seglrc_codec_test.cc): buffers that end exactly where the encoded bytes do, random blocks of the
// value distributions an index produces, and a bit writer for reference encoders.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::index {

inline constexpr uint32_t kMax32 = 0xFFFFFFFF;

// A heap copy of exactly the given bytes. A std::string has spare capacity and a terminating NUL
// that would hide an over-read from AddressSanitizer; this buffer ends exactly at end().
class ExactBuffer {
 public:
  explicit ExactBuffer(std::string_view bytes)
      : size_(bytes.size()), data_(new uint8_t[bytes.size()]) {
    if (size_ > 0) std::memcpy(data_.get(), bytes.data(), size_);
  }
  const uint8_t* begin() const { return data_.get(); }
  const uint8_t* end() const { return data_.get() + size_; }

 private:
  size_t size_;
  std::unique_ptr<uint8_t[]> data_;
};

enum class Distribution {
  kUniformSmall,      // uniform below a random power of two up to 2^12
  kGeometricGaps,     // docID gaps of a term with a random document frequency
  kZipfFrequencies,   // term frequencies minus one: mostly 0, a power-law tail
  kRareHugeOutliers,  // small values with a few values of 24 to 32 bits
  kFull32Bit,         // uniform over all 32-bit values
  kNear32BitMax,      // within 1000 of 2^32 - 1
};
inline constexpr Distribution kAllDistributions[] = {
    Distribution::kUniformSmall,     Distribution::kGeometricGaps, Distribution::kZipfFrequencies,
    Distribution::kRareHugeOutliers, Distribution::kFull32Bit,     Distribution::kNear32BitMax};

inline uint32_t Clamp32(double v) { return v >= kMax32 ? kMax32 : static_cast<uint32_t>(v); }

inline std::vector<uint32_t> RandomValues(Distribution d, size_t n, std::mt19937_64& rng) {
  std::vector<uint32_t> v(n);
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  switch (d) {
    case Distribution::kUniformSmall: {
      const uint32_t bits = std::uniform_int_distribution<uint32_t>(0, 12)(rng);
      for (auto& x : v) x = static_cast<uint32_t>(rng()) & ((1u << bits) - 1);
      break;
    }
    case Distribution::kGeometricGaps: {
      // Mean gap between 1.5 and 2^20, log-uniform: from stop words to rare terms.
      const double mean = std::exp2(std::log2(1.5) + unit(rng) * (20 - std::log2(1.5)));
      std::geometric_distribution<uint64_t> gap(1.0 / mean);
      for (auto& x : v) x = Clamp32(static_cast<double>(gap(rng)));
      break;
    }
    case Distribution::kZipfFrequencies:
      // P(tf >= k) = k^-1.5.
      for (auto& x : v) x = Clamp32(std::floor(std::pow(1.0 - unit(rng), -1 / 1.5))) - 1;
      break;
    case Distribution::kRareHugeOutliers: {
      const uint32_t bits = std::uniform_int_distribution<uint32_t>(0, 8)(rng);
      std::uniform_int_distribution<uint32_t> huge(1u << 24, kMax32);
      for (auto& x : v) {
        x = unit(rng) < 0.03 ? huge(rng) : static_cast<uint32_t>(rng()) & ((1u << bits) - 1);
      }
      v[rng() % n] = huge(rng);
      break;
    }
    case Distribution::kFull32Bit:
      for (auto& x : v) x = static_cast<uint32_t>(rng());
      break;
    case Distribution::kNear32BitMax:
      for (auto& x : v) x = kMax32 - static_cast<uint32_t>(rng() % 1000);
      break;
  }
  return v;
}

// The documented layouts written one bit at a time: slow, plainly correct encoders that the fast
// ones must match byte for byte, so the formats that index/FORMAT.md describes (and a GPU decoder
// relies on) are pinned down, not just round trips.
class ReferenceBits {
 public:
  // Appends the low `bits` bits of value, lowest first.
  void Put(uint64_t value, uint32_t bits) {
    for (uint32_t k = 0; k < bits; ++k) PutBit((value >> k) & 1);
  }
  void PutBit(bool bit) {
    if (size_ % 8 == 0) bytes_.push_back('\0');
    if (bit) bytes_.back() = static_cast<char>(bytes_.back() | (1 << (size_ % 8)));
    ++size_;
  }
  // The bits so far, zero-padded to a whole byte.
  const std::string& bytes() const { return bytes_; }

 private:
  std::string bytes_;
  uint64_t size_ = 0;
};

inline uint32_t LowBits(uint32_t v, uint32_t b) { return b == 32 ? v : v & ((1u << b) - 1); }

inline std::string ReferencePacked(const std::vector<uint32_t>& values, uint32_t b) {
  ReferenceBits bits;
  for (uint32_t v : values) bits.Put(LowBits(v, b), b);
  return bits.bytes();
}

// The exceptions of `values` at slot width b, found the plain way, for the reference encoders of
// PForDelta and ParaPFor: the index of each value of more than b bits, its bits above b, and the
// width of the widest of those.
struct ReferenceExceptions {
  std::vector<uint32_t> indices;
  std::vector<uint32_t> highs;
  uint32_t high_bits = 0;
};

inline ReferenceExceptions FindExceptions(const std::vector<uint32_t>& values, uint32_t b) {
  ReferenceExceptions found;
  for (size_t i = 0; i < values.size(); ++i) {
    const uint64_t high = uint64_t{values[i]} >> b;
    if (high == 0) continue;
    found.indices.push_back(static_cast<uint32_t>(i));
    found.highs.push_back(static_cast<uint32_t>(high));
    found.high_bits = std::max<uint32_t>(found.high_bits, std::bit_width(high));
  }
  return found;
}

}  // namespace tandem::index
