// File: executor_options.h
//
// How the executors are configured: one struct for both (PoolQueryExecutor reads the first three
// fields), nested in the server's options and filled from tandem-server's flags, validated by the
// executor's Create(). The hybrid scheduler's dispatch protocol is chosen here too (dispatcher.h).
//
//   ExecutorOptions options{.cpu_threads = 12, .gpu_threads = 8};
//   options.policy.max_wait = absl::Milliseconds(20);
//   auto executor = HybridQueryExecutor::Create(cpu, gpu, options, &cost_model, &metrics);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "scheduler/work_queues.h"

namespace tandem::scheduler {

// How the hybrid scheduler's workers get their next query from the shared queues (dispatcher.h).
enum class DispatchProtocol {
  kLocked,     // LockedDispatcher: each worker takes the lock and its query itself
  kCombining,  // CombiningDispatcher: flat combining, whoever holds the lock serves everyone
};
bool AbslParseFlag(absl::string_view text, DispatchProtocol* protocol, std::string* error);
std::string AbslUnparseFlag(DispatchProtocol protocol);

struct ExecutorOptions {
  size_t cpu_threads = 1;  // CPU query workers
  // Queries in flight on the GPU at once, one GPU worker each; unused without a GPU engine.
  size_t gpu_threads = 4;
  // Jobs (a batch counts once) that may wait for a worker before Submit refuses new ones with
  // RESOURCE_EXHAUSTED; 0: 4 x the workers (CPU workers, plus GPU workers with a GPU engine),
  // about four query times of waiting.
  size_t queue_capacity = 0;

  // The hybrid scheduler only.
  // Threads that answer the queries the GPU workers ran (build the response and complete the call
  // through on_done), so that a GPU worker goes back to the device at once; 0: GPU workers answer
  // their own queries.
  size_t answer_threads = 0;
  // The CPUs each kind of worker may run on (base/thread_affinity.h); empty: wherever the process
  // may. Disjoint sets keep CPU query workers off the cores of the GPU workers, which hold the CUDA
  // driver's launch lock while they launch.
  std::vector<int> cpu_worker_cpus = {};
  std::vector<int> gpu_worker_cpus = {};
  // Queries running at once on both processors together; 0: no limit beyond the workers. 1 is the
  // paper's "CPU+GPU serialized" configuration, the baseline of Figure 7.
  size_t max_running = 0;
  // The scheduling deadline of a query whose call deadline is later (hybrid_executor.h).
  absl::Duration default_deadline = absl::Milliseconds(500);
  WorkQueues::Policy policy = {};
  DispatchProtocol dispatch = DispatchProtocol::kCombining;

  // Tests only: every query waits this long (honouring its deadline and cancellation) before it
  // runs, so that tests can hold queries in flight deterministically.
  absl::Duration testing_query_delay = absl::ZeroDuration();
};

}  // namespace tandem::scheduler
