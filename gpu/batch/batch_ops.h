// File: batch_ops.h
//
// The launch sequence of one batch of queries (gpu/batch_format.h, kernels/batch_kernels.cuh) on
// plain types: a batch's AND, its OR and its per-query top-k, on the caller's stream with no host
// synchronization; the caller copies the results back once. Compiles as C++17 (nvcc) and C++20
// (g++).
//
//   TANDEM_RETURN_IF_ERROR(LaunchBatch(batch, buffers, norms, /*live=*/nullptr, num_docs,
//                                      SearchRange::kHash16, stream)); cudaMemcpyAsync(host,
//                                      buffers.results, ResultBytes(...), cudaMemcpyDeviceToHost,
//   stream);
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "gpu/batch/batch_format.h"
#include "gpu/layouts/search_form.h"

namespace tandem::gpu {

// One top-k reduction of a batch (batch_format.h) in device memory.
struct DeviceReduction {
  const ReduceSpan* spans = nullptr;              // (levels + 1) * num_queries
  const uint32_t* reduce_begin = nullptr;         // levels * (num_queries + 1)
  uint32_t levels = 0;                            // >= 1 when used; the last one is the answer
  uint32_t reduce_blocks[kMaxReduceLevels] = {};  // blocks of levels 1 to `levels` (host)
};

// A batch in device memory, and the sizes of its work (batch_format.h has its layout).
struct DeviceBatch {
  const BatchQuery* queries = nullptr;   // num_queries
  const uint32_t* and_begin = nullptr;   // num_queries + 1: AND blocks per query, as offsets
  const uint32_t* or_begin = nullptr;    // num_queries + 1: OR range blocks per query
  const uint32_t* cand_begin = nullptr;  // num_queries + 1: OR candidate blocks per query
  const BatchTerm* terms = nullptr;
  uint32_t num_queries = 0;
  uint32_t and_blocks = 0;        // and_begin[num_queries]
  uint32_t or_blocks = 0;         // or_begin[num_queries]
  uint32_t cand_blocks = 0;       // cand_begin[num_queries]
  DeviceReduction and_reduction;  // A: over the AND's groups (when and_blocks > 0)
  DeviceReduction or_reduction;   // B: over the OR's (when or_blocks > 0)
};

// Where a batch works and answers, in device memory.
struct BatchBuffers {
  // Levels of a reduction below the answer: level 0 and every even level in [0], odd ones in [1];
  // each as large as its largest level. Both reductions use them, one after the other.
  uint64_t* levels[2] = {nullptr, nullptr};
  OrPlan* plans = nullptr;  // num_queries, with an OR pass
  // The results, contiguous so they come back in one copy: and_count, out_count and executed
  // (num_queries words each; executed: 0 AND, 1 OR, ~0 neither), then, 8-byte aligned, the
  // answers' keys (the last level).
  void* results = nullptr;
};

// Bytes of BatchBuffers::results for a batch, and where its parts start.
inline uint64_t ResultKeysOffset(uint32_t num_queries) {
  return (uint64_t{3} * num_queries * sizeof(uint32_t) + 7) / 8 * 8;
}
inline uint64_t ResultBytes(uint32_t num_queries, uint64_t out_keys) {
  return ResultKeysOffset(num_queries) + out_keys * sizeof(uint64_t);
}

// Answers every query of `batch`: the AND and its reduction, then the OR's plan, its two passes and
// their reduction. `norms`: the document norms for the batch's BM25 parameters and average length
// (every query of a batch shares them); `live`: a bit per document, only those set may match (null:
// every document).
absl::Status LaunchBatch(const DeviceBatch& batch, const BatchBuffers& buffers, const float* norms,
                         const uint32_t* live, uint32_t num_docs, SearchRange range,
                         cudaStream_t stream);

}  // namespace tandem::gpu
