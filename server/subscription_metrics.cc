#include "server/subscription_metrics.h"

#include "rpc/metric_series.h"
#include "rpc/status_mapping.h"

namespace tandem::server {

using rpc::metrics::Counters;
using rpc::metrics::Gauges;
using rpc::metrics::Histograms;
using rpc::metrics::LatencyBuckets;
using rpc::metrics::Str;

SubscriptionMetrics::SubscriptionMetrics(prometheus::Registry& registry,
                                         const std::vector<std::string>& engines)
    : subscriptions_(
          Gauges(registry, "tandem_subscriptions", "Subscriptions (standing queries) held.")
              .Add({})),
      changes_(Counters(registry, "tandem_subscription_changes_total",
                        "Subscribe and Unsubscribe calls, by outcome (gRPC status code).")),
      documents_(Counters(registry, "tandem_match_documents_total",
                          "Documents matched against the subscriptions, by engine.")),
      duration_(Histograms(registry, "tandem_match_duration_seconds",
                           "Time of each Match call on the matching engine.")),
      watch_streams_(Gauges(registry, "tandem_watch_streams", "Open Watch streams.").Add({})),
      watch_dropped_(Counters(registry, "tandem_watch_dropped_total",
                              "Matched documents dropped for Watch streams whose clients read too "
                              "slowly (their queue was full).")
                         .Add({})) {
  for (const char* op : {"subscribe", "unsubscribe"}) {
    changes_.Add({{"op", op}, {"outcome", "OK"}});
  }
  for (const std::string& engine : engines) {
    engines_.push_back({engine, &documents_.Add({{"engine", engine}}),
                        &duration_.Add({{"engine", engine}}, LatencyBuckets())});
  }
}

void SubscriptionMetrics::SetSubscriptions(uint64_t subscriptions) {
  subscriptions_.Set(static_cast<double>(subscriptions));
}

void SubscriptionMetrics::RecordChange(absl::string_view op, grpc::StatusCode outcome) {
  changes_.Add({{"op", Str(op)}, {"outcome", Str(rpc::GrpcCodeName(outcome))}}).Increment();
}

void SubscriptionMetrics::RecordMatch(absl::string_view engine, uint64_t documents,
                                      absl::Duration duration) {
  for (const EngineSeries& series : engines_) {
    if (series.engine == engine) {
      series.documents->Increment(static_cast<double>(documents));
      series.duration->Observe(absl::ToDoubleSeconds(duration));
      return;
    }
  }
  documents_.Add({{"engine", Str(engine)}}).Increment(static_cast<double>(documents));
  duration_.Add({{"engine", Str(engine)}}, LatencyBuckets())
      .Observe(absl::ToDoubleSeconds(duration));
}

void SubscriptionMetrics::SetWatchStreams(int64_t streams) {
  watch_streams_.Set(static_cast<double>(streams));
}

void SubscriptionMetrics::RecordWatchDrops(uint64_t events) {
  watch_dropped_.Increment(static_cast<double>(events));
}

}  // namespace tandem::server
