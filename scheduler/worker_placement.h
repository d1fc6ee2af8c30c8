// File: worker_placement.h
//
// Where the hybrid scheduler's worker threads run: each kind may be confined to its own CPUs
// (ExecutorOptions::{cpu,gpu}_worker_cpus), and CPU query workers run kCpuWorkerNice levels below
// the server's other threads, so that the threads that keep the GPU fed and the calls moving (GPU
// workers, answer threads, gRPC's threads) get the cores first. A setting the system refuses
// (a cpuset changed since start, a priority) is reported once per process, and the workers run on
// without it.
//
//   CheckPlacement(options);                    // in Create: INVALID_ARGUMENT for CPUs not ours
//   PlaceWorker(Processor::kCpu, options);      // first thing on a worker thread
#pragma once

#include "absl/status/status.h"
#include "scheduler/executor_options.h"
#include "scheduler/work_queues.h"

namespace tandem::scheduler {

// CPU workers' nice levels below the server: on the H100 machine, CPU workers at the server's
// priority slowed the GPU workers, which wait for the CUDA driver's launch lock, by half; nice 0,
// 5, 10 and SCHED_IDLE were measured side by side, and 10 was no worse than any.
inline constexpr int kCpuWorkerNice = 10;

// INVALID_ARGUMENT naming the option when a CPU set names CPUs this process may not run on.
absl::Status CheckPlacement(const ExecutorOptions& options);

// Confines the calling thread, a worker of `p`, to its CPUs and sets its priority.
void PlaceWorker(Processor p, const ExecutorOptions& options);

}  // namespace tandem::scheduler
