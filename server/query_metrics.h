// File: query_metrics.h
//
// The metrics of the queries a node answers (prometheus-cpp), named by Prometheus conventions:
// prefix `tandem_`, base units (seconds, bytes), `_total` on counters. Exposed on --metrics-listen
// at /metrics beside the scheduler's (scheduler_metrics.h).
//
//   tandem_queries_total{mode,engine,code}            queries answered, by gRPC code ("OK", ...)
//   tandem_query_queue_wait_seconds{mode,engine}       time in the admission queue
//   tandem_query_execution_seconds{mode,engine}        time on the engine
//   tandem_query_duration_seconds{mode,engine}         arrival to response
//   tandem_postings_decoded_total{engine}              docIDs decoded from posting blocks
//   tandem_gpu_fallbacks_total                         GPU failures answered by the CPU engine
//   tandem_queries_in_flight                           admitted and not yet answered
//   tandem_admission_queue_depth                       jobs waiting for a worker
//   tandem_admission_queue_capacity                    the bound on them
//   tandem_rejected_queries_total{reason}              queries not run (reject_reason below)
//   tandem_index_documents                             the served index: documents,
//   tandem_index_terms                                 terms,
//   tandem_index_postings                              postings
//   tandem_index_size_bytes                            and bytes on disk
//   tandem_build_info{version,commit,gpu} 1            gpu: "true" when a GPU engine serves queries
//
// `mode` is "and", "or", "and_or" ("invalid" for an unknown value, "unparsed" for a call refused
// before its request was parsed: overload, or bytes that do not parse); `engine` is the engine that
// ran the query, "none" when it never reached one. The histograms cover queries that reached an
// engine's queue; rejected ones are counted only.
//
//   QueryMetrics metrics(*registry, {.version = "0.1.0", .commit = "...", .gpu = true}, {"cpu"});
//   metrics.RecordQuery({.mode = "or", .engine = "cpu", .code = grpc::StatusCode::OK, ...});
#pragma once

#include <array>
#include <atomic>
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
// Admitting it would pass --max-queries-in-flight (every query of a batch counts).
inline constexpr absl::string_view kInFlightLimit = "in_flight_limit";
// Its response would pass --max-response-bytes-in-flight, the memory circuit breaker.
inline constexpr absl::string_view kMemoryBreaker = "memory_breaker";
// Its request did not parse as the method's message.
inline constexpr absl::string_view kMalformed = "malformed_request";
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

class QueryMetrics {
 public:
  // `engines` pre-creates series so dashboards see zeros before the first query. `registry` must
  // outlive the metrics.
  QueryMetrics(prometheus::Registry& registry, const BuildInfo& build,
               const std::vector<std::string>& engines);

  void SetIndex(const index::Index& index);
  void SetQueueCapacity(size_t capacity);
  void SetQueueDepth(size_t depth);
  void SetInFlight(int64_t queries);
  void RecordQuery(const QueryRecord& record);
  void RecordRejection(absl::string_view reason, uint64_t queries = 1);

 private:
  static constexpr int kModes = 4;   // and, or, and_or, unparsed
  static constexpr int kCodes = 17;  // grpc::StatusCode 0..16
  // The series of one engine (or "none", the last slot) and mode.
  struct QuerySeries {
    prometheus::Histogram* queue_wait = nullptr;
    prometheus::Histogram* execution = nullptr;
    prometheus::Histogram* duration = nullptr;
    // By code, created at first use (only OK is exported up front).
    std::array<std::atomic<prometheus::Counter*>, kCodes> queries{};
  };

  // -1 for a label value without a cached slot.
  int EngineSlot(absl::string_view engine) const;
  prometheus::Counter& QueryCounter(absl::string_view mode, absl::string_view engine,
                                    grpc::StatusCode code);

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

  std::vector<std::string> engine_names_;  // the engines, then "none"
  // [engine slot][mode]; engines are known at construction.
  std::unique_ptr<std::array<QuerySeries, kModes>[]> query_series_;
  std::vector<prometheus::Counter*> postings_series_;  // by engine slot ("none" unused)
  std::vector<std::pair<absl::string_view, prometheus::Counter*>> rejected_series_;
};

}  // namespace tandem::server
