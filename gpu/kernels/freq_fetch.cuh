// File: kernels/freq_fetch.cuh
//
// Individual frequency fetches (Ding et al. 2009, section 8): "to fetch a frequency value in a
// particular slot of a block, we first need to check if the entry is an exception; if not, we
// directly retrieve it from its slot, and otherwise we locate and add the overflow bits from the
// separate array". One thread per requested posting: two word loads for the slot, two for the
// block's exception range, and when the block has exceptions a binary search over their in-block
// positions (one byte each, about a dozen per block of 128).
#pragma once

#include <cstdint>

#include "gpu/kernels/bits.cuh"
#include "gpu/list_format.h"

namespace tandem::gpu::kernels {

inline constexpr uint32_t kFetchThreads = 256;

__global__ void __launch_bounds__(kFetchThreads)
    FreqFetchKernel(const FreqDesc d, const uint32_t* __restrict__ image,
                    const uint32_t* __restrict__ positions, uint32_t count,
                    uint32_t* __restrict__ out) {
  const uint32_t t = blockIdx.x * kFetchThreads + threadIdx.x;
  if (t >= count) return;
  const uint32_t i = __ldg(positions + t);
  if (i >= d.num_postings) {
    out[t] = 0;  // never a frequency: the caller's position was out of range
    return;
  }
  uint32_t value = LoadPacked(image + d.slots, i, d.bit_width);
  const uint32_t block = i / kFreqBlock;
  uint32_t lo = __ldg(image + d.exc_begin + block);
  const uint32_t hi = __ldg(image + d.exc_begin + block + 1);
  if (lo < hi) {
    // The first exception at or after in-block position `target`.
    const uint8_t* in_block = reinterpret_cast<const uint8_t*>(image + d.exc_pos);
    const uint32_t target = i % kFreqBlock;
    uint32_t len = hi - lo;
    while (len > 0) {
      const uint32_t half = len / 2;
      if (__ldg(in_block + lo + half) < target) {
        lo += half + 1;
        len -= half + 1;
      } else {
        len = half;
      }
    }
    if (lo < hi && __ldg(in_block + lo) == target) {
      value |= ShiftLeft(LoadPacked(image + d.exc_highs, lo, d.high_bits) + 1, d.bit_width);
    }
  }
  out[t] = value + 1;  // stored as tf - 1
}

}  // namespace tandem::gpu::kernels
