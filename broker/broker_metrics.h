// File: broker_metrics.h
//
// The broker's metrics, named as the node's (server/query_metrics.h: prefix `tandem_`, base units,
// `_total` on counters):
//
//   tandem_broker_queries_total{method,outcome}        queries answered; outcome "ok", "degraded"
//                                                      (some shards missing) or the gRPC code
//   tandem_broker_query_duration_seconds{method}       arrival to answer
//   tandem_broker_shard_duration_seconds{shard}        one shard's answer, hedges and retries in
//   tandem_broker_hedges_total{shard}                  second requests sent after the hedge delay
//   tandem_broker_retries_total{shard}                 requests sent again after a replica failed
//   tandem_broker_shard_failures_total{shard,code}     shards that did not answer a query
//   tandem_broker_degraded_answers_total               answers without some shards
//   tandem_broker_cache_requests_total{result}         result cache "hit" or "miss"
//   tandem_broker_replicas{shard,state}                replicas "healthy" or "ejected"
//   tandem_build_info{version,commit,gpu} 1
//
// `method` is "search", "search_batch" (per query of the batch) or "search_stream".
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/replica_set.h"
#include "grpcpp/support/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace tandem::broker {

class BrokerMetrics {
 public:
  explicit BrokerMetrics(prometheus::Registry& registry);

  // outcome: "ok", "degraded", or the code's name when `code` is not OK.
  void RecordQuery(absl::string_view method, grpc::StatusCode code, bool degraded,
                   absl::Duration duration);
  void RecordShard(uint32_t shard, absl::Duration duration);
  void RecordShardFailure(uint32_t shard, grpc::StatusCode code);
  void RecordHedge(uint32_t shard);
  void RecordRetry(uint32_t shard);
  void RecordCache(bool hit);
  // The replicas of every shard of `topology`, and the ejected ones among `all`.
  void SetReplicas(const Topology& topology);

 private:
  struct ShardSeries {
    prometheus::Histogram* duration;
    prometheus::Counter* hedges;
    prometheus::Counter* retries;
  };
  ShardSeries& Shard(uint32_t shard);
  static int MethodSlot(absl::string_view method);

  static constexpr int kMethods = 3;  // search, search_batch, search_stream

  prometheus::Family<prometheus::Counter>& queries_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Histogram>& shard_duration_;
  prometheus::Family<prometheus::Counter>& hedges_;
  prometheus::Family<prometheus::Counter>& retries_;
  prometheus::Family<prometheus::Counter>& shard_failures_;
  prometheus::Counter& degraded_;
  prometheus::Counter& cache_hits_;
  prometheus::Counter& cache_misses_;
  prometheus::Family<prometheus::Gauge>& replicas_;
  // The series every query touches, looked up once: [method][0 ok, 1 degraded], [method].
  prometheus::Counter* answered_[kMethods][2];
  prometheus::Histogram* durations_[kMethods];
  // Per shard, created once (under mu_) and then read without a lock.
  static constexpr uint32_t kMaxShards = 4096;
  std::unique_ptr<std::atomic<ShardSeries*>[]> shard_series_;
  absl::Mutex mu_;
  std::vector<std::unique_ptr<ShardSeries>> shards_ ABSL_GUARDED_BY(mu_);
  uint32_t replica_shards_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tandem::broker
