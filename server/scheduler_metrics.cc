#include "server/scheduler_metrics.h"

#include <cmath>
#include <string>

#include "rpc/metric_series.h"

namespace tandem::server {
namespace {

using rpc::metrics::Counters;
using rpc::metrics::Gauges;
using rpc::metrics::Histograms;
using rpc::metrics::Str;

constexpr const char* kDecisionQueueNames[] = {"cpu", "gpu", "shared", "pinned"};
constexpr const char* kActivityNames[] = {"engine", "answer", "lock", "scheduling", "idle"};
// The live error is recomputed over the model's ring of recent samples; every this many
// measurements per processor is often enough for a gauge scraped every few seconds.
constexpr uint64_t kLiveErrorEvery = 256;

}  // namespace

SchedulerMetrics::SchedulerMetrics(prometheus::Registry& registry, QueryMetrics& queries,
                                   cost_model::CostModel* cost_model)
    : queries_(queries),
      cost_model_(cost_model),
      decisions_(Counters(registry, "tandem_scheduler_decisions_total",
                          "Queries the hybrid scheduler handed to a processor, by the queue they "
                          "waited in (cpu, gpu, shared; pinned: an engine hint) and processor.")),
      steals_(Counters(registry, "tandem_scheduler_steals_total",
                       "Queries a processor took from the other processor's queue.")),
      urgent_(Counters(registry, "tandem_scheduler_urgent_total",
                       "Queries run ahead of their queue because their deadline was near.")),
      cost_ratio_(Histograms(registry, "tandem_scheduler_cost_ratio",
                             "Measured over predicted execution time of queries, by engine.")),
      deadline_misses_(Counters(registry, "tandem_scheduler_deadline_misses_total",
                                "Queries answered after their scheduling deadline (the call's, "
                                "or arrival + the default deadline when earlier).")
                           .Add({})),
      queue_depth_(Gauges(registry, "tandem_scheduler_queue_depth",
                          "Queries waiting in each of the scheduler's queues.")),
      workers_(Gauges(registry, "tandem_processor_workers",
                      "Worker threads per processor (GPU: queries in flight at once).")),
      busy_workers_(Gauges(registry, "tandem_processor_busy_workers",
                           "Workers of each processor running a query now.")),
      busy_seconds_(Counters(registry, "tandem_processor_busy_seconds_total",
                             "Worker time spent running queries, per processor; divided by the "
                             "workers, its rate is the processor's utilization.")),
      cost_model_error_(Gauges(registry, "tandem_cost_model_mean_relative_error",
                               "Mean relative error of the cost model's predictions, by engine; "
                               "source: training (the model file's evaluation queries) or live "
                               "(recent queries).")),
      worker_seconds_(Counters(registry, "tandem_processor_worker_seconds_total",
                               "Worker time per processor by activity: engine (running queries), "
                               "answer (building responses, completing RPCs), lock (waiting for "
                               "the scheduler: its lock, or another thread serving the worker's "
                               "request), scheduling (serving requests, cost-model updates), "
                               "idle (parked: nothing to take).")),
      refinements_(Gauges(registry, "tandem_cost_model_refinements",
                          "Live retrainings of the cost model so far: swapped in, or rejected for "
                          "predicting held-out samples worse than the rules in use.")),
      ratio_threshold_(Gauges(registry, "tandem_scheduler_ratio_threshold",
                              "The hybrid scheduler's cost-ratio thresholds after the load shift: "
                              "a query whose predicted CPU/GPU cost ratio (per unit of capacity) "
                              "is at or below queue=\"cpu\" joins the CPU queue, at or above "
                              "queue=\"gpu\" the GPU queue, else the shared one.")),
      cpu_threshold_(ratio_threshold_.Add({{"queue", "cpu"}})),
      gpu_threshold_(ratio_threshold_.Add({{"queue", "gpu"}})) {}

prometheus::Gauge& SchedulerMetrics::QueueDepthSeries(scheduler::QueueKind queue) {
  std::atomic<prometheus::Gauge*>* slot = &queue_depth_series_[static_cast<int>(queue)];
  return rpc::metrics::Series(slot, queue_depth_, [queue] {
    return prometheus::Labels{{"queue", Str(scheduler::QueueName(queue))}};
  });
}

void SchedulerMetrics::SetWorkers(Processor p, size_t workers) {
  const std::string processor = Str(scheduler::ProcessorName(p));
  workers_.Add({{"processor", processor}}).Set(static_cast<double>(workers));
  ProcessorSeries& s = processors_[Index(p)];
  s.busy_workers = &busy_workers_.Add({{"processor", processor}});
  s.busy_seconds = &busy_seconds_.Add({{"processor", processor}});
  s.steals = &steals_.Add({{"processor", processor}});
  s.urgent = &urgent_.Add({{"processor", processor}});
  s.cost_ratio = &cost_ratio_.Add({{"engine", processor}}, rpc::metrics::RatioBuckets());
  for (int q = 0; q < kDecisionQueues; ++q) {
    s.decisions[q] = &decisions_.Add({{"queue", kDecisionQueueNames[q]}, {"processor", processor}});
  }
  for (int a = 0; a < kActivities; ++a) {
    s.worker_seconds[a] =
        &worker_seconds_.Add({{"processor", processor}, {"activity", kActivityNames[a]}});
  }
  QueueDepthSeries(p == Processor::kCpu ? scheduler::QueueKind::kCpu : scheduler::QueueKind::kGpu)
      .Set(0);
  QueueDepthSeries(scheduler::QueueKind::kShared).Set(0);
  s.present = true;
}

void SchedulerMetrics::SetTrainingError() {
  if (cost_model_ == nullptr) return;
  for (Processor p : {Processor::kCpu, Processor::kGpu}) {
    const double error = cost_model_->mean_relative_error(p);
    if (std::isfinite(error)) {
      cost_model_error_.Add({{"engine", Str(scheduler::ProcessorName(p))}, {"source", "training"}})
          .Set(error);
    }
  }
}

void SchedulerMetrics::OnQueueDepth(size_t jobs) { queries_.SetQueueDepth(jobs); }

void SchedulerMetrics::OnSchedulerQueueDepth(scheduler::QueueKind queue, size_t queries) {
  QueueDepthSeries(queue).Set(static_cast<double>(queries));
}

void SchedulerMetrics::OnThresholds(double cpu, double gpu) {
  cpu_threshold_.Set(cpu);
  gpu_threshold_.Set(gpu);
}

void SchedulerMetrics::OnBusyWorkers(Processor p, size_t busy) {
  ProcessorSeries& s = processors_[Index(p)];
  if (s.present) s.busy_workers->Set(static_cast<double>(busy));
}

void SchedulerMetrics::OnDecision(const scheduler::SchedulerDecision& d) {
  ProcessorSeries& s = processors_[Index(d.processor)];
  if (!s.present) return;
  s.decisions[d.pinned ? 3 : static_cast<int>(d.queue)]->Increment();
  if (d.reason == scheduler::TakeReason::kStolen) s.steals->Increment();
  if (d.reason == scheduler::TakeReason::kUrgent) s.urgent->Increment();
}

void SchedulerMetrics::OnMeasured(Processor p, double predicted_ms, double measured_ms) {
  ProcessorSeries& s = processors_[Index(p)];
  if (!s.present) return;
  if (predicted_ms > 0) s.cost_ratio->Observe(measured_ms / predicted_ms);
  if (s.measured.fetch_add(1, std::memory_order_relaxed) % kLiveErrorEvery == 0) {
    ReportLiveError(p);
  }
}

void SchedulerMetrics::ReportLiveError(Processor p) {
  if (cost_model_ == nullptr) return;
  const double error = cost_model_->live_relative_error(p);
  if (std::isfinite(error)) {
    cost_model_error_.Add({{"engine", Str(scheduler::ProcessorName(p))}, {"source", "live"}})
        .Set(error);
  }
  // Every few hundred queries: Family::Add is cheap enough here.
  refinements_.Add({{"result", "swapped"}}).Set(static_cast<double>(cost_model_->refinements()));
  refinements_.Add({{"result", "rejected"}})
      .Set(static_cast<double>(cost_model_->rejected_refinements()));
}

void SchedulerMetrics::OnBusyTime(Processor p, absl::Duration busy) {
  ProcessorSeries& s = processors_[Index(p)];
  if (s.present) s.busy_seconds->Increment(absl::ToDoubleSeconds(busy));
}

void SchedulerMetrics::OnWorkerTime(Processor p, const scheduler::WorkerTime& t) {
  ProcessorSeries& s = processors_[Index(p)];
  if (!s.present) return;
  const absl::Duration by_activity[kActivities] = {t.engine, t.answer, t.lock, t.scheduling,
                                                   t.idle};
  for (int a = 0; a < kActivities; ++a) {
    if (by_activity[a] > absl::ZeroDuration()) {
      s.worker_seconds[a]->Increment(absl::ToDoubleSeconds(by_activity[a]));
    }
  }
}

void SchedulerMetrics::OnDeadlineMiss() { deadline_misses_.Increment(); }

}  // namespace tandem::server
