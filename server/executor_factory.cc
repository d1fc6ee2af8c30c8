#include "server/executor_factory.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/thread_affinity.h"
#include "cost_model/cost_features.h"
#include "scheduler/hybrid_executor.h"
#include "scheduler/pool_executor.h"
#include "scheduler/work_queues.h"

namespace tandem::server {
namespace {

using scheduler::Processor;

constexpr std::pair<SchedulerKind, absl::string_view> kSchedulerNames[] = {
    {SchedulerKind::kAuto, "auto"},
    {SchedulerKind::kPool, "pool"},
    {SchedulerKind::kHybrid, "hybrid"},
    {SchedulerKind::kSerial, "serial"},
};

bool UseHybrid(SchedulerKind kind, const EngineSet& engines) {
  switch (kind) {
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

// The trained model of the settings' file, or the heuristic; either refines itself from live
// timings.
absl::StatusOr<std::unique_ptr<cost_model::CostModel>> LoadCostModel(
    const CostModelSettings& settings, const index::Index& index, const EngineSet& engines) {
  cost_model::CostModelOptions model_options;
  model_options.index = &index;
  model_options.resident_fraction = engines.gpu_resident_fraction;
  model_options.refine_every = settings.refine_every;
  model_options.refine_min_interval = settings.refine_interval;
  if (settings.file.empty()) return cost_model::CostModel::Heuristic(std::move(model_options));
  absl::StatusOr<std::unique_ptr<cost_model::CostModel>> model =
      cost_model::CostModel::Load(settings.file, std::move(model_options));
  if (!model.ok()) {
    return absl::Status(model.status().code(),
                        absl::StrCat("cannot load cost model: ", model.status().message()));
  }
  return model;
}

std::string HybridSummary(const scheduler::ExecutorOptions& o, size_t gpu_threads,
                          const cost_model::CostModel& model) {
  return absl::StrCat(
      "hybrid scheduler (", o.cpu_threads, " CPU workers",
      o.cpu_worker_cpus.empty() ? ""
                                : absl::StrCat(" on CPUs ", base::FormatCpuList(o.cpu_worker_cpus)),
      ", ", gpu_threads, " GPU queries in flight",
      o.gpu_worker_cpus.empty() || gpu_threads == 0
          ? ""
          : absl::StrCat(" (workers on CPUs ", base::FormatCpuList(o.gpu_worker_cpus), ")"),
      ", ", gpu_threads > 0 ? o.answer_threads : 0, " answer threads, ",
      scheduler::AbslUnparseFlag(o.dispatch), " dispatch, default deadline ",
      absl::FormatDuration(o.default_deadline), ", max wait ",
      absl::FormatDuration(o.policy.max_wait), "); ", model.description());
}

}  // namespace

bool AbslParseFlag(absl::string_view text, SchedulerKind* kind, std::string* error) {
  for (const auto& [known, name] : kSchedulerNames) {
    if (text == name) {
      *kind = known;
      return true;
    }
  }
  *error = absl::StrCat("must be auto, pool, hybrid or serial, got '", text, "'");
  return false;
}

std::string AbslUnparseFlag(SchedulerKind kind) {
  for (const auto& [known, name] : kSchedulerNames) {
    if (known == kind) return std::string(name);
  }
  return "auto";
}

absl::StatusOr<ExecutorSet> CreateExecutor(const SchedulerOptions& options,
                                           const index::Index& index, const EngineSet& engines,
                                           prometheus::Registry& registry,
                                           QueryMetrics& query_metrics) {
  ExecutorSet set;
  scheduler::ExecutorOptions executor = options.executor;
  if (!UseHybrid(options.kind, engines)) {
    set.metrics = std::make_unique<SchedulerMetrics>(registry, query_metrics, nullptr);
    TANDEM_ASSIGN_OR_RETURN(
        set.executor, scheduler::PoolQueryExecutor::Create(engines.cpu.get(), engines.gpu.get(),
                                                           executor, set.metrics.get()));
    set.summary = absl::StrCat("pool scheduler (", executor.cpu_threads, " workers, FIFO)");
    if (!options.cost_model.file.empty()) absl::StrAppend(&set.summary, "; --cost-model unused");
    return set;
  }

  TANDEM_ASSIGN_OR_RETURN(set.cost_model, LoadCostModel(options.cost_model, index, engines));
  set.metrics = std::make_unique<SchedulerMetrics>(registry, query_metrics, set.cost_model.get());
  set.metrics->SetTrainingError();
  const size_t gpu_threads = engines.gpu != nullptr ? executor.gpu_threads : 0;
  if (options.kind == SchedulerKind::kSerial) {
    // The options serial replaces must still be usable: a bad flag is an error with any scheduler.
    if (executor.cpu_threads == 0) return absl::InvalidArgumentError("threads must be at least 1");
    TANDEM_RETURN_IF_ERROR(scheduler::WorkQueues::Validate(
        executor.policy, {.cpu = static_cast<double>(executor.cpu_threads),
                          .gpu = static_cast<double>(std::max<size_t>(executor.gpu_threads, 1))}));
    // One query at a time, on the processor with the lower prediction (both thresholds at 1, no
    // load shift; a steal never pays with the other processor idle), oldest first (max_wait 0).
    executor.cpu_threads = 1;
    executor.gpu_threads = 1;
    executor.max_running = 1;
    executor.policy.cpu_threshold = 1.0;
    executor.policy.gpu_threshold = 1.0;
    executor.policy.max_shift = 1.0;
    executor.policy.max_wait = absl::ZeroDuration();
  }
  set.metrics->SetWorkers(Processor::kCpu, executor.cpu_threads);
  if (gpu_threads > 0) set.metrics->SetWorkers(Processor::kGpu, executor.gpu_threads);
  TANDEM_ASSIGN_OR_RETURN(set.executor, scheduler::HybridQueryExecutor::Create(
                                            engines.cpu.get(), engines.gpu.get(), executor,
                                            set.cost_model.get(), set.metrics.get()));
  set.summary = options.kind == SchedulerKind::kSerial
                    ? absl::StrCat(
                          "serial scheduler (one query at a time on the cheaper "
                          "processor); ",
                          set.cost_model->description())
                    : HybridSummary(executor, gpu_threads, *set.cost_model);
  return set;
}

}  // namespace tandem::server
