// File: timer_queue.h
//
// Callbacks run at a given time on one thread of their own: the broker's hedge timers. A callback
// holds what it needs weakly and finds out itself whether it still has work (a shard that answered
// meanwhile), so timers are never cancelled; they are short-lived (a shard's p95 latency) and
// cheap. gRPC's callback Alarm would do the same, but an alarm destroyed from its own callback (the
// last reference to a query dropped there) is not safe.
//
//   TimerQueue timers;
//   timers.RunAt(absl::Now() + absl::Milliseconds(3), [weak] { if (auto q = weak.lock()) ...; });
#pragma once

#include <functional>
#include <map>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace tandem::broker {

class TimerQueue {
 public:
  TimerQueue();
  // Runs nothing more; callbacks not yet due are dropped.
  ~TimerQueue();
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  // `callback` runs on the timer thread at `when` or soon after; it must not block.
  void RunAt(absl::Time when, std::function<void()> callback);

 private:
  void Loop();

  absl::Mutex mu_;
  absl::CondVar wake_;
  std::multimap<absl::Time, std::function<void()>> due_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace tandem::broker
