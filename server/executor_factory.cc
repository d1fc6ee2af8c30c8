#include "server/executor_factory.h"

#include <atomic>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cost_model/cost_features.h"
#include "scheduler/hybrid_executor.h"
#include "scheduler/pool_executor.h"

namespace tandem::server {
namespace {

using scheduler::Processor;
using scheduler::ProcessorName;

// The live error is recomputed over the model's ring of recent samples; every this many
// measurements per processor is often enough for a gauge scraped every few seconds.
constexpr uint64_t kLiveErrorEvery = 256;

bool UseHybrid(const ServerOptions& options, const server::EngineSet& engines) {
  switch (options.scheduler) {
    case SchedulerKind::kPool:
      return false;
    case SchedulerKind::kHybrid:
    case SchedulerKind::kSerial:
      return true;
    case SchedulerKind::kAuto:
      break;
  }
  return engines.gpu != nullptr;
}

// The trained model of --cost-model, or the heuristic; either refines itself from live timings.
absl::StatusOr<std::unique_ptr<cost_model::CostModel>> LoadCostModel(
    const ServerOptions& options, const index::Index& index, const server::EngineSet& engines) {
  cost_model::CostModelOptions model_options;
  model_options.index = &index;
  model_options.resident_fraction = cost_model::ResidentFractionOf(engines.gpu.get());
  model_options.refine_every = options.cost_model_refine_every;
  model_options.refine_min_interval = options.cost_model_refine_interval;
  model_options.cpu_or_maxscore = options.cpu_or == cpu::OrAlgorithm::kMaxScore;
  if (options.cost_model_file.empty()) {
    return cost_model::CostModel::Heuristic(std::move(model_options));
  }
  absl::StatusOr<std::unique_ptr<cost_model::CostModel>> model =
      cost_model::CostModel::Load(options.cost_model_file, std::move(model_options));
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("cannot load cost model: ", model.status().message()));
  }
  return model;
}

scheduler::HybridExecutorHooks MetricsHooks(ServerMetrics& metrics, cost_model::CostModel& model) {
  struct Counts {
    std::atomic<uint64_t> measured[2] = {0, 0};  // by processor
  };
  auto counts = std::make_shared<Counts>();
  ServerMetrics* m = &metrics;
  cost_model::CostModel* cost_model = &model;
  return {
      .on_queue_depth = [m](size_t jobs) { m->SetQueueDepth(jobs); },
      .on_scheduler_queue_depth =
          [m](scheduler::QueueKind queue, size_t queries) {
            m->SetSchedulerQueueDepth(scheduler::QueueName(queue), queries);
          },
      .on_thresholds = [m](double cpu, double gpu) { m->SetRatioThresholds(cpu, gpu); },
      .on_busy_workers = [m](Processor p,
                             size_t busy) { m->SetBusyWorkers(ProcessorName(p), busy); },
      .on_decision =
          [m](const scheduler::SchedulerDecision& d) {
            m->RecordDecision(d.pinned ? "pinned" : scheduler::QueueName(d.queue),
                              ProcessorName(d.processor),
                              d.reason == scheduler::TakeReason::kStolen,
                              d.reason == scheduler::TakeReason::kUrgent);
          },
      .on_measured =
          [m, cost_model, counts](Processor p, double predicted_ms, double measured_ms) {
            m->RecordCostRatio(ProcessorName(p), predicted_ms, measured_ms);
            const int i = p == Processor::kCpu ? 0 : 1;
            if (counts->measured[i].fetch_add(1, std::memory_order_relaxed) % kLiveErrorEvery ==
                0) {
              const double error = cost_model->live_relative_error(p);
              if (std::isfinite(error)) m->SetCostModelError(ProcessorName(p), "live", error);
              m->SetCostModelRefinements(cost_model->refinements(),
                                         cost_model->rejected_refinements());
            }
          },
      .on_busy_time = [m](Processor p,
                          absl::Duration busy) { m->AddBusyTime(ProcessorName(p), busy); },
      .on_worker_time =
          [m](Processor p, const scheduler::WorkerTime& t) {
            m->AddWorkerTime(ProcessorName(p), t.engine, t.answer, t.lock, t.scheduling, t.idle);
          },
      .on_deadline_miss = [m] { m->RecordDeadlineMiss(); },
  };
}

}  // namespace

absl::StatusOr<ExecutorSet> CreateExecutor(const ServerOptions& options, const index::Index& index,
                                           const server::EngineSet& engines,
                                           ServerMetrics& metrics) {
  ExecutorSet set;
  ServerMetrics* m = &metrics;
  if (!UseHybrid(options, engines)) {
    TANDEM_ASSIGN_OR_RETURN(
        set.executor, scheduler::PoolQueryExecutor::Create(
                          engines.cpu.get(), engines.gpu.get(),
                          {.threads = options.threads,
                           .queue_capacity = options.queue_capacity,
                           .debug_query_delay = options.debug_query_delay,
                           .on_queue_depth = [m](size_t depth) { m->SetQueueDepth(depth); }}));
    set.summary = absl::StrCat("pool scheduler (", options.threads, " workers, FIFO)");
    if (!options.cost_model_file.empty()) absl::StrAppend(&set.summary, "; --cost-model unused");
    if (!options.cpu_worker_cpus.empty() || !options.gpu_worker_cpus.empty()) {
      absl::StrAppend(&set.summary, "; --cpu-worker-cpus and --gpu-worker-cpus unused");
    }
    return set;
  }

  TANDEM_ASSIGN_OR_RETURN(set.cost_model, LoadCostModel(options, index, engines));
  const size_t gpu_threads = engines.gpu != nullptr ? options.gpu_threads : 0;
  for (Processor p : {Processor::kCpu, Processor::kGpu}) {
    const double error = set.cost_model->mean_relative_error(p);
    if (std::isfinite(error)) metrics.SetCostModelError(ProcessorName(p), "training", error);
  }
  scheduler::HybridQueryExecutor::Options hybrid{.cpu_threads = options.threads,
                                      .gpu_threads = options.gpu_threads,
                                      .answer_threads = options.answer_threads,
                                      .answer_cpu_queries = options.answer_cpu_queries,
                                      .cpu_worker_priority = options.cpu_worker_priority,
                                      .cpu_worker_cpus = options.cpu_worker_cpus,
                                      .gpu_worker_cpus = options.gpu_worker_cpus,
                                      .queue_capacity = options.queue_capacity,
                                      .default_deadline = options.default_deadline,
                                      .predictor = set.cost_model.get(),
                                      .debug_query_delay = options.debug_query_delay,
                                      .hooks = MetricsHooks(metrics, *set.cost_model)};
  hybrid.policy.max_wait = options.max_wait;
  if (options.scheduler == SchedulerKind::kSerial) {
    // One query at a time, on the processor with the lower prediction (both thresholds at 1, no
    // load shift; a steal never pays with the other processor idle), oldest first (max_wait 0).
    hybrid.cpu_threads = 1;
    hybrid.gpu_threads = 1;
    hybrid.max_running = 1;
    hybrid.policy.cpu_threshold = 1.0;
    hybrid.policy.gpu_threshold = 1.0;
    hybrid.policy.max_shift = 1.0;
    hybrid.policy.max_wait = absl::ZeroDuration();
  }
  metrics.SetWorkers(ProcessorName(Processor::kCpu), hybrid.cpu_threads);
  if (gpu_threads > 0) metrics.SetWorkers(ProcessorName(Processor::kGpu), hybrid.gpu_threads);
  TANDEM_ASSIGN_OR_RETURN(
      set.executor, scheduler::HybridQueryExecutor::Create(engines.cpu.get(), engines.gpu.get(), hybrid));
  if (options.scheduler == SchedulerKind::kSerial) {
    set.summary = absl::StrCat("serial scheduler (one query at a time on the cheaper processor); ",
                               set.cost_model->description());
    return set;
  }
  set.summary = absl::StrCat(
      "hybrid scheduler (", options.threads, " CPU workers at priority ",
      base::ThreadPriorityName(options.cpu_worker_priority),
      options.cpu_worker_cpus.empty()
          ? ""
          : absl::StrCat(" on CPUs ", base::FormatCpuList(options.cpu_worker_cpus)),
      ", ", gpu_threads, " GPU queries in flight",
      options.gpu_worker_cpus.empty() || gpu_threads == 0
          ? ""
          : absl::StrCat(" (workers on CPUs ", base::FormatCpuList(options.gpu_worker_cpus), ")"),
      ", ", gpu_threads > 0 ? options.answer_threads : 0, " answer threads",
      gpu_threads > 0 && options.answer_threads > 0 && options.answer_cpu_queries
          ? " (CPU queries too)"
          : "",
      ", default deadline ", absl::FormatDuration(options.default_deadline),
      ", max wait ", absl::FormatDuration(options.max_wait), "); ", set.cost_model->description());
  return set;
}

}  // namespace tandem::server
