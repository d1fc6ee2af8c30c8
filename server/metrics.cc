#include "server/metrics.h"

#include <string>
#include <utility>

#include "absl/time/time.h"
#include "server/status_mapping.h"

namespace tandem::server {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// 50 µs to 10 s, about three buckets per decade: a cached term lookup lands in the first buckets, a
// long OR over a big index in the last ones.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
      50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};
  return *buckets;
}

// Measured / predicted time: a factor of 8 either way, finer near 1.
const prometheus::Histogram::BucketBoundaries& RatioBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.125, 0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.11, 1.25, 1.5, 2.0, 4.0, 8.0};
  return *buckets;
}

std::string Str(absl::string_view s) { return std::string(s.data(), s.size()); }

constexpr const char* kModeNames[] = {"and", "or", "and_or"};
constexpr const char* kDecisionQueueNames[] = {"cpu", "gpu", "shared", "pinned"};
constexpr const char* kActivityNames[] = {"engine", "answer", "lock", "scheduling", "idle"};
constexpr const char* kSchedulerQueueNames[] = {"cpu", "gpu", "shared"};

template <size_t N>
int NameSlot(const char* const (&names)[N], absl::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<int>(i);
  }
  return -1;
}

// The series of `family` labelled make_labels(): cached in `slot` (filled at first use), or, for
// label values without a slot (null), looked up each time. Two threads may both miss: Family::Add
// hands both the same series, so either store is right.
template <typename T, typename MakeLabels, typename... Args>
T& Series(std::atomic<T*>* slot, prometheus::Family<T>& family, MakeLabels make_labels,
          Args&&... args) {
  if (slot == nullptr) return family.Add(make_labels(), std::forward<Args>(args)...);
  T* series = slot->load(std::memory_order_acquire);
  if (series == nullptr) {
    series = &family.Add(make_labels(), std::forward<Args>(args)...);
    slot->store(series, std::memory_order_release);
  }
  return *series;
}

}  // namespace

ServerMetrics::ServerMetrics(const BuildInfo& build, const std::vector<std::string>& engines)
    : registry_(std::make_shared<prometheus::Registry>()),
      queries_(BuildCounter()
                   .Name("tandem_queries_total")
                   .Help("Queries answered, by query mode, engine and gRPC status code.")
                   .Register(*registry_)),
      queue_wait_(BuildHistogram()
                      .Name("tandem_query_queue_wait_seconds")
                      .Help("Time queries waited in the admission queue.")
                      .Register(*registry_)),
      execution_(BuildHistogram()
                     .Name("tandem_query_execution_seconds")
                     .Help("Time queries ran on an engine.")
                     .Register(*registry_)),
      duration_(BuildHistogram()
                    .Name("tandem_query_duration_seconds")
                    .Help("Time from a query's arrival to its answer.")
                    .Register(*registry_)),
      postings_(BuildCounter()
                    .Name("tandem_postings_decoded_total")
                    .Help("DocIDs decoded from compressed posting-list blocks.")
                    .Register(*registry_)),
      rejected_(BuildCounter()
                    .Name("tandem_rejected_queries_total")
                    .Help("Queries not run, by reason.")
                    .Register(*registry_)),
      gpu_fallbacks_(
          BuildCounter()
              .Name("tandem_gpu_fallbacks_total")
              .Help("Queries the GPU engine failed (out of memory, CUDA fault) and the CPU "
                    "engine answered instead.")
              .Register(*registry_)
              .Add({})),
      in_flight_(BuildGauge()
                     .Name("tandem_queries_in_flight")
                     .Help("Queries admitted and not yet answered.")
                     .Register(*registry_)
                     .Add({})),
      queue_depth_(BuildGauge()
                       .Name("tandem_admission_queue_depth")
                       .Help("Jobs (queries or batches) waiting for a worker.")
                       .Register(*registry_)
                       .Add({})),
      queue_capacity_(BuildGauge()
                          .Name("tandem_admission_queue_capacity")
                          .Help("Jobs the admission queue holds before it refuses new ones.")
                          .Register(*registry_)
                          .Add({})),
      index_documents_(BuildGauge()
                           .Name("tandem_index_documents")
                           .Help("Documents in the served index.")
                           .Register(*registry_)
                           .Add({})),
      index_terms_(BuildGauge()
                       .Name("tandem_index_terms")
                       .Help("Distinct terms in the served index.")
                       .Register(*registry_)
                       .Add({})),
      index_postings_(BuildGauge()
                          .Name("tandem_index_postings")
                          .Help("Postings in the served index.")
                          .Register(*registry_)
                          .Add({})),
      index_bytes_(BuildGauge()
                       .Name("tandem_index_size_bytes")
                       .Help("Bytes of the served index's files.")
                       .Register(*registry_)
                       .Add({})),
      decisions_(BuildCounter()
                     .Name("tandem_scheduler_decisions_total")
                     .Help("Queries the hybrid scheduler handed to a processor, by the queue they "
                           "waited in (cpu, gpu, shared; pinned: an engine hint) and processor.")
                     .Register(*registry_)),
      steals_(BuildCounter()
                  .Name("tandem_scheduler_steals_total")
                  .Help("Queries a processor took from the other processor's queue.")
                  .Register(*registry_)),
      urgent_(BuildCounter()
                  .Name("tandem_scheduler_urgent_total")
                  .Help("Queries run ahead of their queue because their deadline was near.")
                  .Register(*registry_)),
      cost_ratio_(BuildHistogram()
                      .Name("tandem_scheduler_cost_ratio")
                      .Help("Measured over predicted execution time of queries, by engine.")
                      .Register(*registry_)),
      deadline_misses_(BuildCounter()
                           .Name("tandem_scheduler_deadline_misses_total")
                           .Help("Queries answered after their scheduling deadline (the call's, "
                                 "or arrival + --default-deadline when earlier).")
                           .Register(*registry_)
                           .Add({})),
      scheduler_queue_depth_(BuildGauge()
                                 .Name("tandem_scheduler_queue_depth")
                                 .Help("Queries waiting in each of the scheduler's queues.")
                                 .Register(*registry_)),
      ratio_threshold_(BuildGauge()
                           .Name("tandem_scheduler_ratio_threshold")
                           .Help("The hybrid scheduler's cost-ratio thresholds after the load "
                                 "shift: a query whose predicted CPU/GPU cost ratio (per unit of "
                                 "capacity) is at or below queue=\"cpu\" joins the CPU queue, at "
                                 "or above queue=\"gpu\" the GPU queue, else the shared one.")
                           .Register(*registry_)),
      workers_(BuildGauge()
                   .Name("tandem_processor_workers")
                   .Help("Worker threads per processor (GPU: queries in flight at once).")
                   .Register(*registry_)),
      busy_workers_(BuildGauge()
                        .Name("tandem_processor_busy_workers")
                        .Help("Workers of each processor running a query now.")
                        .Register(*registry_)),
      busy_seconds_(BuildCounter()
                        .Name("tandem_processor_busy_seconds_total")
                        .Help("Worker time spent running queries, per processor; divided by the "
                              "workers, its rate is the processor's utilization.")
                        .Register(*registry_)),
      cost_model_error_(BuildGauge()
                            .Name("tandem_cost_model_mean_relative_error")
                            .Help("Mean relative error of the cost model's predictions, by engine; "
                                  "source: training (the model file's evaluation queries) or "
                                  "live (recent queries).")
                            .Register(*registry_)),
      worker_seconds_(BuildCounter()
                          .Name("tandem_processor_worker_seconds_total")
                          .Help("Worker time per processor by activity: engine (running queries), "
                                "answer (building responses, completing RPCs), lock (waiting for "
                                "the scheduler: its lock, or a round run by another thread to "
                                "serve the worker's request), scheduling (rounds of the "
                                "scheduler, cost-model updates), idle (parked: nothing to take).")
                          .Register(*registry_)),
      refinements_(BuildGauge()
                       .Name("tandem_cost_model_refinements")
                       .Help("Live retrainings of the cost model so far: swapped in, or rejected "
                             "for predicting held-out samples worse than the rules in use.")
                       .Register(*registry_)) {
  BuildGauge()
      .Name("tandem_build_info")
      .Help("Build of this server; the value is always 1.")
      .Register(*registry_)
      .Add({{"version", build.version},
            {"commit", build.commit},
            {"gpu", build.gpu ? "true" : "false"}})
      .Set(1);
  for (absl::string_view reason :
       {reject_reason::kInvalidArgument, reject_reason::kQueueFull, reject_reason::kDraining,
        reject_reason::kExpiredInQueue, reject_reason::kNoGpu}) {
    rejected_series_.emplace_back(reason, &rejected_.Add({{"reason", Str(reason)}}));
  }
  cpu_threshold_ = &ratio_threshold_.Add({{"queue", "cpu"}});
  gpu_threshold_ = &ratio_threshold_.Add({{"queue", "gpu"}});
  engine_names_ = engines;
  engine_names_.push_back("none");
  query_series_ = std::make_unique<std::array<QuerySeries, kModes>[]>(engine_names_.size());
  for (size_t e = 0; e < engine_names_.size(); ++e) {
    const std::string& engine = engine_names_[e];
    const bool real = e < engines.size();  // "none" has no histograms nor postings
    postings_series_.push_back(real ? &postings_.Add({{"engine", engine}}) : nullptr);
    for (int m = 0; m < kModes; ++m) {
      QuerySeries& series = query_series_[e][m];
      const prometheus::Labels labels{{"mode", kModeNames[m]}, {"engine", engine}};
      if (real) {
        series.queries[0] =
            &queries_.Add({{"mode", kModeNames[m]}, {"engine", engine}, {"code", "OK"}});
        series.queue_wait = &queue_wait_.Add(labels, LatencyBuckets());
        series.execution = &execution_.Add(labels, LatencyBuckets());
        series.duration = &duration_.Add(labels, LatencyBuckets());
      }
    }
  }
}

int ServerMetrics::EngineSlot(absl::string_view engine) const {
  for (size_t i = 0; i < engine_names_.size(); ++i) {
    if (engine == engine_names_[i]) return static_cast<int>(i);
  }
  return -1;
}

ServerMetrics::ProcessorSeries* ServerMetrics::ForProcessor(absl::string_view processor) {
  if (processor == "cpu") return &processor_series_[0];
  if (processor == "gpu") return &processor_series_[1];
  return nullptr;
}

prometheus::Counter& ServerMetrics::QueryCounter(absl::string_view mode, absl::string_view engine,
                                                 grpc::StatusCode code) {
  auto labels = [&]() -> prometheus::Labels {
    return {{"mode", Str(mode)}, {"engine", Str(engine)}, {"code", Str(GrpcCodeName(code))}};
  };
  const int e = EngineSlot(engine), m = NameSlot(kModeNames, mode), c = static_cast<int>(code);
  const bool cached = e >= 0 && m >= 0 && c >= 0 && c < kCodes;
  return Series(cached ? &query_series_[e][m].queries[c] : nullptr, queries_, labels);
}

void ServerMetrics::SetWorkers(absl::string_view processor, size_t workers) {
  const prometheus::Labels labels{{"processor", Str(processor)}};
  workers_.Add(labels).Set(static_cast<double>(workers));
  // Create (and, for "cpu" and "gpu", cache) the processor's series, so dashboards see zeros.
  ProcessorSeries* cached = ForProcessor(processor);
  auto by_processor = [&] { return labels; };
  Series(cached ? &cached->busy_workers : nullptr, busy_workers_, by_processor);
  Series(cached ? &cached->busy_seconds : nullptr, busy_seconds_, by_processor);
  Series(cached ? &cached->steals : nullptr, steals_, by_processor);
  Series(cached ? &cached->urgent : nullptr, urgent_, by_processor);
  for (int q = 0; q < kDecisionQueues; ++q) {
    Series(cached ? &cached->decisions[q] : nullptr, decisions_, [&] {
      return prometheus::Labels{{"queue", kDecisionQueueNames[q]}, {"processor", Str(processor)}};
    });
  }
  for (int a = 0; a < kActivities; ++a) {
    Series(cached ? &cached->worker_seconds[a] : nullptr, worker_seconds_, [&] {
      return prometheus::Labels{{"processor", Str(processor)}, {"activity", kActivityNames[a]}};
    });
  }
  Series(
      cached ? &cached->cost_ratio : nullptr, cost_ratio_,
      [&] {
        return prometheus::Labels{{"engine", Str(processor)}};
      },
      RatioBuckets());
  SetSchedulerQueueDepth(processor, 0);
  SetSchedulerQueueDepth("shared", 0);
}

void ServerMetrics::RecordDecision(absl::string_view queue, absl::string_view processor,
                                   bool stolen, bool urgent) {
  ProcessorSeries* cached = ForProcessor(processor);
  const int q = NameSlot(kDecisionQueueNames, queue);
  auto labels = [&] { return prometheus::Labels{{"processor", Str(processor)}}; };
  Series(cached && q >= 0 ? &cached->decisions[q] : nullptr, decisions_, [&] {
    return prometheus::Labels{{"queue", Str(queue)}, {"processor", Str(processor)}};
  }).Increment();
  if (stolen) Series(cached ? &cached->steals : nullptr, steals_, labels).Increment();
  if (urgent) Series(cached ? &cached->urgent : nullptr, urgent_, labels).Increment();
}

void ServerMetrics::RecordCostRatio(absl::string_view engine, double predicted_ms,
                                    double measured_ms) {
  if (!(predicted_ms > 0)) return;  // no prediction to compare with
  ProcessorSeries* cached = ForProcessor(engine);
  auto labels = [&] { return prometheus::Labels{{"engine", Str(engine)}}; };
  Series(cached ? &cached->cost_ratio : nullptr, cost_ratio_, labels, RatioBuckets())
      .Observe(measured_ms / predicted_ms);
}

void ServerMetrics::RecordDeadlineMiss() { deadline_misses_.Increment(); }

void ServerMetrics::SetSchedulerQueueDepth(absl::string_view queue, size_t depth) {
  auto labels = [&] { return prometheus::Labels{{"queue", Str(queue)}}; };
  const int q = NameSlot(kSchedulerQueueNames, queue);
  Series(q >= 0 ? &scheduler_depth_series_[q] : nullptr, scheduler_queue_depth_, labels)
      .Set(static_cast<double>(depth));
}

void ServerMetrics::SetRatioThresholds(double cpu, double gpu) {
  cpu_threshold_->Set(cpu);
  gpu_threshold_->Set(gpu);
}

void ServerMetrics::SetBusyWorkers(absl::string_view processor, size_t busy) {
  auto labels = [&] { return prometheus::Labels{{"processor", Str(processor)}}; };
  ProcessorSeries* cached = ForProcessor(processor);
  Series(cached ? &cached->busy_workers : nullptr, busy_workers_, labels)
      .Set(static_cast<double>(busy));
}

void ServerMetrics::AddBusyTime(absl::string_view processor, absl::Duration busy) {
  auto labels = [&] { return prometheus::Labels{{"processor", Str(processor)}}; };
  ProcessorSeries* cached = ForProcessor(processor);
  Series(cached ? &cached->busy_seconds : nullptr, busy_seconds_, labels)
      .Increment(absl::ToDoubleSeconds(busy));
}

void ServerMetrics::AddWorkerTime(absl::string_view processor, absl::Duration engine,
                                  absl::Duration answer, absl::Duration lock,
                                  absl::Duration scheduling, absl::Duration idle) {
  const absl::Duration by_activity[kActivities] = {engine, answer, lock, scheduling, idle};
  ProcessorSeries* cached = ForProcessor(processor);
  for (int a = 0; a < kActivities; ++a) {
    if (by_activity[a] <= absl::ZeroDuration()) continue;
    auto labels = [&] {
      return prometheus::Labels{{"processor", Str(processor)}, {"activity", kActivityNames[a]}};
    };
    Series(cached ? &cached->worker_seconds[a] : nullptr, worker_seconds_, labels)
        .Increment(absl::ToDoubleSeconds(by_activity[a]));
  }
}

void ServerMetrics::SetCostModelError(absl::string_view engine, absl::string_view source,
                                      double mean_relative_error) {
  cost_model_error_.Add({{"engine", Str(engine)}, {"source", Str(source)}})
      .Set(mean_relative_error);
}

void ServerMetrics::SetCostModelRefinements(size_t swapped, size_t rejected) {
  // Every few hundred queries: Family::Add is cheap enough here.
  refinements_.Add({{"result", "swapped"}}).Set(static_cast<double>(swapped));
  refinements_.Add({{"result", "rejected"}}).Set(static_cast<double>(rejected));
}

void ServerMetrics::SetIndex(const index::Index& index) {
  index_documents_.Set(index.num_docs());
  index_terms_.Set(static_cast<double>(index.num_terms()));
  index_postings_.Set(static_cast<double>(index.stats().num_postings));
  index_bytes_.Set(static_cast<double>(index.index_bytes()));
}

void ServerMetrics::SetQueueCapacity(size_t capacity) {
  queue_capacity_.Set(static_cast<double>(capacity));
}

void ServerMetrics::SetQueueDepth(size_t depth) { queue_depth_.Set(static_cast<double>(depth)); }

void ServerMetrics::SetInFlight(int64_t queries) { in_flight_.Set(static_cast<double>(queries)); }

void ServerMetrics::RecordQuery(const QueryRecord& record) {
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

void ServerMetrics::RecordRejection(absl::string_view reason, uint64_t queries) {
  for (const auto& [name, counter] : rejected_series_) {
    if (name == reason) {
      counter->Increment(static_cast<double>(queries));
      return;
    }
  }
  rejected_.Add({{"reason", Str(reason)}}).Increment(static_cast<double>(queries));
}

}  // namespace tandem::server
