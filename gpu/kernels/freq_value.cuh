// File: kernels/freq_value.cuh
//
// One frequency fetched from a compressed frequency image (Ding et al. 2009, section 8), as a
// device function: FreqFetchKernel (freq_fetch.cuh) calls it for positions it is given, and the
// AND's scoring (query_kernels.cuh) for each survivor's posting in each list. Kernels live in the
// .cu file that includes their header once; this header holds no kernel, so any .cu may include it.
#pragma once

#include <cstdint>

#include "gpu/kernels/bits.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

// The frequency (>= 1) of posting i < d.num_postings.
__device__ __forceinline__ uint32_t FetchFreq(const FreqDesc& d, const uint32_t* __restrict__ image,
                                              uint32_t i) {
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
  return value + 1;  // stored as tf - 1
}

}  // namespace tandem::gpu::kernels
