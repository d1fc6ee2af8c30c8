// Host side of the batch kernels: argument checks and the launch sequence of one batch.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "gpu/batch_ops.h"
#include "gpu/cuda_status.h"
#include "gpu/kernels/batch_kernels.cuh"

namespace tandem::gpu {
namespace {

dim3 ThreadGrid(uint64_t threads) {
  const uint64_t ctas = (threads + kernels::kBatchThreads - 1) / kernels::kBatchThreads;
  return dim3(static_cast<unsigned>(std::clamp<uint64_t>(ctas, 1, 65535)));
}

}  // namespace

absl::Status LaunchBatch(const DeviceBatch& batch, const BatchBuffers& buffers, const float* norms,
                         uint32_t num_docs, SearchRange range, cudaStream_t stream) {
  if (stream == nullptr) return absl::InvalidArgumentError("a batch needs a stream");
  if (batch.num_queries == 0) return absl::OkStatus();
  if (batch.queries == nullptr || batch.and_begin == nullptr || batch.or_begin == nullptr ||
      batch.terms == nullptr || buffers.results == nullptr || norms == nullptr) {
    return absl::InvalidArgumentError("a batch's arrays must all be on the device");
  }
  if ((batch.and_threads > 0 && buffers.and_keys == nullptr) ||
      (batch.or_candidates > 0 && buffers.candidates == nullptr)) {
    return absl::InvalidArgumentError("the batch's work buffers are missing");
  }
  if (static_cast<uint32_t>(range) >= kNumSearchRanges) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown search range ", static_cast<int>(range)));
  }
  const uint32_t q = batch.num_queries;
  uint32_t* and_count = static_cast<uint32_t*>(buffers.results);
  uint32_t* out_count = and_count + q;
  uint32_t* executed = out_count + q;
  uint64_t* out =
      reinterpret_cast<uint64_t*>(static_cast<char*>(buffers.results) + ResultKeysOffset(q));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(and_count, 0, sizeof(uint32_t) * q, stream));
  if (batch.and_threads > 0) {
    kernels::BatchAndKernel<<<ThreadGrid(batch.and_threads), kernels::kBatchThreads, 0, stream>>>(
        batch.queries, batch.and_begin, q, batch.terms, norms, range, buffers.and_keys, and_count);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  if (batch.or_blocks > 0) {
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemsetAsync(buffers.candidates, 0xff, sizeof(uint64_t) * batch.or_candidates, stream));
    kernels::BatchOrKernel<<<batch.or_blocks, kernels::kBatchThreads, sizeof(kernels::OrShared),
                             stream>>>(batch.queries, batch.or_begin, q, batch.terms, norms,
                                       num_docs, and_count, buffers.candidates);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  kernels::BatchTopKKernel<<<q, kernels::kBatchThreads, 0, stream>>>(
      batch.queries, batch.and_begin, buffers.and_keys, and_count, buffers.candidates, out,
      out_count, executed);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace tandem::gpu
