// File: executor_observer.h
//
// What the executors report as they work, for metrics: one interface with a method per event, all
// no-ops by default, so an observer overrides what it records (the server's SchedulerMetrics
// records them all; tests record what they check). Methods marked "ordered" run under the
// scheduler's lock, so their reports arrive in order: they must be cheap and must never call back
// into the executor. All run on executor threads, or on the submitting thread from Submit.
//
//   class Depths : public ExecutorObserver {
//     void OnQueueDepth(size_t jobs) override { depth_.Set(jobs); }
//   };
#pragma once

#include <cstddef>

#include "absl/time/time.h"
#include "scheduler/work_queues.h"

namespace tandem::scheduler {

// One scheduling decision: which processor took a query, from which queue and why.
struct SchedulerDecision {
  Processor processor = Processor::kCpu;
  QueueKind queue = QueueKind::kShared;
  // An engine hint chose the processor. (Without a GPU engine every query waits pinned to the CPU
  // queue; only hinted ones count as pinned here.)
  bool pinned = false;
  TakeReason reason = TakeReason::kShortest;
};

// Where one worker's time went between two reports (one report per query or batch of expired
// queries): running the engine, answering (building the response and completing the call through
// on_done), waiting for the scheduler (lock: for its lock or for another thread to serve the
// worker's request), scheduling (the rest: serving requests, cost-model updates, reports) and idle
// (parked: nothing to take). They add up to the worker's wall time.
struct WorkerTime {
  absl::Duration engine = absl::ZeroDuration();
  absl::Duration answer = absl::ZeroDuration();
  absl::Duration lock = absl::ZeroDuration();
  absl::Duration scheduling = absl::ZeroDuration();
  absl::Duration idle = absl::ZeroDuration();
};

class ExecutorObserver {
 public:
  virtual ~ExecutorObserver() = default;
  // Ordered: jobs admitted and not yet all started (the admission queue's depth).
  virtual void OnQueueDepth(size_t jobs) {}
  // Ordered: queries waiting in each of the hybrid scheduler's three queues.
  virtual void OnSchedulerQueueDepth(QueueKind queue, size_t queries) {}
  // Ordered: the cost-ratio thresholds after the load shift (WorkQueues::thresholds): a query
  // whose ratio is at or below `cpu` joins the CPU queue, at or above `gpu` the GPU queue.
  virtual void OnThresholds(double cpu, double gpu) {}
  // Ordered: workers of `p` running a query now.
  virtual void OnBusyWorkers(Processor p, size_t busy) {}
  // A worker took a query.
  virtual void OnDecision(const SchedulerDecision& decision) {}
  // A query answered by the engine it was routed to, with its prediction.
  virtual void OnMeasured(Processor p, double predicted_ms, double measured_ms) {}
  // A worker of `p` spent `busy` on one query (utilization).
  virtual void OnBusyTime(Processor p, absl::Duration busy) {}
  // A worker of `p` reports where its time went since its last report.
  virtual void OnWorkerTime(Processor p, const WorkerTime& time) {}
  // A query answered after its scheduling deadline, or dropped in the queue at its call deadline
  // (cancelled ones excepted).
  virtual void OnDeadlineMiss() {}
};

// The observer of executors created without one.
ExecutorObserver& NoObserver();

}  // namespace tandem::scheduler
