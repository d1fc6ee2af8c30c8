#include "scheduler/combining_dispatcher.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "base/cpu_relax.h"

namespace tandem::scheduler {
namespace {

// Rounds a thread runs in a row before it asks a waiting worker to run the next (CombinePending).
constexpr int kMaxRounds = 4;
// How long a worker whose request another thread's round will serve spins before it sleeps: a
// round takes microseconds, a sleep and its wake-up tens of them on a busy machine.
constexpr absl::Duration kRequestSpin = absl::Microseconds(20);
// How long it then sleeps before it tries the lock again itself, in case no round came (a round
// that stops after kMaxRounds pokes a waiting worker, so this is a backstop).
constexpr absl::Duration kRequestRecheck = absl::Milliseconds(1);

}  // namespace

CombiningDispatcher::CombiningDispatcher(DispatcherConfig config) : core_(config) {
  for (Processor p : core_.config().workers) slots_.push_back(std::make_unique<WorkerSlot>(p));
}

absl::Status CombiningDispatcher::Admit(std::shared_ptr<PendingJob> job,
                                        std::vector<WorkItem> items) {
  // Admission without the scheduler's lock: the job is counted, then staged in the inbox, which the
  // next round moves into the queues. Under load no worker is parked, and a gRPC thread submitting
  // a query never touches the lock.
  const std::array<bool, 2> may_take = core_.MayTake(items);
  absl::Time expires = absl::InfiniteFuture();
  for (const WorkItem& item : items) expires = std::min(expires, item.expires);
  if (absl::Status reserved = core_.Reserve(); !reserved.ok()) return reserved;
  {
    absl::MutexLock lock(&inbox_mu_);
    if (inbox_closed_) {
      core_.Unreserve();
      return absl::UnavailableError("the server is shutting down");
    }
    inbox_.push_back({.job = std::move(job), .items = std::move(items)});
    inbox_size_.fetch_add(1);  // before the loads of parked_ below (see CombinePending)
  }
  // A parked worker would not see the inbox until a round serves it again: run one now if a parked
  // worker may take the job. Only such a worker is worth it: with the GPU's workers busy and idle
  // CPU workers waiting, taking the lock for every job had the GPU workers waiting for it a third
  // of their time. A job left in the inbox is routed by the next round, which the next worker to
  // finish a query runs, unless it expires before then: when it expires before the parked
  // timekeeper wakes, a round now makes that wake-up earlier (any worker answers expired queries).
  const bool cpu_parked = parked_[0].load() > 0;
  const bool gpu_parked = parked_[1].load() > 0;
  const bool expires_first = (cpu_parked || gpu_parked) && expires != absl::InfiniteFuture() &&
                             absl::ToUnixNanos(expires) < earliest_self_wakeup_ns_.load();
  if ((may_take[0] && cpu_parked) || (may_take[1] && gpu_parked) || expires_first) {
    // If another thread holds the lock, it sees this after releasing it and runs the round.
    round_wanted_.store(true);
    CombinePending(/*parked=*/false);
  }
  return absl::OkStatus();
}

bool CombiningDispatcher::DrainInbox() {
  std::vector<Staged> staged;
  {
    absl::MutexLock lock(&inbox_mu_);
    staged.swap(inbox_);
    inbox_size_.fetch_sub(staged.size());
  }
  for (Staged& s : staged) core_.Enqueue(s.job, s.items);
  return !staged.empty();
}

void CombiningDispatcher::Close() {
  {
    absl::MutexLock lock(&inbox_mu_);
    inbox_closed_ = true;  // no job is staged after this; workers drain the inbox before exiting
  }
  bool parked = false;
  {
    // Serves the parked workers: the queued work, then exit.
    absl::MutexLock lock(&core_.mu());
    stopping_ = true;
    parked = Combine();
  }
  CombinePending(parked);
}

Work CombiningDispatcher::Next(size_t worker, std::optional<double> finished, absl::Duration& idle,
                               absl::Duration& lock_wait) {
  WorkerSlot& slot = *slots_[worker];
  const int i = DispatchCore::Index(slot.processor);
  {
    absl::MutexLock lock(&slot.mu);
    slot.finished = finished;
    requests_.fetch_add(1);
    slot.state.store(SlotState::kRequest);
  }
  while (true) {
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::kServed) {
      Work work;
      {
        absl::MutexLock lock(&slot.mu);
        slot.state.store(SlotState::kRunning);
        work = std::exchange(slot.work, Work{});
      }
      // A round handed over to this worker while it was being served is still to run.
      if (slot.poked.exchange(false)) CombinePending(/*parked=*/false);
      return work;
    }
    if (state == SlotState::kRequest) {
      // A round for this request and whoever else asked, unless another thread holds the lock:
      // that one serves this request in its round or the next, so wait for it here, spinning
      // first (a round takes microseconds), until served or handed the next round.
      slot.poked.store(false);
      CombinePending(/*parked=*/false);
      const absl::Time start = absl::Now();
      const absl::Time spin_end = start + kRequestSpin;
      for (int n = 1; slot.state.load(std::memory_order_acquire) == SlotState::kRequest &&
                      !slot.poked.load(std::memory_order_relaxed);
           ++n) {
        base::CpuRelax();
        if (n % 64 == 0 && absl::Now() >= spin_end) {
          absl::MutexLock lock(&slot.mu);
          if (slot.state.load() == SlotState::kRequest && !slot.poked.load()) {
            slot.sleeping = true;
            slot.changed.WaitWithTimeout(&slot.mu, kRequestRecheck);
            slot.sleeping = false;
          }
          break;
        }
      }
      lock_wait += absl::Now() - start;
      continue;
    }
    assert(state == SlotState::kParked && "a published request is never withdrawn");
    // Nothing to take: sleep until a round serves this worker or hands it the next round, or the
    // earliest expiry it knew of comes; then ask for a round (to answer that query).
    const absl::Time start = absl::Now();
    {
      absl::MutexLock lock(&slot.mu);
      slot.sleeping = true;
      while (slot.state.load() == SlotState::kParked && !slot.poked.load() &&
             absl::Now() < slot.wake_by) {
        slot.changed.WaitWithDeadline(&slot.mu, slot.wake_by);
      }
      slot.sleeping = false;
      if (slot.state.load() == SlotState::kParked) {
        parked_[i].fetch_sub(1);
        requests_.fetch_add(1);
        slot.state.store(SlotState::kRequest);
      }
    }
    idle += absl::Now() - start;
  }
}

void CombiningDispatcher::CombinePending(bool parked) {
  for (int round = 0;; ++round) {
    // After a round parked a worker that had asked, a job staged meanwhile needs a round: its
    // Admit may have looked at parked_ before that worker was counted (Admit counts the job in
    // inbox_size_ before it looks at parked_; the round counts the worker before this looks).
    const bool needed =
        requests_.load() > 0 || round_wanted_.load() || (parked && inbox_size_.load() > 0);
    if (!needed) return;
    // This thread has work of its own: after a few rounds the next is for a waiting worker. (With
    // every worker busy, this thread goes on: nobody else would run it.)
    if (round >= kMaxRounds && HandOverNextRound()) return;
    // A thread holding the lock runs this check after it releases it.
    if (!core_.mu().TryLock()) return;
    parked = Combine();
    core_.mu().Unlock();
  }
}

bool CombiningDispatcher::HandOverNextRound() {
  for (const SlotState wanted : {SlotState::kRequest, SlotState::kParked}) {
    // GPU workers' slots are last.
    for (auto it = slots_.rbegin(); it != slots_.rend(); ++it) {
      WorkerSlot& slot = **it;
      if (slot.state.load(std::memory_order_acquire) != wanted) continue;
      absl::MutexLock lock(&slot.mu);
      if (slot.state.load() != wanted) continue;
      slot.poked.store(true);
      if (slot.sleeping) slot.changed.Signal();
      return true;
    }
  }
  return false;
}

bool CombiningDispatcher::Combine() {
  round_wanted_.store(false);  // before the inbox is drained (see Admit)
  const absl::Time now = absl::Now();
  const bool drained = DrainInbox();
  bool changed = drained;
  // The workers that asked, and the parked ones, from a starting point that moves each round.
  absl::InlinedVector<WorkerSlot*, 32> asking;
  absl::InlinedVector<WorkerSlot*, 32> parked;
  const size_t n = slots_.size();
  for (size_t k = 0; k < n; ++k) {
    WorkerSlot* slot = slots_[(next_slot_ + k) % n].get();
    const SlotState state = slot->state.load(std::memory_order_acquire);
    if (state == SlotState::kRequest) asking.push_back(slot);
    if (state == SlotState::kParked) parked.push_back(slot);
  }
  next_slot_ = (next_slot_ + 1) % n;
  // First the queries the askers finished, so that loads and free slots are current before
  // anything is taken. (Only a round moves a slot out of kRequest, so these stay asking.)
  for (WorkerSlot* slot : asking) {
    std::optional<double> finished;
    {
      absl::MutexLock lock(&slot->mu);
      finished = std::exchange(slot->finished, std::nullopt);
    }
    if (!finished.has_value()) continue;
    core_.Finished(slot->processor, *finished);
    changed = true;  // a freed slot (max_running), a lighter load (stealing)
  }
  // Expired queries go to the first worker served; without one they wait for the next round.
  std::vector<std::pair<TaskRef, Dequeued>> expired;
  if (!asking.empty() || !parked.empty()) expired = core_.RemoveExpired(now);
  const bool any_expired = !expired.empty();
  changed = changed || any_expired || stopping_;

  bool took = false;
  bool parked_asker = false;
  // Once Take finds nothing for a processor, nothing else this round changes that.
  bool exhausted[2] = {false, false};
  const absl::Time next_expiry = core_.next_expiry();
  auto serve = [&](WorkerSlot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(core_.mu()) {
    const int i = DispatchCore::Index(slot.processor);
    absl::MutexLock lock(&slot.mu);
    // A parked worker may have asked for a round meanwhile (its wake-up came): served the same.
    const SlotState state = slot.state.load();
    if (state != SlotState::kRequest && state != SlotState::kParked) return;
    Work work;
    work.expired = std::move(expired);
    expired.clear();
    if (!exhausted[i]) {
      work.ready = core_.Take(slot.processor, now);
      if (work.ready.has_value()) {
        took = true;
      } else {
        exhausted[i] = true;
      }
    }
    // Close closed the inbox before it set stopping_, and the inbox was drained above: with the
    // queues empty too, a worker with nothing to do exits.
    const bool exit = stopping_ && core_.empty();
    if (!work.exit() || exit) {
      (state == SlotState::kRequest ? requests_ : parked_[i]).fetch_sub(1);
      slot.work = std::move(work);
      slot.state.store(SlotState::kServed);
      if (slot.sleeping) slot.changed.Signal();
      return;
    }
    if (state == SlotState::kRequest) {
      parked_[i].fetch_add(1);  // before CombinePending looks at inbox_size_ (see there)
      requests_.fetch_sub(1);
      slot.wake_by = absl::InfiniteFuture();  // unless it becomes the timekeeper below
      slot.state.store(SlotState::kParked);
      parked_asker = true;
    }
  };
  for (WorkerSlot* slot : asking) serve(*slot);
  // Parked workers are served again only when something changed that could give them work.
  if (changed) {
    for (WorkerSlot* slot : parked) {
      // Skipped without its mutex when the round has nothing for it.
      const bool nothing = exhausted[DispatchCore::Index(slot->processor)] && expired.empty() &&
                           !(stopping_ && core_.empty());
      if (!nothing) serve(*slot);
    }
  }
  // One parked worker, the timekeeper, sleeps until the earliest expiry to answer it should no
  // round come first; the others sleep until a round serves them. (Waking them all at each expiry
  // had every idle CPU worker, at its lowered priority, run a round.) A GPU worker's slot first:
  // they run at the server's priority.
  WorkerSlot* keeper = timekeeper_;
  if (keeper == nullptr || keeper->state.load(std::memory_order_acquire) != SlotState::kParked) {
    keeper = nullptr;
    for (auto it = slots_.rbegin(); it != slots_.rend() && keeper == nullptr; ++it) {
      if ((*it)->state.load(std::memory_order_acquire) == SlotState::kParked) keeper = it->get();
    }
    timekeeper_ = keeper;
  }
  absl::Time earliest = absl::InfiniteFuture();
  if (keeper != nullptr) {
    absl::MutexLock lock(&keeper->mu);
    // (It may have woken by itself and asked meanwhile: then it runs a round anyway.)
    if (keeper->state.load() == SlotState::kParked) {
      const bool earlier = next_expiry < keeper->wake_by;
      keeper->wake_by = next_expiry;
      if (earlier && keeper->sleeping) keeper->changed.Signal();
      earliest = next_expiry;
    }
  }
  earliest_self_wakeup_ns_.store(earliest == absl::InfiniteFuture() ? INT64_MAX
                                                                    : absl::ToUnixNanos(earliest));
  if (drained || took || any_expired) core_.ReportDepths();
  return parked_asker;
}

}  // namespace tandem::scheduler
