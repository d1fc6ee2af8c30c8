#include "server/hybrid_executor.h"

#include <algorithm>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cpu/thread_priority.h"
#include "index/status_macros.h"
#include "server/query_run.h"

namespace tandem::server {

using scheduler::Dequeued;
using scheduler::Processor;
using scheduler::WorkItem;
using scheduler::WorkQueues;

namespace {

WorkQueues::Capacity CapacityOf(const HybridQueryExecutor::Options& options, bool has_gpu) {
  return {.cpu = static_cast<double>(options.cpu_threads),
          .gpu = has_gpu ? static_cast<double>(options.gpu_threads) : 1.0};
}

// A worker setting the system refused (a CPU set, a priority) is said once per process, and the
// workers run on without it.
void ReportRefusedOnce(std::once_flag& reported, const char* consequence,
                       const absl::Status& status) {
  if (status.ok()) return;
  std::call_once(reported, [&] {
    std::fprintf(stderr, "tandem-server: %s: %s\n", consequence,
                 std::string(status.message()).c_str());
  });
}

}  // namespace

absl::StatusOr<std::unique_ptr<HybridQueryExecutor>> HybridQueryExecutor::Create(
    const index::Engine* cpu, const index::Engine* gpu, Options options) {
  if (cpu == nullptr) return absl::InvalidArgumentError("a CPU engine is required");
  if (options.cpu_threads == 0) return absl::InvalidArgumentError("cpu_threads must be at least 1");
  if (gpu != nullptr && options.gpu_threads == 0) {
    return absl::InvalidArgumentError("gpu_threads must be at least 1");
  }
  if (options.queue_capacity == 0) {
    return absl::InvalidArgumentError("queue capacity must be at least 1");
  }
  if (absl::Status valid = cpu::CheckThreadPriority(options.cpu_worker_priority); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cpu_worker_priority: ", valid.message()));
  }
  for (const auto& [name, cpus] : {std::pair{"cpu_worker_cpus", &options.cpu_worker_cpus},
                                   std::pair{"gpu_worker_cpus", &options.gpu_worker_cpus}}) {
    if (cpus->empty()) continue;
    if (absl::Status allowed = cpu::CheckCpusAllowed(*cpus); !allowed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", allowed.message()));
    }
  }
  if (options.default_deadline <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("default_deadline must be positive");
  }
  if (gpu != nullptr && options.predictor == nullptr) {
    return absl::InvalidArgumentError("routing between CPU and GPU needs a cost predictor");
  }
  TANDEM_RETURN_IF_ERROR(WorkQueues::Validate(options.policy, CapacityOf(options, gpu != nullptr)));
  return std::unique_ptr<HybridQueryExecutor>(
      new HybridQueryExecutor(cpu, gpu, std::move(options)));
}

HybridQueryExecutor::HybridQueryExecutor(const index::Engine* cpu, const index::Engine* gpu,
                                         Options options)
    : cpu_(cpu),
      gpu_(gpu),
      options_(std::move(options)),
      queues_(options_.policy, CapacityOf(options_, gpu != nullptr)) {
  {
    absl::MutexLock lock(&mu_);
    const scheduler::WorkQueues::Thresholds t = queues_.thresholds();
    routed_cpu_threshold_.store(t.cpu, std::memory_order_relaxed);
    routed_gpu_threshold_.store(t.gpu, std::memory_order_relaxed);
  }
  const size_t gpu_threads = gpu_ != nullptr ? options_.gpu_threads : 0;
  // The answer threads first: workers read answerers_ (its size no longer changes once they run).
  if (gpu_threads > 0) {
    for (size_t i = 0; i < options_.answer_threads; ++i) {
      answerers_.emplace_back([this] { AnswerLoop(); });
    }
  }
  workers_.reserve(options_.cpu_threads + gpu_threads);
  for (size_t i = 0; i < options_.cpu_threads; ++i) {
    workers_.emplace_back([this] { WorkerLoop(Processor::kCpu); });
  }
  for (size_t i = 0; i < gpu_threads; ++i) {
    workers_.emplace_back([this] { WorkerLoop(Processor::kGpu); });
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
  // Predictions are made before taking the lock: the predictor is thread-safe and may take a few
  // microseconds per query.
  std::vector<WorkItem> items;
  items.reserve(pending->job.tasks.size());
  for (const QueryTask& task : pending->job.tasks) {
    WorkItem& item = items.emplace_back();
    if (options_.predictor != nullptr) item.cost = options_.predictor->Predict(task.query);
    item.arrival = pending->submitted;
    item.deadline = pending->schedule_deadline;
    item.expires = pending->job.deadline;
    if (gpu_ == nullptr || task.engine == EnginePreference::kCpu) {
      item.pinned = Processor::kCpu;  // without a GPU, a kGpu request is refused on a CPU worker
    } else if (task.engine == EnginePreference::kGpu) {
      item.pinned = Processor::kGpu;
    }
  }

  // Admission without the scheduler's lock: the job is counted, then staged in the inbox, which
  // the workers move into the queues when they next take work. Under load no worker waits, and a
  // gRPC thread submitting a query never touches the lock that the workers take for every query.
  const std::array<bool, 2> may_take = MayTake(items);
  absl::Time expires = absl::InfiniteFuture();
  for (const WorkItem& item : items) expires = std::min(expires, item.expires);
  size_t jobs = waiting_jobs_.load(std::memory_order_relaxed);
  do {
    if (jobs >= options_.queue_capacity) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the admission queue is full (", options_.queue_capacity, " waiting); retry later"));
    }
  } while (!waiting_jobs_.compare_exchange_weak(jobs, jobs + 1, std::memory_order_relaxed));
  {
    absl::MutexLock lock(&inbox_mu_);
    if (inbox_closed_) {
      waiting_jobs_.fetch_sub(1, std::memory_order_relaxed);
      return absl::UnavailableError("the server is shutting down");
    }
    inbox_.push_back({.job = std::move(pending), .items = std::move(items)});
  }
  // A waiting worker would not see the inbox until something wakes it: route the job now and wake
  // whom it concerns. (A worker counts itself as waiting before its last look at the inbox, so
  // either it sees this job there or this sees it waiting.) Only a worker that may take the job
  // is worth it: at tens of thousands of queries a second, with the GPU's workers busy and idle
  // CPU workers waiting, taking the lock for every job had the GPU workers waiting for it a third
  // of their time (bench/results/hybrid_probe_h100_session15.txt). A job left in the inbox is
  // routed by the next worker that comes back for work, unless it expires before then: when it
  // expires before every waiting worker wakes by itself, one of them is woken now (any worker
  // answers expired queries).
  const bool cpu_waiting = waiting_workers_[0].load() > 0;
  const bool gpu_waiting = waiting_workers_[1].load() > 0;
  const bool expires_first = (cpu_waiting || gpu_waiting) &&
                             expires != absl::InfiniteFuture() &&
                             absl::ToUnixNanos(expires) < earliest_self_wakeup_ns_.load();
  if ((may_take[0] && cpu_waiting) || (may_take[1] && gpu_waiting) || expires_first) {
    absl::MutexLock lock(&mu_);
    Signal(DrainInbox());
    ReportDepths();
  }
  return absl::OkStatus();
}

std::array<bool, 2> HybridQueryExecutor::MayTake(const std::vector<WorkItem>& items) const {
  // The thresholds move with the load between this read and the routing: within this factor of
  // them a job may land on either side.
  constexpr double kMargin = 2;
  const scheduler::WorkQueues::Thresholds widened{
      .cpu = routed_cpu_threshold_.load(std::memory_order_relaxed) / kMargin,
      .gpu = routed_gpu_threshold_.load(std::memory_order_relaxed) * kMargin};
  std::array<bool, 2> may_take = {false, false};
  for (const WorkItem& item : items) {
    const scheduler::QueueKind queue = scheduler::WorkQueues::Route(
        item, widened, options_.policy, CapacityOf(options_, gpu_ != nullptr));
    if (queue != scheduler::QueueKind::kGpu) may_take[Index(Processor::kCpu)] = true;
    if (queue != scheduler::QueueKind::kCpu) may_take[Index(Processor::kGpu)] = true;
  }
  return may_take;
}

HybridQueryExecutor::Wakeups HybridQueryExecutor::DrainInbox() {
  std::vector<Staged> staged;
  {
    absl::MutexLock lock(&inbox_mu_);
    staged.swap(inbox_);
  }
  Wakeups wake;
  if (staged.empty()) return wake;
  // Waiting workers sleep until the earliest expiry they knew of; an earlier one needs a wake-up
  // (any processor's worker answers expired queries).
  const absl::Time expiry_before = queues_.next_expiry();
  for (Staged& s : staged) {
    s.job->unstarted = s.items.size();
    for (size_t i = 0; i < s.items.size(); ++i) {
      WorkItem& item = s.items[i];
      item.id = next_id_++;
      tasks_.emplace(item.id, TaskRef{.job = s.job, .task = i});
      const scheduler::QueueKind queue = queues_.Push(item);
      wake.any = true;
      // Wake the processor whose queue the query joined (both for the shared queue), and the
      // other one only when the owner's waiting workers cannot take all of its queue at once and
      // a steal pays. (Waking the other for every query made its idle workers take the lock once
      // per query only to find nothing worth stealing.)
      if (queue == scheduler::QueueKind::kShared) {
        wake.processor[0] = wake.processor[1] = true;
        continue;
      }
      const Processor owner =
          queue == scheduler::QueueKind::kCpu ? Processor::kCpu : Processor::kGpu;
      const Processor other = owner == Processor::kCpu ? Processor::kGpu : Processor::kCpu;
      wake.processor[Index(owner)] = true;
      if (!item.pinned.has_value() && queues_.depth(queue) > waiting_[Index(owner)] &&
          queues_.StealWouldPay(other)) {
        wake.processor[Index(other)] = true;
      }
    }
    wake.many = wake.many || s.items.size() > 1;
  }
  wake.many = wake.many || staged.size() > 1;
  if (queues_.next_expiry() < expiry_before) wake.processor[0] = wake.processor[1] = true;
  return wake;
}

void HybridQueryExecutor::Signal(const Wakeups& wake) {
  for (Processor p : {Processor::kCpu, Processor::kGpu}) {
    if (!wake.processor[Index(p)] || waiting_[Index(p)] == 0) continue;
    if (wake.many) {
      WorkAvailable(p).SignalAll();
    } else {
      WorkAvailable(p).Signal();
    }
  }
}

size_t HybridQueryExecutor::queue_depth() const {
  return waiting_jobs_.load(std::memory_order_relaxed);
}

std::vector<std::string> HybridQueryExecutor::engines() const {
  std::vector<std::string> names{std::string(cpu_->name())};
  if (gpu_ != nullptr) names.emplace_back(gpu_->name());
  return names;
}

void HybridQueryExecutor::Shutdown() {
  absl::MutexLock join_lock(&join_mu_);
  {
    absl::MutexLock lock(&inbox_mu_);
    inbox_closed_ = true;  // no job is staged after this; workers drain the inbox before exiting
  }
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    for (Processor p : {Processor::kCpu, Processor::kGpu}) WorkAvailable(p).SignalAll();
  }
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
  NameWorkerThread("tandem-answer");
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

void HybridQueryExecutor::WorkerLoop(Processor p) {
  NameWorkerThread(p == Processor::kCpu ? "tandem-cpu" : "tandem-gpu");
  const std::vector<int>& cpus =
      p == Processor::kCpu ? options_.cpu_worker_cpus : options_.gpu_worker_cpus;
  if (!cpus.empty()) {
    // Checked against the process's CPUs in Create; a cpuset changed since is reported once.
    static std::once_flag reported;
    ReportRefusedOnce(reported, "workers run on any CPU", cpu::PinThreadToCpus(cpus));
  }
  if (p == Processor::kCpu) {
    // A thread starts at its creator's priority, so this is relative to the server's.
    static std::once_flag reported;
    ReportRefusedOnce(reported, "CPU workers keep the server's priority",
                      cpu::LowerThreadPriority(options_.cpu_worker_priority));
  }
  absl::Time mark = absl::Now();
  std::optional<double> finished;  // the predicted ms of the query this worker ran last
  while (true) {
    WorkerTime time;
    Work work = NextWork(p, std::exchange(finished, std::nullopt), time.idle, time.lock);
    for (const auto& [ref, expired] : work.expired) AnswerExpired(ref, expired, time);
    const bool exit = !work.ready.has_value() && work.expired.empty();
    if (work.ready.has_value()) {
      Run(p, work.ready->first, work.ready->second, time);
      finished = work.ready->second.predicted_ms;
    }
    const absl::Time now = absl::Now();
    time.scheduling = std::max(absl::ZeroDuration(),
                               (now - mark) - time.idle - time.engine - time.answer - time.lock);
    mark = now;
    if (options_.hooks.on_worker_time) options_.hooks.on_worker_time(p, time);
    if (exit) return;
  }
}

HybridQueryExecutor::Work HybridQueryExecutor::NextWork(Processor p, std::optional<double> finished,
                                                        absl::Duration& idle,
                                                        absl::Duration& lock_wait) {
  const absl::Time before_lock = absl::Now();
  absl::MutexLock lock(&mu_);
  lock_wait += absl::Now() - before_lock;
  // The query this worker ran last is accounted for here rather than under a lock of its own: one
  // acquisition per query and worker.
  if (finished.has_value()) {
    queues_.Finished(p, *finished);
    --busy_[Index(p)];
    if (options_.hooks.on_busy_workers) options_.hooks.on_busy_workers(p, busy_[Index(p)]);
    // With a limit on running queries, the freed slot may belong to the other processor's next
    // query.
    if (options_.max_running > 0) {
      for (Processor q : {Processor::kCpu, Processor::kGpu}) WorkAvailable(q).SignalAll();
    }
  }
  while (true) {
    const absl::Time now = absl::Now();
    Work work;
    const Wakeups staged = DrainInbox();
    for (Dequeued& expired : queues_.RemoveExpired(now)) {
      work.expired.emplace_back(Detach(expired.item.id), std::move(expired));
    }
    const bool slot_free = options_.max_running == 0 || busy_[0] + busy_[1] < options_.max_running;
    if (!slot_free) {
      // Nothing may start; expired queries are still answered.
    } else if (std::optional<Dequeued> taken = queues_.Take(p, now)) {
      work.ready.emplace(Detach(taken->item.id), *std::move(taken));
      ++busy_[Index(p)];
      if (options_.hooks.on_busy_workers) options_.hooks.on_busy_workers(p, busy_[Index(p)]);
    }
    // Other workers may be needed for what this worker just moved from the inbox.
    if (staged.any) Signal(staged);
    // Shutdown closed the inbox before it set stopping_, and the inbox was drained above.
    const bool drained = stopping_ && queues_.empty();
    // The last queued query is gone: workers waiting for one can exit.
    if (drained) {
      for (Processor q : {Processor::kCpu, Processor::kGpu}) WorkAvailable(q).SignalAll();
    }
    if (work.ready.has_value() || !work.expired.empty() || staged.any) ReportDepths();
    if (work.ready.has_value() || !work.expired.empty()) return work;
    if (drained) return work;
    // Nothing for p now: count this worker as waiting, then look at the inbox once more (Submit
    // stages a job, then looks at the count), and sleep until a Submit or Shutdown signals or a
    // queued query expires, the only event in time.
    waiting_workers_[Index(p)].fetch_add(1);
    const Wakeups late = DrainInbox();
    if (late.any) {
      waiting_workers_[Index(p)].fetch_sub(1);
      Signal(late);
      continue;
    }
    ++waiting_[Index(p)];
    const absl::Time wake_by = queues_.next_expiry();
    sleep_deadlines_.insert(wake_by);
    PublishEarliestSelfWakeup();
    WorkAvailable(p).WaitWithDeadline(&mu_, wake_by);
    // By value: other workers' inserts and erases move a B-tree's elements.
    sleep_deadlines_.erase(sleep_deadlines_.find(wake_by));
    PublishEarliestSelfWakeup();
    --waiting_[Index(p)];
    waiting_workers_[Index(p)].fetch_sub(1);
    idle += absl::Now() - now;
  }
}

void HybridQueryExecutor::PublishEarliestSelfWakeup() {
  const absl::Time earliest =
      sleep_deadlines_.empty() ? absl::InfiniteFuture() : *sleep_deadlines_.begin();
  earliest_self_wakeup_ns_.store(earliest == absl::InfiniteFuture() ? INT64_MAX
                                                                     : absl::ToUnixNanos(earliest));
}

HybridQueryExecutor::TaskRef HybridQueryExecutor::Detach(uint64_t id) {
  auto node = tasks_.extract(id);
  TaskRef ref = std::move(node.mapped());
  if (--ref.job->unstarted == 0) waiting_jobs_.fetch_sub(1, std::memory_order_relaxed);
  return ref;
}

void HybridQueryExecutor::ReportDepths() {
  if (options_.hooks.on_queue_depth) {
    options_.hooks.on_queue_depth(waiting_jobs_.load(std::memory_order_relaxed));
  }
  const scheduler::WorkQueues::Thresholds t = queues_.thresholds();
  routed_cpu_threshold_.store(t.cpu, std::memory_order_relaxed);
  routed_gpu_threshold_.store(t.gpu, std::memory_order_relaxed);
  if (options_.hooks.on_thresholds) {
    if (t.cpu != reported_thresholds_.cpu || t.gpu != reported_thresholds_.gpu) {
      options_.hooks.on_thresholds(t.cpu, t.gpu);
      reported_thresholds_ = t;
    }
  }
  if (options_.hooks.on_scheduler_queue_depth) {
    // Only the queues that changed: this runs under the lock on every take.
    for (scheduler::QueueKind queue : scheduler::kAllQueues) {
      const size_t depth = queues_.depth(queue);
      size_t& reported = reported_depth_[static_cast<int>(queue)];
      if (depth != reported) options_.hooks.on_scheduler_queue_depth(queue, depth);
      reported = depth;
    }
  }
}

void HybridQueryExecutor::Run(Processor p, const TaskRef& ref, const Dequeued& taken,
                              WorkerTime& time) {
  const PendingJob& pending = *ref.job;
  const QueryTask& task = pending.job.tasks[ref.task];
  if (options_.hooks.on_decision) {
    options_.hooks.on_decision({.processor = p,
                                .queue = taken.queue,
                                .pinned = task.engine != EnginePreference::kAuto,
                                .reason = taken.reason});
  }
  QueryOutcome outcome;
  outcome.queued = absl::Now() - pending.submitted;
  if (task.engine == EnginePreference::kGpu && gpu_ == nullptr) {
    outcome.result = NoGpuEngineError();
  } else {
    const index::Engine& engine = p == Processor::kGpu ? *gpu_ : *cpu_;
    const index::SearchContext context{.deadline = pending.job.deadline,
                                       .cancelled = pending.job.cancelled.get()};
    const std::optional<absl::Duration> measured =
        RunQuery(task.query, engine, *cpu_, context, options_.debug_query_delay, outcome);
    if (measured.has_value()) {
      const double measured_ms = absl::ToDoubleMilliseconds(*measured);
      if (options_.predictor != nullptr) options_.predictor->Observe(task.query, p, measured_ms);
      if (options_.hooks.on_measured) {
        options_.hooks.on_measured(p, taken.predicted_ms, measured_ms);
      }
    }
  }
  if (options_.hooks.on_busy_time) options_.hooks.on_busy_time(p, outcome.executed);
  time.engine += outcome.executed;
  const absl::Time answer_start = absl::Now();
  if (!answerers_.empty() && (p == Processor::kGpu || options_.answer_cpu_queries)) {
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
  if (!cancelled && absl::Now() >= ref.job->schedule_deadline && options_.hooks.on_deadline_miss) {
    options_.hooks.on_deadline_miss();
  }
  ref.job->job.on_done(ref.task, std::move(outcome));
}

}  // namespace tandem::server
