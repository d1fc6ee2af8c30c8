// File: kernels/lrc_decode.cuh
//
// LRC decoding (Ao et al. 2011, sections 4.2 and 4.3): posting j of a segment is
// intercept + LrcLine(slope, j) + lambda_j, one packed load and one multiply, with no prefix sum,
// so any posting decodes alone (LrcDocidAt: the random access that section 4.3's search inside a
// compressed list makes) and a whole list decodes with one thread per posting.
#pragma once

#include <cstdint>

#include "gpu/kernels/bits.cuh"
#include "gpu/list_format.h"

namespace tandem::gpu::kernels {

inline constexpr uint32_t kLrcThreads = 256;

struct LrcSegmentView {
  uint32_t first, intercept, offset, width;
  float slope;
};

__device__ __forceinline__ LrcSegmentView LoadLrcSegment(const LrcDesc& d,
                                                         const uint32_t* __restrict__ image,
                                                         uint32_t s) {
  const uint4 r = __ldg(reinterpret_cast<const uint4*>(image + d.segments) + s);
  LrcSegmentView v;
  v.first = r.x;
  v.intercept = r.y;
  v.slope = __uint_as_float(r.z);
  v.offset = r.w;
  v.width = (__ldg(image + d.widths + s / 4) >> (8 * (s % 4))) & 0xff;
  return v;
}

__device__ __forceinline__ uint32_t LrcValue(const LrcDesc& d, const uint32_t* __restrict__ image,
                                             const LrcSegmentView& seg, uint32_t j) {
  return seg.intercept + LrcLine(seg.slope, j) +
         LoadPacked(image + d.deviations + seg.offset, j, seg.width);  // modulo 2^32
}

// The segment holding posting i: i / segment_length, or for hash segments the last segment that
// starts at or before i (a binary search over the records).
__device__ __forceinline__ uint32_t LrcSegmentOf(const LrcDesc& d,
                                                 const uint32_t* __restrict__ image, uint32_t i) {
  if (d.segment_length != 0) return i / d.segment_length;
  uint32_t lo = 0, hi = d.num_segments;
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (__ldg(image + d.segments + uint64_t{mid} * kLrcRecordWords) <= i) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

// The docID at position i (< num_postings) of the list.
__device__ __forceinline__ uint32_t LrcDocidAt(const LrcDesc& d, const uint32_t* __restrict__ image,
                                               uint32_t i) {
  const LrcSegmentView seg = LoadLrcSegment(d, image, LrcSegmentOf(d, image, i));
  return LrcValue(d, image, seg, i - seg.first);
}

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
