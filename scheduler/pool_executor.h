// File: pool_executor.h
//
// The simplest QueryExecutor: a bounded FIFO admission queue in front of a fixed pool of worker
// threads. A full queue refuses new jobs at once (RESOURCE_EXHAUSTED) so that overload shows up as
// fast rejections the caller can retry elsewhere, not as unbounded latency. Workers take the front
// job's next query; a batch stays at the front until its last query has started, so idle workers
// share a batch's queries in arrival order.
//
// Routing: EnginePreference::kGpu runs on the GPU engine (FAILED_PRECONDITION without one); kAuto
// and kCpu run on the CPU engine. HybridQueryExecutor (hybrid_executor.h) routes kAuto by cost.
//
// Before a query starts its context is checked, so a query whose caller gave up or whose deadline
// passed while it waited is never run.
//
//   auto executor = PoolQueryExecutor::Create(engines.cpu.get(), engines.gpu.get(),
//                                             {.cpu_threads = 8, .queue_capacity = 32});
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "index/engine.h"
#include "scheduler/executor_observer.h"
#include "scheduler/executor_options.h"
#include "scheduler/query_executor.h"

namespace tandem::scheduler {

class PoolQueryExecutor final : public QueryExecutor {
 public:
  // `cpu` must be non-null; `gpu` may be null. Both must outlive the executor.
  // Reads options.cpu_threads (its workers), queue_capacity (0: 4 x the workers) and
  // testing_query_delay. `observer` (may be null) hears of the queue's depth.
  static absl::StatusOr<std::unique_ptr<PoolQueryExecutor>> Create(
      const index::Engine* cpu, const index::Engine* gpu, const ExecutorOptions& options,
      ExecutorObserver* observer = nullptr);
  ~PoolQueryExecutor() override;

  absl::Status Submit(QueryJob job) override;
  size_t queue_depth() const override;
  size_t queue_capacity() const override { return queue_capacity_; }
  std::vector<std::string> engines() const override;
  void Shutdown() override;

 private:
  struct PendingJob {
    QueryJob job;
    absl::Time submitted;
    size_t next_task = 0;  // guarded by mu_
  };

  PoolQueryExecutor(const index::Engine* cpu, const index::Engine* gpu,
                    const ExecutorOptions& options, ExecutorObserver& observer);
  void ReportDepth() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop();
  void RunTask(const PendingJob& pending, size_t task);

  const index::Engine* const cpu_;
  const index::Engine* const gpu_;
  const ExecutorOptions options_;
  const size_t queue_capacity_;
  ExecutorObserver& observer_;
  mutable absl::Mutex mu_;
  std::deque<std::shared_ptr<PendingJob>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> workers_;
  absl::Mutex join_mu_;  // serializes Shutdown callers
};

}  // namespace tandem::scheduler
