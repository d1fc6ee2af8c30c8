// File: thread_priority.h
//
// Scheduling priority of the calling thread, for threads whose work can wait: the hybrid
// scheduler's CPU query workers and the cost model's background refinement. On the H100 machine
// the GPU workers spend most of their blocked time waiting for the CUDA driver's launch lock (perf:
// cuLaunchKernel's mutex): when CPU workers at the same priority fill the cores, a
// GPU worker woken with that lock waits for a core, and every other GPU worker waits behind it.
// Lowering the CPU workers keeps the threads that feed the GPU and complete the calls first.
//
// Two ways, both per thread on Linux and neither needing a privilege to take:
//   nice N   N nice levels below the thread's current one (setpriority(2) with the thread's id);
//            a lower share of a contended core, and a lower claim when a higher thread wakes up;
//   idle     SCHED_IDLE (sched(7)): runs only on cores no normal thread wants, and is preempted at
//            once by any normal thread that wakes up.
// Going back up needs a privilege, so a thread lowered once stays lowered.
//
//   TANDEM_ASSIGN_OR_RETURN(base::ThreadPriority p, base::ParseThreadPriority("idle"));
//   TANDEM_RETURN_IF_ERROR(base::LowerThreadPriority(p));  // the calling thread
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::base {

struct ThreadPriority {
  bool idle = false;  // SCHED_IDLE; `nice` is then unused
  int nice = 0;       // nice levels below the thread's current priority, 0..19
};

// INVALID_ARGUMENT unless `priority` is idle or 0..19 nice levels.
absl::Status CheckThreadPriority(const ThreadPriority& priority);
// "idle", or a number of nice levels 0..19; INVALID_ARGUMENT otherwise.
absl::StatusOr<ThreadPriority> ParseThreadPriority(absl::string_view text);
// "idle" or "nice +N", for logs and summaries.
std::string ThreadPriorityName(const ThreadPriority& priority);

// The calling thread's nice value (-20 highest priority .. 19 lowest).
absl::StatusOr<int> ThreadNice();
// Whether the calling thread runs under SCHED_IDLE.
bool ThreadIsIdle();

// Lowers the calling thread's priority by `levels` nice levels (0..39), capped at nice 19.
// INVALID_ARGUMENT for levels out of range; INTERNAL when the system refuses (the message names
// the errno).
absl::Status LowerThreadPriority(int levels);
// Applies `priority` to the calling thread (nothing for nice 0): as above, or SCHED_IDLE.
absl::Status LowerThreadPriority(const ThreadPriority& priority);

}  // namespace tandem::base
