// File: bitmap_chunks.cuh
//
// Random access to one chunk of a WAH or PLWAH bitmap in device memory (index/bitmap.h's words:
// 31 rows per chunk; a literal has bit 31 set, a fill holds its bit in bit 30 and a chunk count in
// bits 0-29, or in PLWAH bits 0-24 with the position + 1 of one flipped bit of the chunk after it
// in bits 25-29), given each word's first chunk. Used by ExpandBitmap (query_kernels.cuh) and by
// the filter evaluator (gpu/filter_eval.cu).
#pragma once

#include <cstdint>

namespace tandem::gpu::kernels {

// The 31 row bits of chunk c, given each word's first chunk (starts, ascending).
__device__ __forceinline__ uint32_t ChunkPayload(const uint32_t* __restrict__ words,
                                                 const uint32_t* __restrict__ starts, uint32_t n,
                                                 bool plwah, uint64_t c) {
  // The last word starting at or before c.
  uint32_t lo = 0, hi = n;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (starts[mid] <= c) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return 0;
  const uint32_t i = lo - 1;
  const uint32_t w = words[i];
  if (w & 0x80000000u) return c == starts[i] ? (w & 0x7FFFFFFFu) : 0u;  // past it: trailing zeros
  const uint32_t fill = (w & 0x40000000u) ? 0x7FFFFFFFu : 0u;
  const uint32_t count = plwah ? (w & 0x01FFFFFFu) : (w & 0x3FFFFFFFu);
  const uint64_t end = uint64_t{starts[i]} + count;
  if (c < end) return fill;
  const uint32_t position = plwah ? (w >> 25) & 0x1Fu : 0u;
  if (position != 0 && c == end) return fill ^ (1u << (position - 1));
  return 0;  // past the last word: trailing zeros
}

}  // namespace tandem::gpu::kernels
