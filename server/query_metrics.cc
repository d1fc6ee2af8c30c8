#include "server/query_metrics.h"

#include <string>
#include <utility>

#include "rpc/metric_series.h"
#include "rpc/status_mapping.h"

namespace tandem::server {
namespace {

using rpc::metrics::Counters;
using rpc::metrics::Gauges;
using rpc::metrics::Histograms;
using rpc::metrics::LatencyBuckets;
using rpc::metrics::NameSlot;
using rpc::metrics::Str;

// The engines' modes, then the mode of calls refused before their request was parsed (counted
// only, on engine "none"; a slot so that a flood of them takes no lookup by labels).
constexpr const char* kModeNames[] = {"and", "or", "and_or", "unparsed"};
constexpr int kEngineModes = 3;

}  // namespace

QueryMetrics::QueryMetrics(prometheus::Registry& registry, const BuildInfo& build,
                           const std::vector<std::string>& engines)
    : queries_(Counters(registry, "tandem_queries_total",
                        "Queries answered, by query mode, engine and gRPC status code.")),
      queue_wait_(Histograms(registry, "tandem_query_queue_wait_seconds",
                             "Time queries waited in the admission queue.")),
      execution_(
          Histograms(registry, "tandem_query_execution_seconds", "Time queries ran on an engine.")),
      duration_(Histograms(registry, "tandem_query_duration_seconds",
                           "Time from a query's arrival to its answer.")),
      postings_(Counters(registry, "tandem_postings_decoded_total",
                         "DocIDs decoded from compressed posting-list blocks.")),
      rejected_(Counters(registry, "tandem_rejected_queries_total", "Queries not run, by reason.")),
      gpu_fallbacks_(Counters(registry, "tandem_gpu_fallbacks_total",
                              "Queries the GPU engine failed (out of memory, CUDA fault) and the "
                              "CPU engine answered instead.")
                         .Add({})),
      in_flight_(
          Gauges(registry, "tandem_queries_in_flight", "Queries admitted and not yet answered.")
              .Add({})),
      queue_depth_(Gauges(registry, "tandem_admission_queue_depth",
                          "Jobs (queries or batches) waiting for a worker.")
                       .Add({})),
      queue_capacity_(Gauges(registry, "tandem_admission_queue_capacity",
                             "Jobs the admission queue holds before it refuses new ones.")
                          .Add({})),
      index_documents_(
          Gauges(registry, "tandem_index_documents", "Documents in the served index.").Add({})),
      index_terms_(
          Gauges(registry, "tandem_index_terms", "Distinct terms in the served index.").Add({})),
      index_postings_(
          Gauges(registry, "tandem_index_postings", "Postings in the served index.").Add({})),
      index_bytes_(Gauges(registry, "tandem_index_size_bytes", "Bytes of the served index's files.")
                       .Add({})) {
  Gauges(registry, "tandem_build_info", "Build of this server; the value is always 1.")
      .Add({{"version", build.version},
            {"commit", build.commit},
            {"gpu", build.gpu ? "true" : "false"}})
      .Set(1);
  for (absl::string_view reason :
       {reject_reason::kInvalidArgument, reject_reason::kQueueFull, reject_reason::kDraining,
        reject_reason::kExpiredInQueue, reject_reason::kNoGpu, reject_reason::kInFlightLimit,
        reject_reason::kMemoryBreaker, reject_reason::kMalformed}) {
    rejected_series_.emplace_back(reason, &rejected_.Add({{"reason", Str(reason)}}));
  }
  engine_names_ = engines;
  engine_names_.push_back("none");
  query_series_ = std::make_unique<std::array<QuerySeries, kModes>[]>(engine_names_.size());
  for (size_t e = 0; e < engine_names_.size(); ++e) {
    const std::string& engine = engine_names_[e];
    const bool real = e < engines.size();  // "none" has no histograms nor postings
    postings_series_.push_back(real ? &postings_.Add({{"engine", engine}}) : nullptr);
    if (!real) continue;
    for (int m = 0; m < kEngineModes; ++m) {
      QuerySeries& series = query_series_[e][m];
      const prometheus::Labels labels{{"mode", kModeNames[m]}, {"engine", engine}};
      series.queries[0] =
          &queries_.Add({{"mode", kModeNames[m]}, {"engine", engine}, {"code", "OK"}});
      series.queue_wait = &queue_wait_.Add(labels, LatencyBuckets());
      series.execution = &execution_.Add(labels, LatencyBuckets());
      series.duration = &duration_.Add(labels, LatencyBuckets());
    }
  }
}

int QueryMetrics::EngineSlot(absl::string_view engine) const {
  for (size_t i = 0; i < engine_names_.size(); ++i) {
    if (engine == engine_names_[i]) return static_cast<int>(i);
  }
  return -1;
}

prometheus::Counter& QueryMetrics::QueryCounter(absl::string_view mode, absl::string_view engine,
                                                grpc::StatusCode code) {
  auto labels = [&]() -> prometheus::Labels {
    return {{"mode", Str(mode)}, {"engine", Str(engine)}, {"code", Str(rpc::GrpcCodeName(code))}};
  };
  const int e = EngineSlot(engine), m = NameSlot(kModeNames, mode), c = static_cast<int>(code);
  const bool cached = e >= 0 && m >= 0 && c >= 0 && c < kCodes;
  return rpc::metrics::Series(cached ? &query_series_[e][m].queries[c] : nullptr, queries_, labels);
}

void QueryMetrics::SetIndex(const index::Index& index) {
  index_documents_.Set(index.num_docs());
  index_terms_.Set(static_cast<double>(index.num_terms()));
  index_postings_.Set(static_cast<double>(index.stats().num_postings));
  index_bytes_.Set(static_cast<double>(index.index_bytes()));
}

void QueryMetrics::SetQueueCapacity(size_t capacity) {
  queue_capacity_.Set(static_cast<double>(capacity));
}

void QueryMetrics::SetQueueDepth(size_t depth) { queue_depth_.Set(static_cast<double>(depth)); }

void QueryMetrics::SetInFlight(int64_t queries) { in_flight_.Set(static_cast<double>(queries)); }

void QueryMetrics::RecordQuery(const QueryRecord& record) {
  QueryCounter(record.mode, record.engine, record.code).Increment();
  if (record.gpu_fallback) gpu_fallbacks_.Increment();
  if (!record.reached_engine) return;
  const int e = EngineSlot(record.engine), m = NameSlot(kModeNames, record.mode);
  const bool cached = e >= 0 && m >= 0 && query_series_[e][m].duration != nullptr;
  const prometheus::Labels labels =
      cached ? prometheus::Labels{}
             : prometheus::Labels{{"mode", Str(record.mode)}, {"engine", Str(record.engine)}};
  auto histogram =
      [&](prometheus::Histogram* QuerySeries::*member,
          prometheus::Family<prometheus::Histogram>& family) -> prometheus::Histogram& {
    return cached ? *(query_series_[e][m].*member) : family.Add(labels, LatencyBuckets());
  };
  histogram(&QuerySeries::queue_wait, queue_wait_).Observe(absl::ToDoubleSeconds(record.queued));
  if (record.started) {
    histogram(&QuerySeries::execution, execution_).Observe(absl::ToDoubleSeconds(record.executed));
  }
  histogram(&QuerySeries::duration, duration_).Observe(absl::ToDoubleSeconds(record.total));
  if (record.postings_decoded > 0) {
    prometheus::Counter& postings = e >= 0 && postings_series_[e] != nullptr
                                        ? *postings_series_[e]
                                        : postings_.Add({{"engine", Str(record.engine)}});
    postings.Increment(static_cast<double>(record.postings_decoded));
  }
}

void QueryMetrics::RecordRejection(absl::string_view reason, uint64_t queries) {
  for (const auto& [name, counter] : rejected_series_) {
    if (name == reason) {
      counter->Increment(static_cast<double>(queries));
      return;
    }
  }
  rejected_.Add({{"reason", Str(reason)}}).Increment(static_cast<double>(queries));
}

}  // namespace tandem::server
