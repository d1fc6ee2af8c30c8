// File: metrics.h
//
// The server's Prometheus metrics (prometheus-cpp), named by Prometheus conventions: prefix
// `tandem_`, base units (seconds, bytes), `_total` on counters. Exposed on --metrics-listen at
// /metrics.
//
//   tandem_queries_total{mode,engine,code}            queries answered, by gRPC code ("OK", ...)
//   tandem_query_queue_wait_seconds{mode,engine}       time in the admission queue
//   tandem_query_execution_seconds{mode,engine}        time on the engine
//   tandem_query_duration_seconds{mode,engine}         arrival to response
//   tandem_postings_decoded_total{engine}              docIDs decoded from posting blocks
//   tandem_queries_in_flight                           admitted and not yet answered
//   tandem_admission_queue_depth / _capacity           jobs waiting for a worker / the bound
//   tandem_rejected_queries_total{reason}              queries not run (reject_reason below)
//   tandem_index_documents / _terms / _postings / _size_bytes
//   tandem_build_info{version,commit,gpu} 1            gpu: "true" when a GPU engine serves queries
//
// `mode` is "and", "or", "and_or" ("invalid" for an unknown value); `engine` is the engine that ran
// the query, "none" when it never reached one. The histograms cover queries that reached an
// engine's queue; rejected ones are counted only.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "grpcpp/support/status.h"
#include "index/index.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace tandem::server {

// Why a query was not run: tandem_rejected_queries_total's `reason` label values.
namespace reject_reason {
inline constexpr absl::string_view kInvalidArgument = "invalid_argument";
inline constexpr absl::string_view kQueueFull = "queue_full";
inline constexpr absl::string_view kDraining = "draining";
// Its deadline passed or its caller cancelled while it waited in the queue.
inline constexpr absl::string_view kExpiredInQueue = "expired_in_queue";
// It asked for the GPU engine on a node without one.
inline constexpr absl::string_view kNoGpu = "no_gpu";
}  // namespace reject_reason

struct BuildInfo {
  std::string version;
  std::string commit;
  bool gpu = false;
};

// One answered query, as the metrics see it.
struct QueryRecord {
  absl::string_view mode;
  absl::string_view engine;  // "none" when it never reached an engine
  grpc::StatusCode code = grpc::StatusCode::OK;
  bool reached_engine = false;  // went through the queue (queue time is meaningful)
  bool started = false;         // ran on the engine (execution time is meaningful)
  absl::Duration queued = absl::ZeroDuration();
  absl::Duration executed = absl::ZeroDuration();
  absl::Duration total = absl::ZeroDuration();
  uint64_t postings_decoded = 0;
  bool gpu_fallback = false;  // the GPU failed and the CPU answered
};

class ServerMetrics {
 public:
  // `engines` pre-creates series so dashboards see zeros before the first query.
  ServerMetrics(const BuildInfo& build, const std::vector<std::string>& engines);

  std::shared_ptr<prometheus::Registry> registry() const { return registry_; }

  void SetIndex(const index::Index& index);
  void SetQueueCapacity(size_t capacity);
  void SetQueueDepth(size_t depth);
  void SetInFlight(int64_t queries);
  void RecordQuery(const QueryRecord& record);
  void RecordRejection(absl::string_view reason, uint64_t queries = 1);

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& queries_;
  prometheus::Family<prometheus::Histogram>& queue_wait_;
  prometheus::Family<prometheus::Histogram>& execution_;
  prometheus::Family<prometheus::Histogram>& duration_;
  prometheus::Family<prometheus::Counter>& postings_;
  prometheus::Family<prometheus::Counter>& rejected_;
  prometheus::Counter& gpu_fallbacks_;
  prometheus::Gauge& in_flight_;
  prometheus::Gauge& queue_depth_;
  prometheus::Gauge& queue_capacity_;
  prometheus::Gauge& index_documents_;
  prometheus::Gauge& index_terms_;
  prometheus::Gauge& index_postings_;
  prometheus::Gauge& index_bytes_;
};

}  // namespace tandem::server
