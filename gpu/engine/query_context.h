// File: query_context.h
//
// The device resources of the queries in flight, the role of Faiss's GpuResources: one
// QueryContext per query that may run at once (a stream, a scratch arena allocated at start so the
// query path never calls cudaMalloc, pinned host memory for the top-k keys and counts, a stage
// timer), and the pool that lends them out. A query holds its context through a lease; returning
// the lease synchronizes the stream (an early error return may leave work in flight), rolls the
// arena back and wakes a waiting query. Compiled by g++ (C++20).
//
//   TANDEM_ASSIGN_OR_RETURN(auto pool, QueryContextPool::Create({.contexts = 4, .scratch_bytes =
//   n})); QueryContextPool::Lease lease = pool->Acquire(tuning);  // waits while all are busy
//   RunOr(terms, ..., *lease, stats);
#pragma once

#include <cuda_runtime_api.h>

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/device/scratch_arena.h"
#include "gpu/device/stage_timer.h"
#include "gpu/engine/gpu_engine.h"

namespace tandem::gpu {

// One query's device resources.
struct QueryContext {
  cudaStream_t stream = nullptr;
  void* arena_memory = nullptr;
  ScratchArena arena;
  // Pinned host memory of the pool's host_bytes: the per-query path's top-k keys and count reads
  // (TopKHostWords(index::kMaxK) words), a batch's layout going up and its results coming back.
  uint64_t* host_keys = nullptr;
  uint64_t host_bytes = 0;
  StageTimer timer;
  GpuQueryTuning tuning;  // the engine's tuning when the query checked the context out

  QueryContext() = default;
  QueryContext(const QueryContext&) = delete;
  QueryContext& operator=(const QueryContext&) = delete;
  ~QueryContext();
};

class QueryContextPool {
 public:
  struct Options {
    int contexts = 4;            // queries that may run on the device at once
    uint64_t scratch_bytes = 0;  // per context; > 0
    uint64_t host_bytes = 0;     // pinned per context; 0: what the per-query path's top-k needs
  };

  // On the current device. INVALID_ARGUMENT for bad options, RESOURCE_EXHAUSTED when the arenas do
  // not fit in device memory.
  static absl::StatusOr<std::unique_ptr<QueryContextPool>> Create(const Options& options);

  // A checked-out context; destroying it returns the context to the pool.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), context_(other.context_) {
      other.context_ = nullptr;
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    QueryContext& operator*() const { return *context_; }
    QueryContext* operator->() const { return context_; }

   private:
    friend class QueryContextPool;
    Lease(QueryContextPool* pool, QueryContext* context) : pool_(pool), context_(context) {}
    QueryContextPool* pool_;
    QueryContext* context_;
  };

  // Waits until a context is free, then lends it with `tuning` for the query.
  Lease Acquire(const GpuQueryTuning& tuning);

  // The first context's stream, for set-up copies before any query runs.
  cudaStream_t setup_stream() const { return contexts_.front()->stream; }

 private:
  QueryContextPool() = default;
  void Release(QueryContext* context);

  std::vector<std::unique_ptr<QueryContext>> contexts_;
  std::mutex mu_;
  std::condition_variable available_;
  std::vector<QueryContext*> idle_;  // guarded by mu_
};

}  // namespace tandem::gpu
