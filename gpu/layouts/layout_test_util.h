// File: layout_test_util.h
//
// The random lists that both the host tests of the GPU layouts (list_layout_test.cc, against the
// builders' own reference decoders) and the device decoder tests (decode_test.cc) sweep: every bit
// width, exception pattern or Rice quotient mean, and length around the block sizes.
//
//   std::mt19937_64 rng(1);
//   ForEveryPForList(rng, [](uint32_t block_size, uint32_t b, const auto& gaps, const auto& docids)
//   {
//     ...
//   });
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "gpu/layouts/list_layout.h"
#include "gpu/layouts/random_lists.h"
#include "gtest/gtest.h"

namespace tandem::gpu::testing {

// PForOptions without designated initializers (GCC warns about the omitted member).
inline PForOptions PFor(uint32_t block_size, std::optional<uint32_t> bit_width = std::nullopt) {
  PForOptions options;
  options.block_size = block_size;
  options.bit_width = bit_width;
  return options;
}

// List lengths around the block sizes (128, 512) and a longer one.
inline const std::vector<size_t> kLengths = {1, 2, 127, 128, 129, 511, 512, 513, 1000, 4097};
// Exception patterns: none, some, all (as a share of the values that do not fit in b bits).
inline const std::vector<double> kExceptionShares = {0.0, 0.1, 1.0};

// Calls test(b, p, n) for every bit width b in 0..32, p of `params` (named `param_name` in the
// trace) and length n of `lengths`, each under a trace naming them. Stops at the first fatal
// failure.
template <typename Test>
void ForEveryWidth(const char* param_name, const std::vector<double>& params,
                   const std::vector<size_t>& lengths, Test test) {
  for (uint32_t b = 0; b <= 32; ++b) {
    for (double p : params) {
      for (size_t n : lengths) {
        SCOPED_TRACE(::testing::Message()
                     << "b=" << b << " " << param_name << "=" << p << " n=" << n);
        test(b, p, n);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

// Calls test(block_size, b, gaps, docids) on a random list for every PForDelta block size (128,
// 512), bit width, exception share and length.
template <typename Test>
void ForEveryPForList(std::mt19937_64& rng, Test test) {
  for (uint32_t block_size : {128u, 512u}) {
    SCOPED_TRACE(::testing::Message() << "B=" << block_size);
    ForEveryWidth("share", kExceptionShares, kLengths, [&](uint32_t b, double share, size_t n) {
      const std::vector<uint32_t> gaps = ValuesWithExceptions(n, b, share, rng);
      test(block_size, b, gaps, DocidsFromGaps(gaps));
    });
    if (::testing::Test::HasFatalFailure()) return;
  }
}

// Calls test(b, gaps, docids) on a random Rice list for every parameter b, mean quotient of
// `mean_qs` and length.
template <typename Test>
void ForEveryRiceList(std::mt19937_64& rng, const std::vector<double>& mean_qs, Test test) {
  ForEveryWidth("mean q", mean_qs, kLengths, [&](uint32_t b, double mean_q, size_t n) {
    const std::vector<uint32_t> gaps = RiceGaps(n, b, mean_q, rng);
    test(b, gaps, DocidsFromGaps(gaps));
  });
}

// Calls test(b, freqs) on random frequencies (>= 1) for every bit width, exception share and
// length of `lengths`.
template <typename Test>
void ForEveryFreqList(std::mt19937_64& rng, const std::vector<size_t>& lengths, Test test) {
  ForEveryWidth("share", kExceptionShares, lengths, [&](uint32_t b, double share, size_t n) {
    std::vector<uint32_t> freqs = ValuesWithExceptions(n, b, share, rng);
    for (uint32_t& f : freqs) f = std::min(f, 0xfffffffeu) + 1;
    test(b, freqs);
  });
}

}  // namespace tandem::gpu::testing
