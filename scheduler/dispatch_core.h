// File: dispatch_core.h
//
// The state both dispatchers share, behind the one lock they take (mu()): the three queues of
// WorkQueues, the queued items' jobs, the running queries per processor, and the reports of queue
// depths and thresholds to the observer. Also the two things done without the lock: counting jobs
// into the admission queue, and guessing from the last thresholds which processors could take a
// job (so that a submitting thread wakes a parked worker only when one might take it).
//
//   absl::MutexLock lock(&core.mu());
//   core.Enqueue(job, items);
//   if (auto taken = core.Take(Processor::kGpu, absl::Now())) ...
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "scheduler/dispatcher.h"

namespace tandem::scheduler {

class DispatchCore {
 public:
  explicit DispatchCore(const DispatcherConfig& config);

  absl::Mutex& mu() const ABSL_LOCK_RETURNED(mu_) { return mu_; }
  const DispatcherConfig& config() const { return config_; }
  ExecutorObserver& observer() const { return *config_.observer; }
  static int Index(Processor p) { return p == Processor::kCpu ? 0 : 1; }

  // Without the lock. Counts a job into the admission queue, or RESOURCE_EXHAUSTED when
  // queue_capacity jobs wait; Unreserve takes back a count whose job was not queued.
  absl::Status Reserve();
  void Unreserve();
  size_t waiting_jobs() const { return waiting_jobs_.load(std::memory_order_relaxed); }
  // Which processors (by Index) might take one of `items`: the one whose queue each would join by
  // the last thresholds published, both within a factor of them or for the shared queue.
  std::array<bool, 2> MayTake(const std::vector<WorkItem>& items) const;

  // Under the lock.
  // Assigns ids to `items` and queues them.
  void Enqueue(const std::shared_ptr<PendingJob>& job, std::vector<WorkItem>& items)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A query `p` took has run; `predicted_ms` is its Dequeued::predicted_ms.
  void Finished(Processor p, double predicted_ms) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The queued queries whose call deadline has passed, with their jobs.
  std::vector<std::pair<TaskRef, Dequeued>> RemoveExpired(absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The next query for `p`, counted as running, or nothing (none for `p`, or max_running reached).
  std::optional<std::pair<TaskRef, Dequeued>> Take(Processor p, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether Take(p, now) would return a query.
  bool HasWorkFor(Processor p, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool empty() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queues_.empty(); }
  absl::Time next_expiry() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return queues_.next_expiry();
  }
  // Reports the admission queue's depth, the three queues' depths and the thresholds (those that
  // changed), and publishes the thresholds for MayTake.
  void ReportDepths() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

 private:
  bool SlotFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  TaskRef Detach(uint64_t id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PublishThresholds(const WorkQueues::Thresholds& t);

  const DispatcherConfig config_;
  mutable absl::Mutex mu_;
  WorkQueues queues_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<uint64_t, TaskRef> tasks_ ABSL_GUARDED_BY(mu_);  // queued, by item id
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 0;
  size_t busy_[2] ABSL_GUARDED_BY(mu_) = {0, 0};
  size_t reported_depth_[3] ABSL_GUARDED_BY(mu_) = {0, 0, 0};  // by QueueKind
  WorkQueues::Thresholds reported_thresholds_ ABSL_GUARDED_BY(mu_);
  std::atomic<size_t> waiting_jobs_{0};
  // queues_.thresholds() as of the last report, for MayTake.
  std::atomic<double> routed_cpu_threshold_{0};
  std::atomic<double> routed_gpu_threshold_{0};
};

}  // namespace tandem::scheduler
