// File: kernels/lrc_access.cuh
//
// Random access into an LRC list (Ao et al. 2011, sections 4.2 and 4.3): posting j of a segment is
// intercept + LrcLine(slope, j) + lambda_j, one segment record, one packed load and one multiply,
// so any posting decodes alone: the search inside a compressed list (kernels/search_range.cuh) and
// the whole-list decoders (kernels/lrc_decode.cuh) read through these. Device functions only.
#pragma once

#include <cstdint>

#include "gpu/kernels/bits.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

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

}  // namespace tandem::gpu::kernels
