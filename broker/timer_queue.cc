// File: timer_queue.cc
#include "broker/timer_queue.h"

#include <utility>

#include "base/thread_name.h"

namespace tandem::broker {

TimerQueue::TimerQueue() : thread_([this] { Loop(); }) {}

TimerQueue::~TimerQueue() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    wake_.Signal();
  }
  thread_.join();
}

void TimerQueue::RunAt(absl::Time when, std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  const bool earliest = due_.empty() || when < due_.begin()->first;
  due_.emplace(when, std::move(callback));
  if (earliest) wake_.Signal();
}

void TimerQueue::Loop() {
  base::NameThread("tandem-timers");
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    // Wakes for a new earliest timer or a stop, or when the first one is due.
    const absl::Time next = due_.empty() ? absl::InfiniteFuture() : due_.begin()->first;
    if (next > absl::Now()) wake_.WaitWithDeadline(&mu_, next);
    while (!stopping_ && !due_.empty() && due_.begin()->first <= absl::Now()) {
      std::function<void()> callback = std::move(due_.begin()->second);
      due_.erase(due_.begin());
      mu_.Unlock();
      callback();
      mu_.Lock();
    }
  }
}

}  // namespace tandem::broker
