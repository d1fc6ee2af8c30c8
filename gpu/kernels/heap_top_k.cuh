// File: heap_top_k.cuh
//
// The multi-level max-heap top-k of Ding et al. 2009, section 8: "divide the candidates into groups
// of some size, say 512 per group, and compute the maximum score in each group. We then take the
// maximum scores of the groups, and divide them into groups of size 512, ... We then repeatedly
// extract the maximum and update those branches of the tree where the maximum came from."
//
// It works on the 64-bit top-k keys of query_kernels.cuh (ascending key = rank order, all-ones =
// no score), so the "maximum" is the smallest key and ties between equal scores are already broken
// by docID: every key is unique except the all-ones filler, which is never extracted.
#pragma once

#include <cstdint>
#include <cub/block/block_reduce.cuh>

namespace tandem::gpu::kernels {

inline constexpr uint32_t kHeapGroup = 512;  // the paper's group size; also the CTA size
inline constexpr int kHeapMaxLevels = 4;     // 512^4 entries: beyond any posting count

struct HeapLevels {
  uint64_t* level[kHeapMaxLevels + 1] = {};  // level[0]: the keys; level[l]: group minima
  uint32_t size[kHeapMaxLevels + 1] = {};
  int top = 0;  // level[top] has at most kHeapGroup entries
};

struct MinOp {
  __device__ __forceinline__ uint64_t operator()(uint64_t a, uint64_t b) const {
    return a < b ? a : b;
  }
};

// level[l + 1][g] = min of level[l]'s group g; one CTA per group. With `count`, also counts the
// entries that carry a score (level 0 only).
__global__ void __launch_bounds__(kHeapGroup)
    HeapBuildLevelKernel(const uint64_t* __restrict__ in, uint32_t n, uint64_t* __restrict__ out,
                         uint32_t* __restrict__ count) {
  using Reduce = cub::BlockReduce<uint64_t, kHeapGroup>;
  using CountReduce = cub::BlockReduce<uint32_t, kHeapGroup>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ typename CountReduce::TempStorage count_temp;
  const uint64_t i = uint64_t{blockIdx.x} * kHeapGroup + threadIdx.x;
  const uint64_t key = i < n ? in[i] : ~uint64_t{0};
  const uint64_t m = Reduce(temp).Reduce(key, MinOp());
  if (threadIdx.x == 0) out[blockIdx.x] = m;
  if (count != nullptr) {
    const uint32_t c = CountReduce(count_temp).Sum(key != ~uint64_t{0} ? 1u : 0u);
    if (threadIdx.x == 0 && c != 0) atomicAdd(count, c);
  }
}

// One CTA extracts the k smallest keys in order into out[0..*extracted). Each round reduces the
// top level, descends to the leaf the minimum came from (keys are unique, so equality finds it),
// retires it and recomputes the minima on its path only.
__global__ void __launch_bounds__(kHeapGroup)
    HeapExtractKernel(HeapLevels h, uint32_t k, uint64_t* __restrict__ out,
                      uint32_t* __restrict__ extracted) {
  using Reduce = cub::BlockReduce<uint64_t, kHeapGroup>;
  __shared__ typename Reduce::TempStorage temp;
  __shared__ uint64_t best;
  __shared__ uint32_t found;
  __shared__ uint32_t path[kHeapMaxLevels + 1];  // position of the minimum at each level
  constexpr uint64_t kNone = ~uint64_t{0};
  const uint32_t t = threadIdx.x;
  uint32_t taken = 0;
  for (; taken < k; ++taken) {
    const uint64_t top_key = t < h.size[h.top] ? h.level[h.top][t] : kNone;
    const uint64_t m = Reduce(temp).Reduce(top_key, MinOp());
    if (t == 0) best = m;
    __syncthreads();
    if (best == kNone) break;  // fewer than k scored entries
    // Descend: at each level, find the minimum inside the group its parent names.
    uint32_t group = 0;
    for (int l = h.top; l >= 0; --l) {
      const uint64_t p = uint64_t{group} * kHeapGroup + t;
      if (p < h.size[l] && h.level[l][p] == best) found = static_cast<uint32_t>(p);
      __syncthreads();
      if (t == 0) path[l] = found;
      group = found;
      __syncthreads();
    }
    if (t == 0) {
      out[taken] = best;
      h.level[0][path[0]] = kNone;
    }
    __syncthreads();
    // Update the branch: level l's entry path[l] = min of level l-1's group path[l].
    for (int l = 1; l <= h.top; ++l) {
      const uint64_t p = uint64_t{path[l]} * kHeapGroup + t;
      const uint64_t key = p < h.size[l - 1] ? h.level[l - 1][p] : kNone;
      const uint64_t g = Reduce(temp).Reduce(key, MinOp());
      if (t == 0) h.level[l][path[l]] = g;
      __syncthreads();
    }
  }
  if (t == 0) *extracted = taken;
}

}  // namespace tandem::gpu::kernels
