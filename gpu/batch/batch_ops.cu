// Host side of the batch kernels: argument checks and the launch sequence of one batch.
#include <algorithm>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/batch/batch_ops.h"
#include "gpu/device/cuda_status.h"
#include "gpu/kernels/batch_kernels.cuh"

namespace tandem::gpu {
namespace {

// The kernels' shared memory, above the default 48 KB for the OR. cudaFuncSetAttribute applies to
// the current device only, so it is set once on each device a batch runs on (a node with several
// GPUs runs batches on all of them).
absl::Status AllowSharedMemory() {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) {
    return absl::InternalError(absl::StrCat("cudaGetDevice: ", cudaGetErrorString(e)));
  }
  static std::mutex mu;
  static std::map<int, cudaError_t> allowed;  // by device
  std::lock_guard<std::mutex> lock(mu);
  auto it = allowed.find(device);
  if (it == allowed.end()) {
    e = cudaFuncSetAttribute(kernels::BatchOrKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(sizeof(kernels::OrShared)));
    if (e == cudaSuccess) {
      e = cudaFuncSetAttribute(kernels::BatchAndKernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(sizeof(kernels::AndShared)));
    }
    if (e == cudaSuccess) {
      e = cudaFuncSetAttribute(kernels::BatchCandidateKernel,
                               cudaFuncAttributeMaxDynamicSharedMemorySize,
                               static_cast<int>(sizeof(kernels::AndShared)));
    }
    it = allowed.emplace(device, e).first;
  }
  if (it->second != cudaSuccess) {
    return absl::InternalError(absl::StrCat("the batch kernels' shared memory on device ", device,
                                            ": ", cudaGetErrorString(it->second)));
  }
  return absl::OkStatus();
}

absl::Status CheckReduction(const DeviceReduction& r, const char* name) {
  if (r.spans == nullptr || r.reduce_begin == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("the batch's ", name, " reduction is missing"));
  }
  if (r.levels < 1 || r.levels > kMaxReduceLevels) {
    return absl::InvalidArgumentError(absl::StrCat("a batch's ", name, " reduction has ", r.levels,
                                                   " levels, not 1 to ", kMaxReduceLevels));
  }
  return absl::OkStatus();
}

// Every level of reduction `r`, from level 0 in levels[0] to the answers in `out`.
absl::Status Reduce(const DeviceBatch& batch, const DeviceReduction& r, bool or_reduction,
                    const BatchBuffers& buffers, uint64_t* out, uint32_t* out_count,
                    uint32_t* executed, cudaStream_t stream) {
  const uint32_t q = batch.num_queries;
  for (uint32_t l = 1; l <= r.levels; ++l) {
    const bool last = l == r.levels;
    const uint64_t* below = buffers.levels[(l - 1) % 2];
    uint64_t* level = last ? out : buffers.levels[l % 2];
    kernels::BatchReduceKernel<<<r.reduce_blocks[l - 1], kernels::kBatchThreads, 0, stream>>>(
        batch.queries, r.reduce_begin + uint64_t{l - 1} * (q + 1), q, r.spans + uint64_t{l - 1} * q,
        below, r.spans + uint64_t{l} * q, level, buffers.plans, or_reduction, /*first=*/l == 1,
        last, out_count, executed);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status LaunchBatch(const DeviceBatch& batch, const BatchBuffers& buffers, const float* norms,
                         const uint32_t* live, uint32_t num_docs, SearchRange range,
                         cudaStream_t stream) {
  if (stream == nullptr) return absl::InvalidArgumentError("a batch needs a stream");
  if (batch.num_queries == 0) return absl::OkStatus();
  if (batch.queries == nullptr || batch.and_begin == nullptr || batch.or_begin == nullptr ||
      batch.cand_begin == nullptr || batch.terms == nullptr || buffers.results == nullptr ||
      norms == nullptr) {
    return absl::InvalidArgumentError("a batch's arrays must all be on the device");
  }
  const bool runs_and = batch.and_blocks > 0;
  const bool runs_or = batch.or_blocks > 0 || batch.cand_blocks > 0;
  if (runs_and) TANDEM_RETURN_IF_ERROR(CheckReduction(batch.and_reduction, "AND"));
  if (runs_or) {
    TANDEM_RETURN_IF_ERROR(CheckReduction(batch.or_reduction, "OR"));
    if (buffers.plans == nullptr)
      return absl::InvalidArgumentError("the batch's plans are missing");
  }
  if ((runs_and || runs_or) && buffers.levels[0] == nullptr) {
    return absl::InvalidArgumentError("the batch's level-0 keys are missing");
  }
  if (((runs_and && batch.and_reduction.levels >= 2) ||
       (runs_or && batch.or_reduction.levels >= 2)) &&
      buffers.levels[1] == nullptr) {
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
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(and_count, 0, sizeof(uint32_t) * 2 * q, stream));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(executed, 0xff, sizeof(uint32_t) * q, stream));
  if (runs_and) {
    kernels::BatchAndKernel<<<batch.and_blocks, kernels::kBatchThreads, sizeof(kernels::AndShared),
                              stream>>>(batch.queries, batch.and_begin, q, batch.terms, norms, live,
                                        range, batch.and_reduction.spans, buffers.levels[0],
                                        and_count);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    TANDEM_RETURN_IF_ERROR(Reduce(batch, batch.and_reduction, /*or_reduction=*/false, buffers, out,
                                  out_count, executed, stream));
  }
  if (runs_or) {
    const uint32_t plan_blocks = (q + kernels::kBatchThreads - 1) / kernels::kBatchThreads;
    kernels::BatchPlanKernel<<<plan_blocks, kernels::kBatchThreads, 0, stream>>>(
        batch.queries, q, batch.terms, and_count, out_count, out, buffers.plans);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    if (batch.or_blocks > 0) {
      kernels::BatchOrKernel<<<batch.or_blocks, kernels::kBatchThreads, sizeof(kernels::OrShared),
                               stream>>>(batch.queries, batch.or_begin, q, batch.terms, norms, live,
                                         num_docs, buffers.plans, batch.or_reduction.spans,
                                         buffers.levels[0]);
      TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    }
    if (batch.cand_blocks > 0) {
      kernels::BatchCandidateKernel<<<batch.cand_blocks, kernels::kBatchThreads,
                                      sizeof(kernels::AndShared), stream>>>(
          batch.queries, batch.cand_begin, q, batch.terms, norms, live, range, buffers.plans,
          batch.or_reduction.spans, buffers.levels[0]);
      TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    }
    TANDEM_RETURN_IF_ERROR(Reduce(batch, batch.or_reduction, /*or_reduction=*/true, buffers, out,
                                  out_count, executed, stream));
  }
  return absl::OkStatus();
}

}  // namespace tandem::gpu
