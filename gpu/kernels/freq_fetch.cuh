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

#include "gpu/kernels/freq_value.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

inline constexpr uint32_t kFetchThreads = 256;

__global__ void __launch_bounds__(kFetchThreads)
    FreqFetchKernel(const FreqDesc d, const uint32_t* __restrict__ image,
                    const uint32_t* __restrict__ positions, uint32_t count,
                    uint32_t* __restrict__ out) {
  const uint32_t t = blockIdx.x * kFetchThreads + threadIdx.x;
  if (t >= count) return;
  const uint32_t i = __ldg(positions + t);
  // A position out of range is never a frequency: 0.
  out[t] = i < d.num_postings ? FetchFreq(d, image, i) : 0;
}

}  // namespace tandem::gpu::kernels
