// File: scatter_gather.h
//
// One query over every shard (Ding et al. 2009, Figure 1; Dean and Barroso, "The Tail at Scale",
// for hedging): the query goes to one replica of each shard, with the caller's deadline less the
// broker's own budget, and the shards' top-k are merged exactly (shard_merge.h).
//
//   - Hedging: a shard that has not answered after its hedge delay (by default the p95 of its
//     recent answers) gets the same request on a second replica; the first answer wins and the
//     other call is cancelled.
//   - Retries: a replica that fails (UNAVAILABLE, an internal error, overload) is replaced by
//     another replica of its shard while the deadline allows, so a node that dies under load costs
//     no query. UNAVAILABLE also ejects it (ReplicaSet::ReportUnavailable).
//   - A query error that every shard would give (INVALID_ARGUMENT: a bad k, too many terms) is the
//     answer.
//   - A shard whose every replica refuses the query for overload (RESOURCE_EXHAUSTED) makes the
//     answer RESOURCE_EXHAUSTED: overload goes back to the caller, not into partial answers.
//   - A shard that cannot answer in time is missing: the answer is the other shards' top-k, marked
//     degraded with the missing shards named, or UNAVAILABLE when the request requires a complete
//     answer or no shard answered.
//   - AND+OR runs as on one index (section 8 there): AND on every shard; only when the shards'
//     AND hits sum to fewer than k does an OR pass run on every shard.
//
//   ScatterGather fanout(replicas, timers, &metrics, {.deadline_budget = absl::Milliseconds(2)});
//   fanout.Search(request, deadline, [](absl::StatusOr<SearchResponse> answer) { ... });
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "broker/broker_metrics.h"
#include "broker/replica_set.h"
#include "broker/timer_queue.h"
#include "tandem/v1/search.pb.h"

namespace tandem::broker {

// When a second replica of a shard gets a query that the first has not answered yet.
struct HedgePolicy {
  enum class Kind { kOff, kAuto, kFixed };
  Kind kind = Kind::kAuto;
  absl::Duration delay;  // kFixed
};
// Flag syntax: "off", "auto" (each shard's p95 over its last answers) or a duration ("5ms").
bool AbslParseFlag(absl::string_view text, HedgePolicy* policy, std::string* error);
std::string AbslUnparseFlag(const HedgePolicy& policy);

struct ScatterGatherOptions {
  // Taken off the caller's deadline for the shards' calls: the time the broker needs to merge and
  // answer after the last shard.
  absl::Duration deadline_budget = absl::Milliseconds(2);
  HedgePolicy hedge;
  // Calls to one shard for one query (the first, hedges and retries).
  int max_attempts = 3;
};

// The p95 of a shard's recent answer times (the last 512), for auto hedging. Add is lock-free
// (every answer of every query calls it); P95 reads the ring without stopping writers, which may
// mix in a value or two from the moment it reads: fine for a hedge delay.
class LatencyWindow {
 public:
  void Add(absl::Duration d);
  // Nothing until 32 answers were seen.
  std::optional<absl::Duration> P95() const;

 private:
  static constexpr size_t kSize = 512;
  std::atomic<int64_t> ring_[kSize] = {};  // nanoseconds
  std::atomic<uint64_t> added_{0};
  mutable absl::Mutex mu_;  // the cached p95
  mutable std::optional<absl::Duration> p95_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t p95_at_ ABSL_GUARDED_BY(mu_) = 0;
};

class QueryRun;

// Stops a query's calls to the shards when its caller gives up (a cancelled call); the query then
// ends at once with CANCELLED. Empty for a query that never reached the shards (answered from the
// cache, or refused).
class CancelHandle {
 public:
  CancelHandle() = default;
  explicit CancelHandle(std::weak_ptr<QueryRun> run) : run_(std::move(run)) {}
  // A query whose calls to the shards start later (--global-stats gathers statistics first).
  explicit CancelHandle(std::function<void()> cancel) : cancel_(std::move(cancel)) {}
  void Cancel() const;

 private:
  std::weak_ptr<QueryRun> run_;
  std::function<void()> cancel_;
};

class ScatterGather {
 public:
  using Done = std::function<void(absl::StatusOr<tandem::v1::SearchResponse>)>;

  // The references must outlive every query.
  ScatterGather(ReplicaSet& replicas, TimerQueue& timers, BrokerMetrics* metrics,
                ScatterGatherOptions options);
  // Waits for the queries still running (their deadlines bound them).
  ~ScatterGather();

  // Runs `request` on the collection and calls `done` exactly once, on a gRPC or timer thread (or
  // on this one, when no shard can be asked). `deadline` is the caller's.
  CancelHandle Search(const tandem::v1::SearchRequest& request, absl::Time deadline, Done done);

  // The hedge delay of `shard` now (nothing: no hedge).
  std::optional<absl::Duration> HedgeDelay(uint32_t shard) const;

 private:
  friend class QueryRun;
  LatencyWindow& Latency(uint32_t shard);

  ReplicaSet& replicas_;
  TimerQueue& timers_;
  BrokerMetrics* metrics_;
  const ScatterGatherOptions options_;
  mutable absl::Mutex mu_;
  std::vector<std::unique_ptr<LatencyWindow>> latency_ ABSL_GUARDED_BY(mu_);
  int running_ ABSL_GUARDED_BY(mu_) = 0;  // QueryRuns alive
};

}  // namespace tandem::broker
