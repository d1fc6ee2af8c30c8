// File: locked_dispatcher.h
//
// The plain Dispatcher (dispatcher.h): every thread takes the one lock for itself, as Triton's
// DynamicBatchScheduler does. Admit queues a job under the lock. A worker takes the lock, accounts
// the query it finished, takes its expired queries and its next query, and when there is nothing
// parks on a condition variable of its own. Whoever changes the queues (Admit, a finished query
// that frees a slot or moves the load) wakes one parked worker of each processor that WorkQueues
// now has work for, so no worker sleeps while there is work for it, and none wakes for nothing.
// One parked worker, the timekeeper (a GPU worker's first), sleeps only until the earliest expiry
// of a queued query, to answer it then; the others sleep until woken.
//
//   auto dispatcher = CreateDispatcher(DispatchProtocol::kLocked, config);
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "scheduler/dispatch_core.h"
#include "scheduler/dispatcher.h"

namespace tandem::scheduler {

class LockedDispatcher final : public Dispatcher {
 public:
  explicit LockedDispatcher(DispatcherConfig config);

  absl::Status Admit(std::shared_ptr<PendingJob> job, std::vector<WorkItem> items) override;
  Work Next(size_t worker, std::optional<double> finished, absl::Duration& idle,
            absl::Duration& lock_wait) override;
  void Close() override;
  size_t waiting_jobs() const override { return core_.waiting_jobs(); }

 private:
  struct Sleeper {
    absl::CondVar wake;
    bool woken = false;  // under the lock: a thread that found work for it took it off parked_
  };

  // Wakes one parked worker of each processor that has work now.
  void WakeParked(absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_.mu());
  // Hands every parked worker back to its loop (it exits when the queues are closed and empty).
  void WakeAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_.mu());
  // Makes a parked worker the timekeeper (a GPU worker first), or none when none is parked.
  void ElectTimekeeper() ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_.mu());

  DispatchCore core_;
  std::vector<std::unique_ptr<Sleeper>> sleepers_;             // by worker
  std::vector<size_t> parked_[2] ABSL_GUARDED_BY(core_.mu());  // by processor, last parked last
  std::optional<size_t> timekeeper_ ABSL_GUARDED_BY(core_.mu());
  bool closed_ ABSL_GUARDED_BY(core_.mu()) = false;
};

}  // namespace tandem::scheduler
