// Host side of the batch kernels: argument checks and the launch sequence of one batch.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/batch_ops.h"
#include "gpu/cuda_status.h"
#include "gpu/kernels/batch_kernels.cuh"

namespace tandem::gpu {
namespace {

// The OR and AND kernels' shared memory, above the default 48 KB for the OR: allowed once.
absl::Status AllowSharedMemory() {
  static const cudaError_t allowed = [] {
    cudaError_t e =
        cudaFuncSetAttribute(kernels::BatchOrKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(sizeof(kernels::OrShared)));
    if (e != cudaSuccess) return e;
    return cudaFuncSetAttribute(kernels::BatchAndKernel,
                                cudaFuncAttributeMaxDynamicSharedMemorySize,
                                static_cast<int>(sizeof(kernels::AndShared)));
  }();
  if (allowed != cudaSuccess) {
    return absl::InternalError(
        absl::StrCat("the batch kernels' shared memory: ", cudaGetErrorString(allowed)));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchBatch(const DeviceBatch& batch, const BatchBuffers& buffers, const float* norms,
                         uint32_t num_docs, SearchRange range, cudaStream_t stream) {
  if (stream == nullptr) return absl::InvalidArgumentError("a batch needs a stream");
  if (batch.num_queries == 0) return absl::OkStatus();
  if (batch.queries == nullptr || batch.and_begin == nullptr || batch.or_begin == nullptr ||
      batch.terms == nullptr || batch.spans == nullptr || batch.reduce_begin == nullptr ||
      buffers.results == nullptr || norms == nullptr) {
    return absl::InvalidArgumentError("a batch's arrays must all be on the device");
  }
  if (batch.levels < 1 || batch.levels > kMaxReduceLevels) {
    return absl::InvalidArgumentError(absl::StrCat("a batch's reduction has ", batch.levels,
                                                   " levels, not 1 to ", kMaxReduceLevels));
  }
  if ((batch.and_blocks > 0 || batch.or_blocks > 0) && buffers.levels[0] == nullptr) {
    return absl::InvalidArgumentError("the batch's level-0 keys are missing");
  }
  if (batch.levels >= 2 && buffers.levels[1] == nullptr) {
    return absl::InvalidArgumentError("the batch's reduction buffer is missing");
  }
  if (static_cast<uint32_t>(range) >= kNumSearchRanges) {
    return absl::InvalidArgumentError(
        absl::StrCat("unknown search range ", static_cast<int>(range)));
  }
  TANDEM_RETURN_IF_ERROR(AllowSharedMemory());
  const uint32_t q = batch.num_queries;
  uint32_t* and_count = static_cast<uint32_t*>(buffers.results);
  uint32_t* out_count = and_count + q;
  uint32_t* executed = out_count + q;
  uint64_t* out =
      reinterpret_cast<uint64_t*>(static_cast<char*>(buffers.results) + ResultKeysOffset(q));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(and_count, 0, sizeof(uint32_t) * q, stream));
  if (batch.and_blocks > 0) {
    kernels::BatchAndKernel<<<batch.and_blocks, kernels::kBatchThreads, sizeof(kernels::AndShared),
                              stream>>>(batch.queries, batch.and_begin, q, batch.terms, norms,
                                        range, batch.spans, buffers.levels[0], and_count);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  if (batch.or_blocks > 0) {
    kernels::BatchOrKernel<<<batch.or_blocks, kernels::kBatchThreads, sizeof(kernels::OrShared),
                             stream>>>(batch.queries, batch.or_begin, q, batch.terms, norms,
                                       num_docs, and_count, batch.spans, buffers.levels[0]);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  for (uint32_t l = 1; l <= batch.levels; ++l) {
    const bool last = l == batch.levels;
    const uint64_t* below = buffers.levels[(l - 1) % 2];
    uint64_t* level = last ? out : buffers.levels[l % 2];
    kernels::BatchReduceKernel<<<batch.reduce_blocks[l - 1], kernels::kBatchThreads, 0, stream>>>(
        batch.queries, batch.reduce_begin + uint64_t{l - 1} * (q + 1), q,
        batch.spans + uint64_t{l - 1} * q, below, batch.spans + uint64_t{l} * q, level, and_count,
        /*first=*/l == 1, last, out_count, executed);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  return absl::OkStatus();
}

}  // namespace tandem::gpu
