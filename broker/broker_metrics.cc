// File: broker_metrics.cc
#include "broker/broker_metrics.h"

#include "absl/strings/str_cat.h"
#include "base/version.h"
#include "rpc/metric_series.h"
#include "rpc/status_mapping.h"

namespace tandem::broker {

namespace {
constexpr absl::string_view kMethodNames[] = {"search", "search_batch", "search_stream"};
}  // namespace

using rpc::metrics::Counters;
using rpc::metrics::Gauges;
using rpc::metrics::Histograms;
using rpc::metrics::LatencyBuckets;

BrokerMetrics::BrokerMetrics(prometheus::Registry& registry)
    : queries_(Counters(registry, "tandem_broker_queries_total",
                        "Queries the broker answered, by method and outcome (ok, degraded, or "
                        "the gRPC code).")),
      duration_(Histograms(registry, "tandem_broker_query_duration_seconds",
                           "Time from a query's arrival at the broker to its answer.")),
      shard_duration_(Histograms(registry, "tandem_broker_shard_duration_seconds",
                                 "Time one shard took to answer a query, hedges and retries in.")),
      hedges_(Counters(registry, "tandem_broker_hedges_total",
                       "Second requests sent to another replica after the hedge delay.")),
      retries_(Counters(registry, "tandem_broker_retries_total",
                        "Requests sent to another replica after one failed.")),
      shard_failures_(Counters(registry, "tandem_broker_shard_failures_total",
                               "Shards that did not answer a query, by the last gRPC code.")),
      degraded_(Counters(registry, "tandem_broker_degraded_answers_total",
                         "Answers without some shards (marked degraded).")
                    .Add({})),
      cache_hits_(Counters(registry, "tandem_broker_cache_requests_total",
                           "Result cache lookups, by result.")
                      .Add({{"result", "hit"}})),
      cache_misses_(
          Counters(registry, "tandem_broker_cache_requests_total", "").Add({{"result", "miss"}})),
      replicas_(Gauges(registry, "tandem_broker_replicas",
                       "Replicas of each shard, by state (healthy or ejected).")),
      shard_series_(new std::atomic<ShardSeries*>[kMaxShards]()) {
  Gauges(registry, "tandem_build_info", "Build of this program; the value is always 1.")
      .Add({{"version", base::Version()}, {"commit", base::Commit()}, {"gpu", "false"}})
      .Set(1);
  for (int m = 0; m < kMethods; ++m) {
    const std::string method(kMethodNames[m]);
    durations_[m] = &duration_.Add({{"method", method}}, LatencyBuckets());
    answered_[m][0] = &queries_.Add({{"method", method}, {"outcome", "ok"}});
    answered_[m][1] = &queries_.Add({{"method", method}, {"outcome", "degraded"}});
  }
}

int BrokerMetrics::MethodSlot(absl::string_view method) {
  for (int m = 0; m < kMethods; ++m) {
    if (method == kMethodNames[m]) return m;
  }
  return 0;
}

void BrokerMetrics::RecordQuery(absl::string_view method, grpc::StatusCode code, bool degraded,
                                absl::Duration duration) {
  const int m = MethodSlot(method);
  if (code == grpc::StatusCode::OK) {
    answered_[m][degraded ? 1 : 0]->Increment();
    if (degraded) degraded_.Increment();
  } else {
    queries_
        .Add({{"method", std::string(kMethodNames[m])},
              {"outcome", std::string(rpc::GrpcCodeName(code))}})
        .Increment();
  }
  durations_[m]->Observe(absl::ToDoubleSeconds(duration));
}

BrokerMetrics::ShardSeries& BrokerMetrics::Shard(uint32_t shard) {
  shard = std::min(shard, kMaxShards - 1);
  if (ShardSeries* series = shard_series_[shard].load(std::memory_order_acquire)) return *series;
  absl::MutexLock lock(&mu_);
  while (shards_.size() <= shard) {
    const std::string label = absl::StrCat(shards_.size());
    shards_.push_back(std::make_unique<ShardSeries>(
        ShardSeries{&shard_duration_.Add({{"shard", label}}, LatencyBuckets()),
                    &hedges_.Add({{"shard", label}}), &retries_.Add({{"shard", label}})}));
    shard_series_[shards_.size() - 1].store(shards_.back().get(), std::memory_order_release);
  }
  return *shards_[shard];
}

void BrokerMetrics::RecordShard(uint32_t shard, absl::Duration duration) {
  Shard(shard).duration->Observe(absl::ToDoubleSeconds(duration));
}

void BrokerMetrics::RecordShardFailure(uint32_t shard, grpc::StatusCode code) {
  shard_failures_
      .Add({{"shard", absl::StrCat(shard)}, {"code", std::string(rpc::GrpcCodeName(code))}})
      .Increment();
}

void BrokerMetrics::RecordHedge(uint32_t shard) { Shard(shard).hedges->Increment(); }
void BrokerMetrics::RecordRetry(uint32_t shard) { Shard(shard).retries->Increment(); }
void BrokerMetrics::RecordCache(bool hit) { (hit ? cache_hits_ : cache_misses_).Increment(); }

void BrokerMetrics::SetReplicas(const Topology& topology) {
  absl::MutexLock lock(&mu_);
  // Shards gone from the topology read 0, not their last count.
  for (uint32_t s = 0; s < std::max(replica_shards_, topology.shards); ++s) {
    double healthy = 0, ejected = 0;
    if (s < topology.shards) {
      for (const auto& r : topology.replicas[s]) (r->healthy() ? healthy : ejected) += 1;
    }
    replicas_.Add({{"shard", absl::StrCat(s)}, {"state", "healthy"}}).Set(healthy);
    replicas_.Add({{"shard", absl::StrCat(s)}, {"state", "ejected"}}).Set(ejected);
  }
  replica_shards_ = std::max(replica_shards_, topology.shards);
}

}  // namespace tandem::broker
