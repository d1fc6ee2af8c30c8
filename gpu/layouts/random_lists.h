// File: random_lists.h
//
// Random docID-gap and frequency lists for the GPU layout and decoder tests and the decompression
// benchmark: exact control over bit widths and exceptions, and realistic (geometric) gaps.
//
//   std::mt19937_64 rng(7);
//   std::vector<uint32_t> docids = DocidsFromGaps(GeometricGaps(1 << 20, 8.0, rng));
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace tandem::gpu::testing {

// n values of which a `exception_fraction` share (exactly rounded) do not fit in b bits and the
// rest do: the others uniform in [0, 2^b), the exceptions of a uniformly random bit length in (b,
// 32], at random positions. With b = 32 no value can be an exception.
std::vector<uint32_t> ValuesWithExceptions(size_t n, uint32_t b, double exception_fraction,
                                           std::mt19937_64& rng);

// Gaps q * 2^b + r for Rice with parameter b: q geometric with mean `mean_q` (kept to what fits in
// 32 bits), r uniform in [0, 2^b).
std::vector<uint32_t> RiceGaps(size_t n, uint32_t b, double mean_q, std::mt19937_64& rng);

// Gaps >= 1, geometric with the given mean (>= 1): the d-gaps of a term spread uniformly at random
// over the collection.
std::vector<uint32_t> GeometricGaps(size_t n, double mean, std::mt19937_64& rng);

// Term frequencies >= 1: mostly 1-3, with a heavy (Zipf-like) tail up to `max_freq`.
std::vector<uint32_t> ZipfFrequencies(size_t n, uint32_t max_freq, std::mt19937_64& rng);

// The docIDs whose gaps these are: prefix sums modulo 2^32 (docids[0] = gaps[0]).
std::vector<uint32_t> DocidsFromGaps(const std::vector<uint32_t>& gaps);

}  // namespace tandem::gpu::testing
