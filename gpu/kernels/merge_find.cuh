// File: merge_find.cuh
//
// The recursive Parallel Merge Find of Ding et al. 2009, section 7 (Figure 5): for every element of
// a sorted list A, the position in a sorted list B of the first element >= it. Instead of one
// binary search over all of B per element (the "direct" algorithm of Figure 6), splitters of A
// (every F^L-th element, then every F^(L-1)-th, ..., then every element) find their positions
// level by level, and each level searches only the section of B that its two enclosing splitters
// of the level above delimit. Neighbouring threads then search the same short, cached section of
// B, which is what makes the recursive variants faster for long lists.
#pragma once

#include <cstdint>

namespace tandem::gpu::kernels {

// The fan-out between levels: a level's splitters are kMergeFindFanout times denser than its
// parent's (a warp's worth of elements between two parent splitters at the last level).
inline constexpr uint32_t kMergeFindFanout = 32;

// First j in [lo, hi) with b[j] >= x, else hi.
__device__ __forceinline__ uint32_t LowerBound(const uint32_t* __restrict__ b, uint32_t lo,
                                               uint32_t hi, uint32_t x) {
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (b[mid] >= x) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// One level: splitter j is a[j * stride]; its lower bound in b goes to out[j]. With a parent level
// (parent != nullptr, parent_stride a multiple of stride), the search is confined to
// [parent[p], parent[p + 1]] for the enclosing parent splitter p: a[p * ps] <= x <= a[(p + 1) * ps]
// bounds x's lower bound by theirs. found (last level only, may be null) gets b[out[j]] == x.
__global__ void MergeFindLevelKernel(const uint32_t* __restrict__ a, uint32_t a_len,
                                     uint32_t stride, const uint32_t* __restrict__ b,
                                     uint32_t b_len, const uint32_t* __restrict__ parent,
                                     uint32_t parent_stride, uint32_t parent_count,
                                     uint32_t* __restrict__ out, uint32_t* __restrict__ found) {
  const uint32_t count = (a_len + stride - 1) / stride;
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < count; j += gridDim.x * blockDim.x) {
    const uint32_t idx = j * stride;
    const uint32_t x = a[idx];
    uint32_t lo = 0, hi = b_len;
    if (parent != nullptr) {
      const uint32_t p = idx / parent_stride;
      lo = parent[p];
      hi = p + 1 < parent_count ? parent[p + 1] : b_len;
    }
    const uint32_t lb = LowerBound(b, lo, hi, x);
    out[j] = lb;
    if (found != nullptr) found[j] = (lb < b_len && b[lb] == x) ? 1u : 0u;
  }
}

// The AND's merge-find runs over the selected blocks of a list decoded side by side (slot s at
// decoded[s * block_size]). Entries no posting fills (slots of unselected entries, the tail of a
// list's last, partial block) get UINT32_MAX, so the concatenation is sorted and never matches.
__global__ void PadDecodedKernel(uint32_t* __restrict__ decoded,
                                 const uint32_t* __restrict__ selected, uint32_t slots,
                                 uint32_t block_size, uint32_t num_blocks, uint32_t num_postings) {
  const uint64_t total = uint64_t{slots} * block_size;
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < total;
       i += uint64_t{gridDim.x} * blockDim.x) {
    const uint32_t block = selected[i / block_size];
    const uint64_t posting = uint64_t{block} * block_size + i % block_size;
    if (block >= num_blocks || posting >= num_postings) decoded[i] = ~0u;
  }
}

// Turns a found candidate's offset t in the concatenated selected blocks into its posting position
// in the list: block selected[t / block_size], entry t % block_size.
__global__ void SlotToPositionKernel(uint32_t* __restrict__ pos, const uint32_t* __restrict__ found,
                                     uint32_t n, const uint32_t* __restrict__ selected,
                                     uint32_t block_size) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (found[i] == 0) continue;
    const uint32_t t = pos[i];
    pos[i] = selected[t / block_size] * block_size + t % block_size;
  }
}

}  // namespace tandem::gpu::kernels
