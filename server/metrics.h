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
// The hybrid CPU+GPU scheduler (HybridQueryExecutor; `processor` is "cpu" or "gpu"):
//   tandem_scheduler_decisions_total{queue,processor}  queries taken, by queue (cpu, gpu, shared;
//                                                      pinned: an engine hint) and processor
//   tandem_scheduler_steals_total{processor}           taken from the other processor's queue
//   tandem_scheduler_urgent_total{processor}           run ahead of their queue, deadline near
//   tandem_scheduler_cost_ratio{engine}                measured / predicted execution time
//   tandem_scheduler_deadline_misses_total             answered after the scheduling deadline
//   tandem_scheduler_queue_depth{queue}                queries waiting: cpu, gpu, shared queue
//   tandem_processor_workers{processor}                workers (GPU: queries in flight at once)
//   tandem_processor_busy_workers{processor}           workers running a query now
//   tandem_processor_busy_seconds_total{processor}     worker time on queries; utilization is
//                                                      rate(busy_seconds) / workers
//   tandem_cost_model_mean_relative_error{engine,source}
//                                                      the cost model's error on its evaluation
//                                                      queries ("training") or recent ones ("live")
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

  // The hybrid scheduler's series; `processor` and `engine` are "cpu" or "gpu", `queue` "cpu",
  // "gpu", "shared" or (decisions only) "pinned".
  void SetWorkers(absl::string_view processor, size_t workers);
  void RecordDecision(absl::string_view queue, absl::string_view processor, bool stolen,
                      bool urgent);
  void RecordCostRatio(absl::string_view engine, double predicted_ms, double measured_ms);
  void RecordDeadlineMiss();
  void SetSchedulerQueueDepth(absl::string_view queue, size_t depth);
  void SetBusyWorkers(absl::string_view processor, size_t busy);
  void AddBusyTime(absl::string_view processor, absl::Duration busy);
  // `source`: "training" (the model file's evaluation queries) or "live" (recent queries).
  void SetCostModelError(absl::string_view engine, absl::string_view source,
                         double mean_relative_error);

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
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Counter>& steals_;
  prometheus::Family<prometheus::Counter>& urgent_;
  prometheus::Family<prometheus::Histogram>& cost_ratio_;
  prometheus::Counter& deadline_misses_;
  prometheus::Family<prometheus::Gauge>& scheduler_queue_depth_;
  prometheus::Family<prometheus::Gauge>& workers_;
  prometheus::Family<prometheus::Gauge>& busy_workers_;
  prometheus::Family<prometheus::Counter>& busy_seconds_;
  prometheus::Family<prometheus::Gauge>& cost_model_error_;
};

}  // namespace tandem::server
