#include "gpu/engine/query_context.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"
#include "gpu/engine/query_ops.h"
#include "index/query.h"

namespace tandem::gpu {

QueryContext::~QueryContext() {
  if (stream != nullptr) {
    cudaStreamSynchronize(stream);
    cudaStreamDestroy(stream);
  }
  if (arena_memory != nullptr) cudaFree(arena_memory);
  if (host_keys != nullptr) cudaFreeHost(host_keys);
}

absl::StatusOr<std::unique_ptr<QueryContextPool>> QueryContextPool::Create(const Options& options) {
  if (options.contexts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("at least one query context is needed, got ", options.contexts));
  }
  if (options.scratch_bytes == 0) {
    return absl::InvalidArgumentError("a query context needs scratch memory");
  }
  std::unique_ptr<QueryContextPool> pool(new QueryContextPool());
  for (int c = 0; c < options.contexts; ++c) {
    auto qc = std::make_unique<QueryContext>();
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&qc->stream, cudaStreamNonBlocking));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMalloc(&qc->arena_memory, options.scratch_bytes));
    qc->arena = ScratchArena(qc->arena_memory, options.scratch_bytes);
    qc->host_bytes = options.host_bytes != 0 ? options.host_bytes
                                             : sizeof(uint64_t) * TopKHostWords(index::kMaxK);
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMallocHost(reinterpret_cast<void**>(&qc->host_keys), qc->host_bytes));
    TANDEM_RETURN_IF_ERROR(qc->timer.Init());
    pool->idle_.push_back(qc.get());
    pool->contexts_.push_back(std::move(qc));
  }
  return pool;
}

QueryContextPool::Lease QueryContextPool::Acquire(const GpuQueryTuning& tuning) {
  std::unique_lock<std::mutex> lock(mu_);
  available_.wait(lock, [this] { return !idle_.empty(); });
  QueryContext* context = idle_.back();
  idle_.pop_back();
  context->tuning = tuning;
  return Lease(this, context);
}

void QueryContextPool::Release(QueryContext* context) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(context);
  }
  available_.notify_one();
}

QueryContextPool::Lease::~Lease() {
  if (context_ == nullptr) return;
  cudaStreamSynchronize(context_->stream);  // an early error return may leave work in flight
  context_->arena.Rollback(0);
  pool_->Release(context_);
}

}  // namespace tandem::gpu
