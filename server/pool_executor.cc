#include "server/pool_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem::server {

absl::StatusOr<std::unique_ptr<PoolQueryExecutor>> PoolQueryExecutor::Create(
    const index::Engine* cpu, const index::Engine* gpu, Options options) {
  if (cpu == nullptr) return absl::InvalidArgumentError("a CPU engine is required");
  if (options.threads == 0) return absl::InvalidArgumentError("threads must be at least 1");
  if (options.queue_capacity == 0) {
    return absl::InvalidArgumentError("queue capacity must be at least 1");
  }
  return std::unique_ptr<PoolQueryExecutor>(new PoolQueryExecutor(cpu, gpu, std::move(options)));
}

PoolQueryExecutor::PoolQueryExecutor(const index::Engine* cpu, const index::Engine* gpu,
                                     Options options)
    : cpu_(cpu), gpu_(gpu), options_(std::move(options)) {
  workers_.reserve(options_.threads);
  for (size_t i = 0; i < options_.threads; ++i) workers_.emplace_back([this] { WorkerLoop(); });
}

PoolQueryExecutor::~PoolQueryExecutor() { Shutdown(); }

absl::Status PoolQueryExecutor::Submit(QueryJob job) {
  if (job.tasks.empty()) return absl::InvalidArgumentError("a job needs at least one query");
  auto pending = std::make_shared<PendingJob>();
  pending->job = std::move(job);
  pending->submitted = absl::Now();
  absl::MutexLock lock(&mu_);
  if (stopping_) return absl::UnavailableError("the server is shutting down");
  if (queue_.size() >= options_.queue_capacity) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the admission queue is full (", options_.queue_capacity, " waiting); retry later"));
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

void PoolQueryExecutor::ReportDepth() {
  if (options_.on_queue_depth) options_.on_queue_depth(queue_.size());
}

namespace {

// Failures of the engine itself (device out of memory, CUDA errors), as opposed to answers about the
// query (invalid, deadline, cancelled) or damage the CPU would hit too (DATA_LOSS).
bool IsEngineFault(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kAborted:
      return true;
    default:
      return false;
  }
}

}  // namespace

void PoolQueryExecutor::RunTask(const PendingJob& pending, size_t task) {
  const QueryJob& job = pending.job;
  const QueryTask& query_task = job.tasks[task];
  const absl::Time start = absl::Now();
  QueryOutcome outcome;
  outcome.queued = start - pending.submitted;

  const index::Engine* engine = cpu_;
  if (query_task.engine == EnginePreference::kGpu) engine = gpu_;
  if (engine == nullptr) {
    outcome.result = absl::FailedPreconditionError(
        "engine: GPU requested but this node has no GPU engine (see GetIndexInfo.engines)");
    job.on_done(task, std::move(outcome));
    return;
  }
  outcome.engine = std::string(engine->name());

  const index::SearchContext context{.deadline = job.deadline, .cancelled = job.cancelled.get()};
  if (absl::Status ready = context.Check(); !ready.ok()) {
    outcome.result = ready;  // expired or cancelled while queued: never run it
  } else {
    outcome.started = true;
    absl::Status delayed = absl::OkStatus();
    if (options_.debug_query_delay > absl::ZeroDuration()) delayed = DebugDelay(context);
    outcome.result = delayed.ok() ? engine->Search(query_task.query, context)
                                  : absl::StatusOr<index::SearchResult>(delayed);
    // A GPU fault is the engine's problem, not the query's: answer it on the CPU instead, while
    // the call still has time.
    if (engine == gpu_ && IsEngineFault(outcome.result.status()) && context.Check().ok()) {
      outcome.gpu_fallback = true;
      outcome.engine = std::string(cpu_->name());
      outcome.result = cpu_->Search(query_task.query, context);
    }
  }
  outcome.executed = absl::Now() - start;
  job.on_done(task, std::move(outcome));
}

absl::Status PoolQueryExecutor::DebugDelay(const index::SearchContext& context) const {
  const absl::Time end = absl::Now() + options_.debug_query_delay;
  for (absl::Time now = absl::Now(); now < end; now = absl::Now()) {
    if (absl::Status s = context.Check(); !s.ok()) return s;
    absl::SleepFor(std::min(absl::Milliseconds(1), end - now));
  }
  return context.Check();
}

}  // namespace tandem::server
