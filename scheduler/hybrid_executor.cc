#include "scheduler/hybrid_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "scheduler/query_run.h"
#include "scheduler/worker_placement.h"

namespace tandem::scheduler {
namespace {

WorkQueues::Capacity CapacityOf(const ExecutorOptions& options, bool has_gpu) {
  return {.cpu = static_cast<double>(options.cpu_threads),
          .gpu = has_gpu ? static_cast<double>(options.gpu_threads) : 1.0};
}

}  // namespace

absl::StatusOr<std::unique_ptr<HybridQueryExecutor>> HybridQueryExecutor::Create(
    const index::Engine* cpu, const index::Engine* gpu, const ExecutorOptions& options,
    CostPredictor* predictor, ExecutorObserver* observer) {
  if (cpu == nullptr) return absl::InvalidArgumentError("a CPU engine is required");
  if (options.cpu_threads == 0) return absl::InvalidArgumentError("threads must be at least 1");
  if (gpu != nullptr && options.gpu_threads == 0) {
    return absl::InvalidArgumentError("gpu_threads must be at least 1");
  }
  if (options.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("default_deadline must be positive");
  }
  if (options.testing_query_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("testing_query_delay must not be negative");
  }
  if (gpu != nullptr && predictor == nullptr) {
    return absl::InvalidArgumentError("routing between CPU and GPU needs a cost predictor");
  }
  TANDEM_RETURN_IF_ERROR(CheckPlacement(options));
  TANDEM_RETURN_IF_ERROR(WorkQueues::Validate(options.policy, CapacityOf(options, gpu != nullptr)));
  const size_t workers = options.cpu_threads + (gpu != nullptr ? options.gpu_threads : 0);
  const size_t queue_capacity = options.queue_capacity != 0 ? options.queue_capacity : 4 * workers;
  return std::unique_ptr<HybridQueryExecutor>(
      new HybridQueryExecutor(cpu, gpu, options, queue_capacity, predictor,
                              observer != nullptr ? *observer : NoObserver()));
}

HybridQueryExecutor::HybridQueryExecutor(const index::Engine* cpu, const index::Engine* gpu,
                                         const ExecutorOptions& options, size_t queue_capacity,
                                         CostPredictor* predictor, ExecutorObserver& observer)
    : cpu_(cpu),
      gpu_(gpu),
      options_(options),
      queue_capacity_(queue_capacity),
      predictor_(predictor),
      observer_(observer) {
  const size_t gpu_threads = gpu_ != nullptr ? options_.gpu_threads : 0;
  // CPU workers first, then GPU workers: the dispatchers look at the GPU workers' first when they
  // pick one (they run at the server's priority).
  DispatcherConfig config{.workers = {},
                          .policy = options_.policy,
                          .capacity = CapacityOf(options_, gpu_ != nullptr),
                          .max_running = options_.max_running,
                          .queue_capacity = queue_capacity_,
                          .observer = &observer_};
  config.workers.assign(options_.cpu_threads, Processor::kCpu);
  config.workers.insert(config.workers.end(), gpu_threads, Processor::kGpu);
  const std::vector<Processor> workers = config.workers;
  dispatcher_ = CreateDispatcher(options_.dispatch, std::move(config));
  // The answer threads first: workers read answerers_ (its size no longer changes once they run).
  if (gpu_threads > 0) {
    for (size_t i = 0; i < options_.answer_threads; ++i) {
      answerers_.emplace_back([this] { AnswerLoop(); });
    }
  }
  workers_.reserve(workers.size());
  for (size_t w = 0; w < workers.size(); ++w) {
    workers_.emplace_back([this, w, p = workers[w]] { WorkerLoop(w, p); });
  }
}

HybridQueryExecutor::~HybridQueryExecutor() { Shutdown(); }

absl::Status HybridQueryExecutor::Submit(QueryJob job) {
  if (job.tasks.empty()) return absl::InvalidArgumentError("a job needs at least one query");
  auto pending = std::make_shared<PendingJob>();
  pending->job = std::move(job);
  pending->submitted = absl::Now();
  pending->schedule_deadline =
      std::min(pending->job.deadline, pending->submitted + options_.default_deadline);
  // Predictions are made before the dispatcher is involved: the predictor is thread-safe and may
  // take a few microseconds per query.
  std::vector<WorkItem> items;
  items.reserve(pending->job.tasks.size());
  for (const QueryTask& task : pending->job.tasks) {
    WorkItem& item = items.emplace_back();
    if (predictor_ != nullptr) item.cost = predictor_->Predict(task.query);
    item.arrival = pending->submitted;
    item.deadline = pending->schedule_deadline;
    item.expires = pending->job.deadline;
    if (gpu_ == nullptr || task.engine == EnginePreference::kCpu) {
      item.pinned = Processor::kCpu;  // without a GPU, a kGpu request is refused on a CPU worker
    } else if (task.engine == EnginePreference::kGpu) {
      item.pinned = Processor::kGpu;
    }
  }
  return dispatcher_->Admit(std::move(pending), std::move(items));
}

size_t HybridQueryExecutor::queue_depth() const { return dispatcher_->waiting_jobs(); }

std::vector<std::string> HybridQueryExecutor::engines() const {
  std::vector<std::string> names{std::string(cpu_->name())};
  if (gpu_ != nullptr) names.emplace_back(gpu_->name());
  return names;
}

void HybridQueryExecutor::Shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  dispatcher_->Close();
  // Workers drain the queues before they exit, so every admitted job gets its callbacks; then the
  // answer threads answer what the GPU workers handed them.
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
  {
    absl::MutexLock lock(&answer_mu_);
    answers_closed_ = true;
  }
  for (std::thread& answerer : answerers_) answerer.join();
  answerers_.clear();
}

void HybridQueryExecutor::AnswerLoop() {
  base::NameThread("tandem-answer");
  while (true) {
    std::optional<std::pair<TaskRef, QueryOutcome>> answer;
    {
      absl::MutexLock lock(&answer_mu_);
      answer_mu_.Await(absl::Condition(
          +[](HybridQueryExecutor* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->answer_mu_) {
            return self->answers_closed_ || !self->answers_.empty();
          },
          this));
      if (answers_.empty()) return;  // closed and drained
      answer.emplace(std::move(answers_.front()));
      answers_.pop_front();
    }
    Finish(answer->first, std::move(answer->second));
  }
}

void HybridQueryExecutor::WorkerLoop(size_t worker, Processor p) {
  base::NameThread(p == Processor::kCpu ? "tandem-cpu" : "tandem-gpu");
  PlaceWorker(p, options_);
  absl::Time mark = absl::Now();
  std::optional<double> finished;  // the predicted ms of the query this worker ran last
  while (true) {
    WorkerTime time;
    Work work =
        dispatcher_->Next(worker, std::exchange(finished, std::nullopt), time.idle, time.lock);
    for (const auto& [ref, expired] : work.expired) AnswerExpired(ref, expired, time);
    const bool exit = work.exit();
    if (work.ready.has_value()) {
      Run(p, work.ready->first, work.ready->second, time);
      finished = work.ready->second.predicted_ms;
    }
    const absl::Time now = absl::Now();
    time.scheduling = std::max(absl::ZeroDuration(),
                               (now - mark) - time.idle - time.engine - time.answer - time.lock);
    mark = now;
    observer_.OnWorkerTime(p, time);
    if (exit) return;
  }
}

void HybridQueryExecutor::Run(Processor p, const TaskRef& ref, const Dequeued& taken,
                              WorkerTime& time) {
  const PendingJob& pending = *ref.job;
  const QueryTask& task = pending.job.tasks[ref.task];
  observer_.OnDecision({.processor = p,
                        .queue = taken.queue,
                        .pinned = task.engine != EnginePreference::kAuto,
                        .reason = taken.reason});
  QueryOutcome outcome;
  outcome.queued = absl::Now() - pending.submitted;
  if (task.engine == EnginePreference::kGpu && gpu_ == nullptr) {
    outcome.result = NoGpuEngineError();
  } else {
    const index::Engine& engine = p == Processor::kGpu ? *gpu_ : *cpu_;
    const index::SearchContext context{.deadline = pending.job.deadline,
                                       .cancelled = pending.job.cancelled.get()};
    const std::optional<absl::Duration> measured =
        RunQuery(task.query, engine, *cpu_, context, options_.testing_query_delay, outcome);
    if (measured.has_value()) {
      const double measured_ms = absl::ToDoubleMilliseconds(*measured);
      if (predictor_ != nullptr) predictor_->Observe(task.query, p, measured_ms);
      observer_.OnMeasured(p, taken.predicted_ms, measured_ms);
    }
  }
  observer_.OnBusyTime(p, outcome.executed);
  time.engine += outcome.executed;
  const absl::Time answer_start = absl::Now();
  if (!answerers_.empty() && p == Processor::kGpu) {
    absl::MutexLock lock(&answer_mu_);
    answers_.emplace_back(ref, std::move(outcome));
  } else {
    Finish(ref, std::move(outcome));
  }
  time.answer += absl::Now() - answer_start;
}

void HybridQueryExecutor::AnswerExpired(const TaskRef& ref, const Dequeued& expired,
                                        WorkerTime& time) {
  const absl::Time answer_start = absl::Now();
  const PendingJob& pending = *ref.job;
  QueryOutcome outcome;
  outcome.queued = absl::Now() - pending.submitted;
  if (pending.job.tasks[ref.task].engine == EnginePreference::kGpu && gpu_ == nullptr) {
    outcome.result = NoGpuEngineError();
  } else {
    outcome.engine =
        std::string(expired.processor == Processor::kGpu ? gpu_->name() : cpu_->name());
    outcome.result = absl::DeadlineExceededError("query deadline exceeded");
  }
  Finish(ref, std::move(outcome));
  time.answer += absl::Now() - answer_start;
}

void HybridQueryExecutor::Finish(const TaskRef& ref, QueryOutcome outcome) {
  // A query its caller cancelled is answered to no one: no miss.
  const bool cancelled = outcome.result.status().code() == absl::StatusCode::kCancelled;
  if (!cancelled && absl::Now() >= ref.job->schedule_deadline) observer_.OnDeadlineMiss();
  ref.job->job.on_done(ref.task, std::move(outcome));
}

}  // namespace tandem::scheduler
