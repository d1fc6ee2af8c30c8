// File: dispatcher.h
//
// How the hybrid scheduler's workers get their next query: the protocol between the threads that
// admit jobs (Submit, on gRPC's threads), the workers that run them and the shared queues of
// scheduler::WorkQueues, which are one object behind one lock. HybridQueryExecutor admits, runs and
// answers; a Dispatcher decides who holds the lock when, and who sleeps:
//
//   LockedDispatcher     each thread takes the lock for itself: Admit queues the job and wakes a
//                        parked worker that can take it; a worker takes its next query and parks on
//                        its processor's condition variable when there is none.
//   CombiningDispatcher  flat combining: a worker publishes its request in a slot of its own, and
//                        whoever holds the lock serves every published request in one round; no
//                        thread blocks on the lock.
//
// Both implement the same contract, checked by the same tests (dispatcher_test.cc, and the
// executor's behavioural tests in hybrid_executor_{routing,lifecycle}_test.cc, run against each):
//   - every admitted item is handed out exactly once, to one worker, or expires in the queue at its
//     `expires` and goes, with its Dequeued, to the next worker served;
//   - a worker is handed work as soon as WorkQueues would give it some, and is never left parked
//     while there is work for it;
//   - after Close, Admit refuses jobs, workers drain what is queued and then each Next says exit.
//
//   Work work = dispatcher.Next(worker, finished_predicted_ms, time.idle, time.lock);
//   if (work.exit()) return;
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "scheduler/executor_observer.h"
#include "scheduler/executor_options.h"
#include "scheduler/query_executor.h"
#include "scheduler/work_queues.h"

namespace tandem::scheduler {

// An admitted job and what its queries share.
struct PendingJob {
  QueryJob job;
  absl::Time submitted;
  absl::Time schedule_deadline;  // earlier of job.deadline and submitted + default_deadline
  size_t unstarted = 0;          // under the dispatcher's lock, once the job is in the queues
};

// One query of a job.
struct TaskRef {
  std::shared_ptr<PendingJob> job;
  size_t task = 0;
};

// What a worker does next: answer `expired` without running them, run `ready`, or, with neither,
// exit.
struct Work {
  std::vector<std::pair<TaskRef, Dequeued>> expired;
  std::optional<std::pair<TaskRef, Dequeued>> ready;
  bool exit() const { return !ready.has_value() && expired.empty(); }
};

class Dispatcher {
 public:
  virtual ~Dispatcher() = default;

  // Queues `job`'s `items` (costs and pins set, ids not yet) or refuses the whole job:
  // RESOURCE_EXHAUSTED when the admission queue is full, UNAVAILABLE after Close.
  virtual absl::Status Admit(std::shared_ptr<PendingJob> job, std::vector<WorkItem> items) = 0;

  // Worker `worker` (its index in the processors the dispatcher was created with) finished a query
  // predicted at `finished` ms (nothing at its start or after expired queries only) and waits for
  // its next work. Adds the time it spent parked to `idle` and waiting for the lock or for another
  // thread to serve it to `lock_wait`.
  virtual Work Next(size_t worker, std::optional<double> finished, absl::Duration& idle,
                    absl::Duration& lock_wait) = 0;

  // Refuses new jobs from now on; the workers drain the queues, then each Next says exit.
  // Idempotent.
  virtual void Close() = 0;

  // Jobs admitted and not yet all started (the admission queue's depth).
  virtual size_t waiting_jobs() const = 0;
};

struct DispatcherConfig {
  std::vector<Processor> workers;  // the processor of each worker, by index
  WorkQueues::Policy policy;
  WorkQueues::Capacity capacity;
  size_t max_running = 0;     // 0: no limit beyond the workers
  size_t queue_capacity = 1;  // jobs that may wait
  ExecutorObserver* observer = nullptr;
};

// The dispatcher `protocol` names. `config` must have passed WorkQueues::Validate.
std::unique_ptr<Dispatcher> CreateDispatcher(DispatchProtocol protocol, DispatcherConfig config);

}  // namespace tandem::scheduler
