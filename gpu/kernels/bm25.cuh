// File: kernels/bm25.cuh
//
// BM25 and the top-k key as device functions, for every kernel that scores: the per-query
// pipeline's (query_kernels.cuh) and the batch path's (batch_kernels.cuh). The arithmetic uses the
// explicitly rounded intrinsics (__fmul_rn, __fdiv_rn, ...) so nvcc never contracts it into FMAs:
// every value is the IEEE float result of the same operations, in the same order, as index/bm25.h
// computes on the host, which makes the GPU's scores bit-equal to the CPU engine's. No kernels
// here, so any .cu may include it.
#pragma once

#include <cstdint>

namespace tandem::gpu::kernels {

// index::Bm25DocNorm: k1 * ((1 - b) + (b * len) / avgdl).
__device__ __forceinline__ float DocNorm(uint32_t len, float k1, float b, float avgdl) {
  return __fmul_rn(
      k1, __fadd_rn(__fsub_rn(1.0f, b), __fdiv_rn(__fmul_rn(b, __uint2float_rn(len)), avgdl)));
}

// index::Bm25Score: weighted_idf * (tf / (tf + norm)).
__device__ __forceinline__ float Bm25(float weighted_idf, uint32_t tf, float norm) {
  const float f = __uint2float_rn(tf);
  return __fmul_rn(weighted_idf, __fdiv_rn(f, __fadd_rn(f, norm)));
}

// The top-k sort key: ascending order = descending score, then ascending docID. Scores are > 0
// for every scored document (idf > 0, weights > 0), so the float's bits order like its value;
// unscored entries (score <= 0) get the all-ones key, which sorts last and is dropped.
__device__ __forceinline__ uint64_t TopKKey(float score, uint32_t docid) {
  if (!(score > 0.0f)) return ~uint64_t{0};
  return (static_cast<uint64_t>(~__float_as_uint(score)) << 32) | docid;
}

}  // namespace tandem::gpu::kernels
