// File: kernels/lrc_decode.cuh
//
// LRC decoding (Ao et al. 2011, section 4.2): with no prefix sum, a whole list decodes with one
// thread per posting (kernels/lrc_access.cuh reads each), and any set of postings alone.
#pragma once

#include <cstdint>

#include "gpu/kernels/lrc_access.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

inline constexpr uint32_t kLrcThreads = 256;

// Fixed segments (LRC, LRCSeg, SegLRC) of a list that fits in about one wave of threads: one
// thread per posting, so the whole list decodes in one round of loads. The threads of a warp mostly
// read the same segment record (one broadcast load); index arithmetic stays in 32 bits (lists hold
// < 2^31 postings).
inline constexpr uint32_t kLrcOneWavePostings = 1u << 18;  // ~ 132 SMs x 2,048 threads on an H100
__global__ void __launch_bounds__(kLrcThreads)
    LrcDecodePostingsKernel(const LrcDesc d, const uint32_t* __restrict__ image,
                            uint32_t* __restrict__ out) {
  const uint32_t stride = gridDim.x * blockDim.x;
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < d.num_postings; i += stride) {
    const LrcSegmentView seg = LoadLrcSegment(d, image, i / d.segment_length);
    out[i] = LrcValue(d, image, seg, i - seg.first);
  }
}

// Longer lists, and hash segments (HS-LRC), which a posting's index cannot name: one warp per
// segment, grid-stride, the lanes over its postings with four loads in flight each (one posting per
// thread leaves too few loads in flight to cover the record-then-deviation latency: on the 16
// longest lists of the 25M-document index, 210 against 450 G docIDs/s on an H100). Small CTAs
// (kLrcSegmentThreads), so that the few hundred segments of a short list spread over every SM.
inline constexpr uint32_t kLrcSegmentThreads = 64;
__global__ void __launch_bounds__(kLrcSegmentThreads)
    LrcDecodeSegmentsKernel(const LrcDesc d, const uint32_t* __restrict__ image,
                            uint32_t* __restrict__ out) {
  const uint32_t lane = threadIdx.x % 32;
  constexpr uint32_t kWarps = kLrcSegmentThreads / 32;
  const uint64_t warps = uint64_t{gridDim.x} * kWarps;
  for (uint64_t s = uint64_t{blockIdx.x} * kWarps + threadIdx.x / 32; s < d.num_segments;
       s += warps) {
    const LrcSegmentView seg = LoadLrcSegment(d, image, static_cast<uint32_t>(s));
    const uint32_t count = __ldg(image + d.segments + (s + 1) * kLrcRecordWords) - seg.first;
    uint32_t* dst = out + seg.first;
#pragma unroll 4
    for (uint32_t j = lane; j < count; j += 32) dst[j] = LrcValue(d, image, seg, j);
  }
}

// out[t] = the docID at positions[t], or 0 for a position past the list.
__global__ void __launch_bounds__(kLrcThreads)
    LrcFetchKernel(const LrcDesc d, const uint32_t* __restrict__ image,
                   const uint32_t* __restrict__ positions, uint32_t count,
                   uint32_t* __restrict__ out) {
  const uint32_t t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= count) return;
  const uint32_t i = __ldg(positions + t);
  out[t] = i < d.num_postings ? LrcDocidAt(d, image, i) : 0;
}

}  // namespace tandem::gpu::kernels
