// File: subscription_metrics.h
//
// The metrics of standing queries (subscription_service.h), by the conventions of query_metrics.h:
//
//   tandem_subscriptions                                   subscriptions the node holds
//   tandem_subscription_changes_total{op,outcome}          Subscribe and Unsubscribe calls, op
//                                                          "subscribe" | "unsubscribe", outcome the
//                                                          gRPC code ("OK", "INVALID_ARGUMENT",
//                                                          ...)
//   tandem_match_documents_total{engine}                   documents matched, by the engine
//   tandem_match_duration_seconds{engine}                  time of each Match call on the engine
//   tandem_watch_streams                                   open Watch streams
//   tandem_watch_dropped_total                             events dropped for Watch streams that
//                                                          read too slowly
//
//   SubscriptionMetrics metrics(*registry, {"cpu", "gpu"});
//   metrics.RecordMatch("gpu", 512, absl::Microseconds(800));
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace tandem::server {

class SubscriptionMetrics {
 public:
  // `engines` pre-creates the match series so dashboards see zeros before the first call.
  // `registry` must outlive the metrics.
  SubscriptionMetrics(prometheus::Registry& registry, const std::vector<std::string>& engines);

  void SetSubscriptions(uint64_t subscriptions);
  // `op`: "subscribe" or "unsubscribe".
  void RecordChange(absl::string_view op, grpc::StatusCode outcome);
  void RecordMatch(absl::string_view engine, uint64_t documents, absl::Duration duration);
  void SetWatchStreams(int64_t streams);
  void RecordWatchDrops(uint64_t events);

 private:
  struct EngineSeries {
    std::string engine;
    prometheus::Counter* documents;
    prometheus::Histogram* duration;
  };

  prometheus::Gauge& subscriptions_;
  prometheus::Family<prometheus::Counter>& changes_;
  prometheus::Family<prometheus::Counter>& documents_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Gauge& watch_streams_;
  prometheus::Counter& watch_dropped_;
  std::vector<EngineSeries> engines_;
};

}  // namespace tandem::server
