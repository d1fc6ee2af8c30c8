// File: query_dispatcher.h
//
// What the three query RPCs (Search, SearchBatch, SearchStream) share: request validation, the
// drain state, in-flight accounting, admission through the QueryExecutor, building SearchResponse
// from an engine's result, and the metrics of every query. The RPC handlers only adapt it to their
// call shape.
//
// Dispatch calls `done` exactly once per request unless it refuses the whole call:
//   - invalid requests are answered at once (INVALID_ARGUMENT) from the calling thread;
//   - the valid ones are admitted as one executor job and answered from executor threads.
// While draining, when the executor's queue is full, or when the call's queries would pass the
// in-flight limits (RequestLimits::max_queries_in_flight, max_response_bytes_in_flight: every
// query of a batch counts), or when the node's memory breaker cannot take the call's responses
// even after the caches gave way (DispatcherMemory::responses), Dispatch returns UNAVAILABLE or
// RESOURCE_EXHAUSTED and calls nothing.
// Admissible() answers the same question, without a request, before one is parsed.
//
//   absl::Status admitted = dispatcher.Dispatch({&request}, call,
//       [](size_t i, absl::StatusOr<SearchResponse> response) { ... });
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "absl/types/span.h"
#include "base/memory_breaker.h"
#include "filter/filter_cache.h"
#include "index/index.h"
#include "live/live_index.h"
#include "rpc/rate_limited_log.h"
#include "scheduler/query_executor.h"
#include "server/query_metrics.h"
#include "server/request_validation.h"
#include "tandem/v1/search.pb.h"

namespace tandem::server {

// The RPC a query arrived on.
struct CallContext {
  absl::Time arrival = absl::Now();
  absl::Time deadline = absl::InfiniteFuture();
  // Set when the caller cancels; may be null.
  std::shared_ptr<const std::atomic<bool>> cancelled;
};

using QueryDone =
    std::function<void(size_t request, absl::StatusOr<tandem::v1::SearchResponse> response)>;

// What queries run against: an index, the executor whose workers search it, and the cache of its
// filters' bitmaps. A node that loads a new index switches to a new target whole (SwitchTarget);
// each admitted call holds the target it was admitted to until its last query is answered.
struct QueryTarget {
  // The references must outlive the target. `filters` evaluates the filters of requests
  // (EngineSet::filters); null: on the CPU. `cache`: the filter cache's budget and breaker account.
  QueryTarget(const index::Index& index, scheduler::QueryExecutor& executor,
              filter::FilterEvaluator filters = nullptr, filter::FilterCacheOptions cache = {})
      : index(index), executor(executor), filters(index.attributes(), std::move(filters), cache) {}

  const index::Index& index;
  scheduler::QueryExecutor& executor;
  filter::FilterCache filters;
  // GetIndexInfoResponse.generation: 1 for a node's first index, one more for each loaded after.
  uint64_t generation = 1;
  // The live index the engines answer from, when the node takes writes (its live documents are
  // the index's documents); null otherwise.
  const live::LiveIndex* live = nullptr;
};

// Where the dispatcher's memory is bounded: its filter cache's budget and breaker account, and
// the node's memory breaker account its responses are reserved from (null: the response limit
// alone bounds them). The accounts must outlive the dispatcher.
struct DispatcherMemory {
  filter::FilterCacheOptions filter_cache;
  base::MemoryBreaker::Account* responses = nullptr;
};

class QueryDispatcher {
 public:
  // All references must outlive the dispatcher. `filters` evaluates the filters of requests
  // (EngineSet::filters); null: on the CPU.
  QueryDispatcher(const index::Index& index, scheduler::QueryExecutor& executor,
                  QueryMetrics& metrics, const RequestLimits& limits, rpc::LogSink log = nullptr,
                  filter::FilterEvaluator filters = nullptr, DispatcherMemory memory = {});
  // A dispatcher whose target may be switched; `metrics` must outlive it.
  // `responses`: the memory breaker's account of the responses (DispatcherMemory::responses).
  QueryDispatcher(std::shared_ptr<QueryTarget> target, QueryMetrics& metrics,
                  const RequestLimits& limits, rpc::LogSink log = nullptr,
                  base::MemoryBreaker::Account* responses = nullptr);

  // The target new calls are admitted to.
  std::shared_ptr<QueryTarget> target() const;
  // From now on calls are admitted to `target`; calls admitted before run to completion on the
  // old one, which is released (its shared_ptr) when the last of them is answered. Returns the old.
  std::shared_ptr<QueryTarget> SwitchTarget(std::shared_ptr<QueryTarget> target);

  // A query that fails with DATA_LOSS (a damaged list: it fails until the index is rebuilt) is
  // counted like any other (tandem_queries_total{code="DATA_LOSS"}) and its message logged once,
  // for the first kMaxLoggedDataLoss distinct messages.
  static constexpr size_t kMaxLoggedDataLoss = 256;

  const RequestLimits& limits() const { return limits_; }

  // `requests` need only live until Dispatch returns. `done` may be called concurrently for
  // different requests.
  absl::Status Dispatch(absl::Span<const tandem::v1::SearchRequest* const> requests,
                        const CallContext& call, QueryDone done);

  // Whether a call would be refused now whatever it asks (draining, a full queue, in-flight limits
  // reached), so that an overloaded node refuses it before parsing it. Racy by nature: Dispatch
  // checks again.
  absl::Status Admissible() const;

  // Counts a whole call refused before dispatch (an oversized batch) in the metrics.
  void RecordRefusedCall(absl::Span<const tandem::v1::SearchRequest* const> requests,
                         const absl::Status& status);
  // Counts a call refused before its request was parsed (by Admissible, or because it does not
  // parse): mode "unparsed", one query.
  void RecordUnparsedCall(const absl::Status& status);

  // Estimated bytes of the responses of admitted, unanswered queries (the breaker's measure).
  uint64_t response_bytes_in_flight() const;

  // From now on Dispatch refuses new work with UNAVAILABLE; admitted queries run to completion.
  void StartDraining();
  bool draining() const;
  // Waits until no admitted query is unanswered, or until `deadline`. True when idle.
  bool WaitForIdle(absl::Time deadline);
  int64_t in_flight() const;

 private:
  // One admitted job's shared state: the per-request bookkeeping its completions need.
  struct JobState;

  void Complete(JobState& job, size_t task, scheduler::QueryOutcome outcome);
  void LogDataLossOnce(absl::string_view message);
  // RESOURCE_EXHAUSTED when `queries` more queries, taking `bytes`, would pass a limit.
  absl::Status CheckInFlightLimits(int64_t queries, uint64_t bytes) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Undoes an admission of `queries` taking `bytes`; `reserved`: and the bytes' reservation in the
  // memory breaker.
  void ReleaseInFlight(int64_t queries, uint64_t bytes, bool reserved = true);

  mutable absl::Mutex target_mu_;
  std::shared_ptr<QueryTarget> target_ ABSL_GUARDED_BY(target_mu_);
  QueryMetrics& metrics_;
  const RequestLimits limits_;
  base::MemoryBreaker::Account* const breaker_;
  mutable absl::Mutex mu_;
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  int64_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t response_bytes_in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  const rpc::LogSink log_;
  absl::Mutex log_mu_;
  absl::flat_hash_set<std::string> logged_data_loss_ ABSL_GUARDED_BY(log_mu_);
};

}  // namespace tandem::server
