// File: query_executor.h
//
// The dispatch step between the RPC handlers and the engines. Handlers validate a request, wrap its
// queries in a QueryJob and Submit it; the executor admits the job or refuses it at once, runs
// every admitted query on some engine and reports each outcome through the job's callback. The
// service sees only this interface, so the hybrid scheduler (HybridQueryExecutor: CPU/GPU routing
// by cost model, work stealing between device queues) and the plain PoolQueryExecutor are
// interchangeable behind it.
//
//   QueryJob job{.tasks = {task}, .deadline = deadline, .cancelled = flag,
//                .on_done = [](size_t i, QueryOutcome outcome) { ... }};
//   absl::Status admitted = executor.Submit(std::move(job));  // RESOURCE_EXHAUSTED when full
#pragma once

#include <atomic>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "index/prepared_query.h"
#include "index/query.h"

namespace tandem::scheduler {

// The caller's engine choice (tandem.v1.EngineHint without the wire's UNSPECIFIED).
enum class EnginePreference {
  kAuto,  // the executor decides
  kCpu,
  kGpu,  // FAILED_PRECONDITION when there is no GPU engine
};

// One query, prepared against the node's index at admission (index::PreparedQuery): what the cost
// model, the scheduler and the engines read.
struct QueryTask {
  index::PreparedQuery query;
  EnginePreference engine = EnginePreference::kAuto;
};

struct QueryOutcome {
  // The engine's answer, or why there is none (DEADLINE_EXCEEDED, CANCELLED, FAILED_PRECONDITION,
  // engine errors).
  absl::StatusOr<index::SearchResult> result;
  // Name of the engine the query was routed to ("cpu", "gpu"); empty when none was chosen.
  std::string engine = {};
  // Whether the engine began the query; false when it expired or was cancelled while queued.
  bool started = false;
  // The GPU engine failed (out of memory, CUDA fault) and the CPU engine answered instead; `engine`
  // then names the CPU engine.
  bool gpu_fallback = false;
  absl::Duration queued = absl::ZeroDuration();    // from Submit until a worker took the query
  absl::Duration executed = absl::ZeroDuration();  // on the engine
};

// A unit of admission: one query (Search, one stream message) or the valid queries of a batch. A
// batch takes one queue slot; its queries may run in parallel on several workers.
struct QueryJob {
  std::vector<QueryTask> tasks;
  // The call's deadline and cancellation flag, shared by every task; engines poll both.
  absl::Time deadline = absl::InfiniteFuture();
  std::shared_ptr<const std::atomic<bool>> cancelled;
  // Called exactly once per task with its index in `tasks`, from an executor thread. Tasks of one
  // job may complete concurrently on different threads.
  std::function<void(size_t task, QueryOutcome outcome)> on_done;
};

class QueryExecutor {
 public:
  virtual ~QueryExecutor() = default;

  // Admits `job` or refuses it whole, without waiting: RESOURCE_EXHAUSTED when the admission queue
  // is full, UNAVAILABLE once Shutdown has begun. A refused job's on_done is never called.
  virtual absl::Status Submit(QueryJob job) = 0;

  // Jobs admitted and not yet fully started.
  virtual size_t queue_depth() const = 0;
  // Jobs that may wait before Submit refuses new ones (the options' queue_capacity, resolved).
  virtual size_t queue_capacity() const = 0;

  // Engines queries may run on, e.g. {"cpu"} or {"cpu", "gpu"}.
  virtual std::vector<std::string> engines() const = 0;

  // Refuses new jobs, finishes every admitted one (each on_done is called) and stops the threads.
  // Idempotent.
  virtual void Shutdown() = 0;
};

}  // namespace tandem::scheduler
