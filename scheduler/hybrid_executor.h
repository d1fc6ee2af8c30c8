// File: hybrid_executor.h
//
// The CPU+GPU QueryExecutor of Ding et al. 2009, section 9: every query gets a predicted cost on
// each processor from a CostPredictor at Submit and waits in one of three queues (much cheaper on
// the GPU, much cheaper on the CPU, the rest); a pool of CPU workers and GPU workers (several
// queries in flight on the GPU) take work by the policy of scheduler::WorkQueues: urgent queries
// first, shortest-predicted-job first within a bounded wait, then the shared queue, then stealing
// from the other processor. After each run the measured time goes back to the predictor.
//
// Admission is PoolQueryExecutor's: at most queue_capacity jobs waiting (a batch counts once),
// RESOURCE_EXHAUSTED beyond, UNAVAILABLE after Shutdown, each admitted task's on_done called
// exactly once, a batch's tasks free to run in parallel on either processor.
//
// Deadlines. The deadline a query is scheduled by is the earlier of the call's own (gRPC) deadline
// and arrival + default_deadline (500 ms, the paper's bound for a search engine). Only the call's
// deadline stops a query (DEADLINE_EXCEEDED): one that expires while queued is answered at once
// without running; the default deadline orders work (urgency) and counts misses, since the caller
// is still waiting for the answer.
//
// Routing. EnginePreference kCpu / kGpu pin a query to that processor (never stolen); kAuto is
// routed. Without a GPU engine every query runs on the CPU (kGpu: FAILED_PRECONDITION) and the
// predictor is optional. A GPU engine fault is answered on the CPU, as PoolQueryExecutor does.
//
// Threads. Workers get their queries through a Dispatcher (dispatcher.h: a plain lock, or flat
// combining), placed by worker_placement.h (CPU sets, the CPU workers' lower priority). With
// answer_threads, GPU workers hand the answer (on_done: building the response, completing the
// call) to answer threads and go back to the device.
//
//   auto executor = HybridQueryExecutor::Create(cpu, gpu, {.cpu_threads = 16, .gpu_threads = 4},
//                                               cost_model.get(), &metrics);
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "index/engine.h"
#include "scheduler/dispatcher.h"
#include "scheduler/executor_observer.h"
#include "scheduler/executor_options.h"
#include "scheduler/query_executor.h"
#include "scheduler/work_queues.h"

namespace tandem::scheduler {

class HybridQueryExecutor final : public QueryExecutor {
 public:
  // `cpu` must be non-null; `gpu` may be null. `predictor` is required with a GPU engine;
  // `observer` may be null. Engines, predictor and observer must outlive the executor.
  // INVALID_ARGUMENT naming the option for unusable options.
  static absl::StatusOr<std::unique_ptr<HybridQueryExecutor>> Create(
      const index::Engine* cpu, const index::Engine* gpu, const ExecutorOptions& options,
      CostPredictor* predictor, ExecutorObserver* observer = nullptr);
  ~HybridQueryExecutor() override;

  absl::Status Submit(QueryJob job) override;
  size_t queue_depth() const override;
  size_t queue_capacity() const override { return queue_capacity_; }
  std::vector<std::string> engines() const override;
  void Shutdown() override;

 private:
  HybridQueryExecutor(const index::Engine* cpu, const index::Engine* gpu,
                      const ExecutorOptions& options, size_t queue_capacity,
                      CostPredictor* predictor, ExecutorObserver& observer);
  void WorkerLoop(size_t worker, Processor p);
  // Both add their engine and answer times to `time`.
  void Run(Processor p, const TaskRef& ref, const Dequeued& taken, WorkerTime& time);
  void AnswerExpired(const TaskRef& ref, const Dequeued& expired, WorkerTime& time);
  void Finish(const TaskRef& ref, QueryOutcome outcome);
  void AnswerLoop();

  const index::Engine* const cpu_;
  const index::Engine* const gpu_;
  const ExecutorOptions options_;
  const size_t queue_capacity_;
  CostPredictor* const predictor_;
  ExecutorObserver& observer_;
  std::unique_ptr<Dispatcher> dispatcher_;
  std::vector<std::thread> workers_;
  // Answers handed from GPU workers to the answer threads (ExecutorOptions::answer_threads).
  absl::Mutex answer_mu_;
  std::deque<std::pair<TaskRef, QueryOutcome>> answers_ ABSL_GUARDED_BY(answer_mu_);
  bool answers_closed_ ABSL_GUARDED_BY(answer_mu_) = false;  // no more answers will come
  std::vector<std::thread> answerers_;
  absl::Mutex join_mu_;  // serializes Shutdown callers
};

}  // namespace tandem::scheduler
