// File: scheduler_metrics.h
//
// The hybrid CPU+GPU scheduler's metrics, recorded as the executors report their events
// (scheduler::ExecutorObserver). `processor` and `engine` are "cpu" or "gpu".
//
//   tandem_scheduler_decisions_total{queue,processor}  queries taken, by queue (cpu, gpu, shared;
//                                                      pinned: an engine hint) and processor
//   tandem_scheduler_steals_total{processor}           taken from the other processor's queue
//   tandem_scheduler_urgent_total{processor}           run ahead of their queue, deadline near
//   tandem_scheduler_cost_ratio{engine}                measured / predicted execution time
//   tandem_scheduler_deadline_misses_total             answered after the scheduling deadline
//   tandem_scheduler_queue_depth{queue}                queries waiting: cpu, gpu, shared queue
//   tandem_scheduler_ratio_threshold{queue}            the cost-ratio thresholds after the load
//                                                      shift (scheduler/work_queues.h)
//   tandem_processor_workers{processor}                workers (GPU: queries in flight at once)
//   tandem_processor_busy_workers{processor}           workers running a query now
//   tandem_processor_busy_seconds_total{processor}     worker time on queries; utilization is
//                                                      rate(busy_seconds) / workers
//   tandem_processor_worker_seconds_total{processor,activity}
//                                                      all worker time by activity: engine,
//                                                      answer, lock, scheduling, idle
//                                                      (scheduler::WorkerTime); they add up to
//                                                      the workers' wall time
//   tandem_cost_model_refinements{result}              live retrainings so far: swapped or rejected
//   tandem_cost_model_mean_relative_error{engine,source}
//                                                      the cost model's error on its evaluation
//                                                      queries ("training") or recent ones ("live")
// The admission queue's depth goes to QueryMetrics (tandem_admission_queue_depth).
//
//   SchedulerMetrics metrics(*registry, query_metrics, cost_model.get());
//   metrics.SetWorkers(Processor::kCpu, 12);   // before the executor starts
//   HybridQueryExecutor::Create(cpu, gpu, options, cost_model.get(), &metrics);
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

#include "cost_model/cost_model.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"
#include "scheduler/executor_observer.h"
#include "server/query_metrics.h"

namespace tandem::server {

class SchedulerMetrics final : public scheduler::ExecutorObserver {
 public:
  using Processor = scheduler::Processor;

  // `registry` and `queries` must outlive the metrics; `cost_model` (may be null) too: its error
  // and refinements are reported every few hundred measured queries.
  SchedulerMetrics(prometheus::Registry& registry, QueryMetrics& queries,
                   cost_model::CostModel* cost_model);

  // Creates `p`'s series (so dashboards see zeros) and exports its worker count. Call before the
  // executor runs; events of a processor without workers are not recorded.
  void SetWorkers(Processor p, size_t workers);
  // The cost model's error on the model file's evaluation queries.
  void SetTrainingError();

  void OnQueueDepth(size_t jobs) override;
  void OnSchedulerQueueDepth(scheduler::QueueKind queue, size_t queries) override;
  void OnThresholds(double cpu, double gpu) override;
  void OnBusyWorkers(Processor p, size_t busy) override;
  void OnDecision(const scheduler::SchedulerDecision& decision) override;
  void OnMeasured(Processor p, double predicted_ms, double measured_ms) override;
  void OnBusyTime(Processor p, absl::Duration busy) override;
  void OnWorkerTime(Processor p, const scheduler::WorkerTime& time) override;
  void OnDeadlineMiss() override;

 private:
  static constexpr int kDecisionQueues = 4;  // cpu, gpu, shared, pinned
  static constexpr int kActivities = 5;      // engine, answer, lock, scheduling, idle
  // The series of one processor, created by SetWorkers.
  struct ProcessorSeries {
    bool present = false;
    prometheus::Gauge* busy_workers = nullptr;
    prometheus::Counter* busy_seconds = nullptr;
    prometheus::Counter* steals = nullptr;
    prometheus::Counter* urgent = nullptr;
    prometheus::Histogram* cost_ratio = nullptr;
    std::array<prometheus::Counter*, kDecisionQueues> decisions{};
    std::array<prometheus::Counter*, kActivities> worker_seconds{};
    std::atomic<uint64_t> measured{0};
  };
  static int Index(Processor p) { return p == Processor::kCpu ? 0 : 1; }
  void ReportLiveError(Processor p);
  prometheus::Gauge& QueueDepthSeries(scheduler::QueueKind queue);

  QueryMetrics& queries_;
  cost_model::CostModel* const cost_model_;
  prometheus::Family<prometheus::Counter>& decisions_;
  prometheus::Family<prometheus::Counter>& steals_;
  prometheus::Family<prometheus::Counter>& urgent_;
  prometheus::Family<prometheus::Histogram>& cost_ratio_;
  prometheus::Counter& deadline_misses_;
  prometheus::Family<prometheus::Gauge>& queue_depth_;
  prometheus::Family<prometheus::Gauge>& workers_;
  prometheus::Family<prometheus::Gauge>& busy_workers_;
  prometheus::Family<prometheus::Counter>& busy_seconds_;
  prometheus::Family<prometheus::Gauge>& cost_model_error_;
  prometheus::Family<prometheus::Counter>& worker_seconds_;
  prometheus::Family<prometheus::Gauge>& refinements_;
  prometheus::Family<prometheus::Gauge>& ratio_threshold_;
  prometheus::Gauge& cpu_threshold_;  // tandem_scheduler_ratio_threshold{queue="cpu"}
  prometheus::Gauge& gpu_threshold_;
  // By QueueKind, created with the processor's series or at first use.
  std::array<std::atomic<prometheus::Gauge*>, 3> queue_depth_series_{};
  std::array<ProcessorSeries, 2> processors_;
};

}  // namespace tandem::server
