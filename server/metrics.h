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
//   tandem_scheduler_ratio_threshold{queue}            the cost-ratio thresholds after the load
//                                                      shift: a query whose predicted cpu/gpu cost
//                                                      ratio (per unit of capacity) is at or below
//                                                      queue="cpu" joins the CPU queue, at or above
//                                                      queue="gpu" the GPU queue
//   tandem_processor_workers{processor}                workers (GPU: queries in flight at once)
//   tandem_processor_busy_workers{processor}           workers running a query now
//   tandem_processor_busy_seconds_total{processor}     worker time on queries; utilization is
//                                                      rate(busy_seconds) / workers
//   tandem_processor_worker_seconds_total{processor,activity}
//                                                      all worker time by activity: engine (as
//                                                      busy_seconds), answer (building the
//                                                      response and completing the RPC),
//                                                      lock (waiting for the scheduler's lock or
//                                                      for a round serving the request),
//                                                      scheduling (rounds, cost-model updates),
//                                                      idle (parked); the five add up to the
//                                                      workers' wall time
//   tandem_cost_model_refinements{result}              live retrainings of the cost model so far:
//                                                      swapped (in use) or rejected (worse on
//                                                      held-out samples than the rules in use)
//   tandem_cost_model_mean_relative_error{engine,source}
//                                                      the cost model's error on its evaluation
//                                                      queries ("training") or recent ones ("live")
//
// `mode` is "and", "or", "and_or" ("invalid" for an unknown value); `engine` is the engine that ran
// the query, "none" when it never reached one. The histograms cover queries that reached an
// engine's queue; rejected ones are counted only.
//
// The per-query series are resolved once, not looked up per event: prometheus-cpp's Family::Add
// copies and hashes the label set under the family's mutex (and, for a histogram, first builds a
// throwaway histogram), and the hybrid scheduler reports some series under its own lock. Series of
// label values known up front (engines, modes, processors, queues, codes) are cached; others go
// through Family::Add.
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
  void SetRatioThresholds(double cpu, double gpu);
  void SetBusyWorkers(absl::string_view processor, size_t busy);
  void AddBusyTime(absl::string_view processor, absl::Duration busy);
  // The cost model's live retrainings so far: swapped in, and rejected (worse on held-out samples).
  void SetCostModelRefinements(size_t swapped, size_t rejected);
  // One worker's time since its last report, by activity (see tandem_processor_worker_seconds).
  void AddWorkerTime(absl::string_view processor, absl::Duration engine, absl::Duration answer,
                     absl::Duration lock, absl::Duration scheduling, absl::Duration idle);
  // `source`: "training" (the model file's evaluation queries) or "live" (recent queries).
  void SetCostModelError(absl::string_view engine, absl::string_view source,
                         double mean_relative_error);

 private:
  static constexpr int kModes = 3;           // and, or, and_or
  static constexpr int kCodes = 17;          // grpc::StatusCode 0..16
  static constexpr int kProcessors = 2;      // cpu, gpu
  static constexpr int kDecisionQueues = 4;  // cpu, gpu, shared, pinned
  static constexpr int kActivities = 5;      // engine, answer, lock, scheduling, idle
  // The series of one engine (or "none", the last slot) and mode.
  struct QuerySeries {
    prometheus::Histogram* queue_wait = nullptr;
    prometheus::Histogram* execution = nullptr;
    prometheus::Histogram* duration = nullptr;
    // By code, created at first use (only OK is exported up front).
    std::array<std::atomic<prometheus::Counter*>, kCodes> queries{};
  };
  // The series of one processor, resolved by SetWorkers (null before: Family::Add then).
  struct ProcessorSeries {
    std::atomic<prometheus::Gauge*> busy_workers{nullptr};
    std::atomic<prometheus::Counter*> busy_seconds{nullptr};
    std::atomic<prometheus::Counter*> steals{nullptr};
    std::atomic<prometheus::Counter*> urgent{nullptr};
    std::atomic<prometheus::Histogram*> cost_ratio{nullptr};
    std::array<std::atomic<prometheus::Counter*>, kDecisionQueues> decisions{};
    std::array<std::atomic<prometheus::Counter*>, kActivities> worker_seconds{};
  };

  // -1 for a label value without a cached slot.
  int EngineSlot(absl::string_view engine) const;
  ProcessorSeries* ForProcessor(absl::string_view processor);  // null but for "cpu" and "gpu"
  prometheus::Counter& QueryCounter(absl::string_view mode, absl::string_view engine,
                                    grpc::StatusCode code);

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
  prometheus::Family<prometheus::Gauge>& ratio_threshold_;
  prometheus::Family<prometheus::Gauge>& workers_;
  prometheus::Family<prometheus::Gauge>& busy_workers_;
  prometheus::Family<prometheus::Counter>& busy_seconds_;
  prometheus::Family<prometheus::Gauge>& cost_model_error_;
  prometheus::Family<prometheus::Counter>& worker_seconds_;
  prometheus::Family<prometheus::Gauge>& refinements_;

  std::vector<std::string> engine_names_;  // the engines, then "none"
  // [engine slot][mode]; engines are known at construction.
  std::unique_ptr<std::array<QuerySeries, kModes>[]> query_series_;
  std::vector<prometheus::Counter*> postings_series_;  // by engine slot ("none" unused)
  std::array<ProcessorSeries, kProcessors> processor_series_{};
  std::array<std::atomic<prometheus::Gauge*>, 3> scheduler_depth_series_{};  // cpu, gpu, shared
  std::vector<std::pair<absl::string_view, prometheus::Counter*>> rejected_series_;
  prometheus::Gauge* cpu_threshold_ = nullptr;  // tandem_scheduler_ratio_threshold{queue="cpu"}
  prometheus::Gauge* gpu_threshold_ = nullptr;
};

}  // namespace tandem::server
