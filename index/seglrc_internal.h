// File: seglrc_internal.h
//
// SegLRC's regression line for one block, exposed for tests and benchmarks (the public interface is
// BlockCodec, registered as "seglrc"). See seglrc_codec.cc for the byte layout.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::index::internal {

// Fraction bits of the fixed-point slope: the line's prefix sum at index j is
// base + floor(slope * j / 2^kSegLrcSlopeFractionBits).
inline constexpr uint32_t kSegLrcSlopeFractionBits = 16;

// The largest slope a block can have: the least-squares slope of prefix sums is a weighted mean of
// the gaps, so it is at most 2^32 - 1.
inline constexpr uint64_t kSegLrcMaxSlope = uint64_t{0xFFFFFFFF} << kSegLrcSlopeFractionBits;

struct SegLrcLine {
  // True when the deviations from the line span 2^32 or more: the block then stores the values
  // themselves (raw mode) and slope and base are 0.
  bool raw = false;
  uint64_t slope = 0;  // fixed point, 0..kSegLrcMaxSlope
  int64_t base = 0;    // prefix sum s_j = base + floor(slope * j / 2^16) + deviation_j
  uint32_t width = 0;  // bits per packed value: of the largest deviation, or value when raw
};

// The least-squares line through the prefix sums of values[0..n), 1 <= n <= kBlockSize, with the
// base and width that Encode writes for it.
SegLrcLine FitSegLrcLine(const uint32_t* values, size_t n);

}  // namespace tandem::index::internal
