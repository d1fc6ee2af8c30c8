// File: thread_priority.h
//
// Scheduling priority of the calling thread, for threads whose work can wait: the hybrid
// scheduler's CPU query workers (so that on a saturated machine the GPU workers' host code, the
// answer threads and gRPC's threads, which keep the GPU fed and the calls moving, win the cores:
// bench/results/hybrid_probe_h100.txt) and the cost model's background refinement. On Linux the
// nice value belongs to each thread (setpriority(2) with the thread's id), and raising it needs
// no privilege; lowering it back does, so a thread lowered once stays lowered.
//
//   TANDEM_RETURN_IF_ERROR(cpu::LowerThreadPriority(5));  // this thread: 5 nice levels lower
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tandem::cpu {

// The calling thread's nice value (-20 highest priority .. 19 lowest).
absl::StatusOr<int> ThreadNice();

// Lowers the calling thread's priority by `levels` nice levels (0..39), capped at nice 19.
// INVALID_ARGUMENT for levels out of range; INTERNAL when the system refuses (the message names
// the errno).
absl::Status LowerThreadPriority(int levels);

}  // namespace tandem::cpu
