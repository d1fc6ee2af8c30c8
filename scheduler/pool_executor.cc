#include "scheduler/pool_executor.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "base/thread_name.h"
#include "scheduler/query_run.h"

namespace tandem::scheduler {

absl::StatusOr<std::unique_ptr<PoolQueryExecutor>> PoolQueryExecutor::Create(
    const index::Engine* cpu, const index::Engine* gpu, const ExecutorOptions& options,
    ExecutorObserver* observer) {
  if (cpu == nullptr) return absl::InvalidArgumentError("a CPU engine is required");
  if (options.cpu_threads == 0) {
    return absl::InvalidArgumentError("threads must be at least 1");
  }
  if (options.testing_query_delay < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("testing_query_delay must not be negative");
  }
  return std::unique_ptr<PoolQueryExecutor>(
      new PoolQueryExecutor(cpu, gpu, options, observer != nullptr ? *observer : NoObserver()));
}

PoolQueryExecutor::PoolQueryExecutor(const index::Engine* cpu, const index::Engine* gpu,
                                     const ExecutorOptions& options, ExecutorObserver& observer)
    : cpu_(cpu),
      gpu_(gpu),
      options_(options),
      queue_capacity_(options.queue_capacity != 0 ? options.queue_capacity
                                                  : 4 * options.cpu_threads),
      observer_(observer) {
  workers_.reserve(options_.cpu_threads);
  for (size_t i = 0; i < options_.cpu_threads; ++i) {
    workers_.emplace_back([this] { WorkerLoop(); });
  }
}

PoolQueryExecutor::~PoolQueryExecutor() { Shutdown(); }

absl::Status PoolQueryExecutor::Submit(QueryJob job) {
  if (job.tasks.empty()) return absl::InvalidArgumentError("a job needs at least one query");
  auto pending = std::make_shared<PendingJob>();
  pending->job = std::move(job);
  pending->submitted = absl::Now();
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  if (queue_.size() >= queue_capacity_) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the admission queue is full (", queue_capacity_, " waiting); retry later"));
  }
  queue_.push_back(std::move(pending));
  ReportDepth();
  return absl::OkStatus();
}

size_t PoolQueryExecutor::queue_depth() const {
  absl::MutexLock lock(&mu_);
  return queue_.size();
}

std::vector<std::string> PoolQueryExecutor::engines() const {
  std::vector<std::string> names{std::string(cpu_->name())};
  if (gpu_ != nullptr) names.emplace_back(gpu_->name());
  return names;
}

void PoolQueryExecutor::Shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  // Workers drain the queue before they exit, so every admitted job gets its callbacks.
  for (std::thread& worker : workers_) worker.join();
  workers_.clear();
}

void PoolQueryExecutor::WorkerLoop() {
  base::NameThread("tandem-worker");
  while (true) {
    std::shared_ptr<PendingJob> pending;
    size_t task;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](PoolQueryExecutor* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->queue_.empty();
          },
          this));
      if (queue_.empty()) return;  // stopping, and nothing left to run
      pending = queue_.front();
      task = pending->next_task++;
      if (pending->next_task == pending->job.tasks.size()) {
        queue_.pop_front();
        ReportDepth();
      }
    }
    RunTask(*pending, task);
  }
}

void PoolQueryExecutor::ReportDepth() { observer_.OnQueueDepth(queue_.size()); }

void PoolQueryExecutor::RunTask(const PendingJob& pending, size_t task) {
  const QueryJob& job = pending.job;
  const QueryTask& query_task = job.tasks[task];
  QueryOutcome outcome;
  outcome.queued = absl::Now() - pending.submitted;
  const index::Engine* engine = query_task.engine == EnginePreference::kGpu ? gpu_ : cpu_;
  if (engine == nullptr) {
    outcome.result = NoGpuEngineError();
  } else {
    const index::SearchContext context{.deadline = job.deadline, .cancelled = job.cancelled.get()};
    RunQuery(query_task.query, *engine, *cpu_, context, options_.testing_query_delay, outcome);
  }
  job.on_done(task, std::move(outcome));
}

}  // namespace tandem::scheduler
