#include "scheduler/locked_dispatcher.h"

#include <algorithm>
#include <utility>

namespace tandem::scheduler {

LockedDispatcher::LockedDispatcher(DispatcherConfig config) : core_(config) {
  for (size_t w = 0; w < core_.config().workers.size(); ++w) {
    sleepers_.push_back(std::make_unique<Sleeper>());
  }
}

absl::Status LockedDispatcher::Admit(std::shared_ptr<PendingJob> job, std::vector<WorkItem> items) {
  if (absl::Status reserved = core_.Reserve(); !reserved.ok()) return reserved;
  absl::MutexLock lock(&core_.mu());
  if (closed_) {
    core_.Unreserve();
    return absl::UnavailableError("the server is shutting down");
  }
  const absl::Time expiry_before = core_.next_expiry();
  core_.Enqueue(job, items);
  core_.ReportDepths();
  WakeParked(absl::Now());
  // A job that expires before the timekeeper wakes moves its wake-up earlier.
  if (timekeeper_.has_value() && core_.next_expiry() < expiry_before) {
    sleepers_[*timekeeper_]->wake.Signal();
  }
  return absl::OkStatus();
}

void LockedDispatcher::WakeParked(absl::Time now) {
  for (Processor p : {Processor::kCpu, Processor::kGpu}) {
    std::vector<size_t>& parked = parked_[DispatchCore::Index(p)];
    if (parked.empty() || !core_.HasWorkFor(p, now)) continue;
    const size_t worker = parked.back();
    parked.pop_back();
    sleepers_[worker]->woken = true;
    sleepers_[worker]->wake.Signal();
  }
}

void LockedDispatcher::ElectTimekeeper() {
  timekeeper_.reset();
  for (Processor p : {Processor::kGpu, Processor::kCpu}) {
    const std::vector<size_t>& parked = parked_[DispatchCore::Index(p)];
    if (parked.empty()) continue;
    timekeeper_ = parked.front();
    sleepers_[*timekeeper_]->wake.Signal();  // to sleep again, until the earliest expiry
    return;
  }
}

Work LockedDispatcher::Next(size_t worker, std::optional<double> finished, absl::Duration& idle,
                            absl::Duration& lock_wait) {
  const Processor p = core_.config().workers[worker];
  std::vector<size_t>& parked = parked_[DispatchCore::Index(p)];
  Sleeper& sleeper = *sleepers_[worker];
  const absl::Time start = absl::Now();
  absl::MutexLock lock(&core_.mu());
  lock_wait += absl::Now() - start;
  if (finished.has_value()) core_.Finished(p, *finished);
  // A finished query frees a slot (max_running) and lightens its processor's load (stealing).
  bool changed = finished.has_value();
  while (true) {
    const absl::Time now = absl::Now();
    Work work;
    work.expired = core_.RemoveExpired(now);
    work.ready = core_.Take(p, now);
    if (!work.exit()) core_.ReportDepths();
    if (changed || !work.exit()) WakeParked(now);  // work for others, or a second query queued
    changed = false;
    const bool drained = closed_ && core_.empty();
    if (drained) WakeAll();  // the last queued query is out: every parked worker exits
    if (!work.exit() || drained) return work;

    // Nothing for this worker: park until a thread hands it work or, as the timekeeper, until the
    // earliest expiry. Only the thread that takes a worker off parked_ sets woken.
    const absl::Time parked_at = absl::Now();
    sleeper.woken = false;
    parked.push_back(worker);
    if (!timekeeper_.has_value()) timekeeper_ = worker;
    // After Close a worker with nothing to take still waits, for the others to drain the queues.
    while (!sleeper.woken && !(closed_ && core_.empty())) {
      if (timekeeper_ != worker) {
        sleeper.wake.Wait(&core_.mu());
        continue;
      }
      const absl::Time wake_by = core_.next_expiry();
      if (absl::Now() >= wake_by) break;
      sleeper.wake.WaitWithDeadline(&core_.mu(), wake_by);
    }
    if (!sleeper.woken) parked.erase(std::find(parked.begin(), parked.end(), worker));
    if (timekeeper_ == worker) ElectTimekeeper();
    idle += absl::Now() - parked_at;
  }
}

void LockedDispatcher::WakeAll() {
  for (std::vector<size_t>& parked : parked_) {
    for (size_t worker : parked) {
      sleepers_[worker]->woken = true;
      sleepers_[worker]->wake.Signal();
    }
    parked.clear();
  }
}

void LockedDispatcher::Close() {
  absl::MutexLock lock(&core_.mu());
  closed_ = true;
  if (core_.empty()) WakeAll();
}

}  // namespace tandem::scheduler
