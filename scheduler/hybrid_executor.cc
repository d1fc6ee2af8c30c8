#include "scheduler/hybrid_executor.h"

#include <algorithm>
#include <cassert>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "base/cpu_relax.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "base/thread_priority.h"
#include "scheduler/query_run.h"

namespace tandem::scheduler {

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

// Rounds a thread runs in a row before it asks a waiting worker to run the next (CombinePending).
constexpr int kMaxRounds = 4;
// How long a worker whose request another thread's round will serve spins before it sleeps: a
// round takes microseconds, a sleep and its wake-up tens of them on a busy machine.
constexpr absl::Duration kRequestSpin = absl::Microseconds(20);
// How long it then sleeps before it tries the lock again itself, in case no round came (a round
// that stops after kMaxRounds pokes a waiting worker, so this is a backstop).
constexpr absl::Duration kRequestRecheck = absl::Milliseconds(1);

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
  if (absl::Status valid = base::CheckThreadPriority(options.cpu_worker_priority); !valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("cpu_worker_priority: ", valid.message()));
  }
  for (const auto& [name, cpus] : {std::pair{"cpu_worker_cpus", &options.cpu_worker_cpus},
                                   std::pair{"gpu_worker_cpus", &options.gpu_worker_cpus}}) {
    if (cpus->empty()) continue;
    if (absl::Status allowed = base::CheckCpusAllowed(*cpus); !allowed.ok()) {
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
    PublishThresholds(queues_.thresholds());
  }
  const size_t gpu_threads = gpu_ != nullptr ? options_.gpu_threads : 0;
  slots_.reserve(options_.cpu_threads + gpu_threads);
  for (size_t i = 0; i < options_.cpu_threads; ++i) {
    slots_.push_back(std::make_unique<WorkerSlot>(Processor::kCpu));
  }
  for (size_t i = 0; i < gpu_threads; ++i) {
    slots_.push_back(std::make_unique<WorkerSlot>(Processor::kGpu));
  }
  // The answer threads first: workers read answerers_ (its size no longer changes once they run).
  if (gpu_threads > 0) {
    for (size_t i = 0; i < options_.answer_threads; ++i) {
      answerers_.emplace_back([this] { AnswerLoop(); });
    }
  }
  workers_.reserve(slots_.size());
  for (const std::unique_ptr<WorkerSlot>& slot : slots_) {
    workers_.emplace_back([this, s = slot.get()] { WorkerLoop(*s); });
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

  // Admission without the scheduler's lock: the job is counted, then staged in the inbox, which the
  // next round of the scheduler moves into the queues. Under load no worker is parked, and a gRPC
  // thread submitting a query never touches the lock.
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
    inbox_size_.fetch_add(1);  // before the loads of parked_ below (see CombinePending)
  }
  // A parked worker would not see the inbox until a round serves it again: run one now if a
  // parked worker may take the job. Only such a worker is worth it: at tens of thousands of
  // queries a second, with the GPU's workers busy and idle CPU workers waiting, taking the lock
  // for every job had the GPU workers waiting for it a third of their time
  // (bench/results/hybrid_probe_h100_session15.txt). A job left in the inbox is routed by the next
  // round, which the next worker to finish a query runs, unless it expires before then: when it
  // expires before the parked timekeeper wakes, a round now makes that wake-up earlier (any worker
  // answers expired queries).
  const bool cpu_parked = parked_[0].load() > 0;
  const bool gpu_parked = parked_[1].load() > 0;
  const bool expires_first = (cpu_parked || gpu_parked) && expires != absl::InfiniteFuture() &&
                             absl::ToUnixNanos(expires) < earliest_self_wakeup_ns_.load();
  if ((may_take[0] && cpu_parked) || (may_take[1] && gpu_parked) || expires_first) {
    // If another thread holds the lock, it sees this after releasing it and runs the round.
    round_wanted_.store(true);
    CombinePending(/*parked=*/false);
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

bool HybridQueryExecutor::DrainInbox() {
  std::vector<Staged> staged;
  {
    absl::MutexLock lock(&inbox_mu_);
    staged.swap(inbox_);
    inbox_size_.fetch_sub(staged.size());
  }
  for (Staged& s : staged) {
    s.job->unstarted = s.items.size();
    for (size_t i = 0; i < s.items.size(); ++i) {
      WorkItem& item = s.items[i];
      item.id = next_id_++;
      tasks_.emplace(item.id, TaskRef{.job = s.job, .task = i});
      queues_.Push(item);
    }
  }
  return !staged.empty();
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
  bool parked = false;
  {
    // Serves the parked workers: the queued work, then exit.
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    parked = Combine();
  }
  CombinePending(parked);
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

void HybridQueryExecutor::WorkerLoop(WorkerSlot& slot) {
  const Processor p = slot.processor;
  base::NameThread(p == Processor::kCpu ? "tandem-cpu" : "tandem-gpu");
  const std::vector<int>& cpus =
      p == Processor::kCpu ? options_.cpu_worker_cpus : options_.gpu_worker_cpus;
  if (!cpus.empty()) {
    // Checked against the process's CPUs in Create; a cpuset changed since is reported once.
    static std::once_flag reported;
    ReportRefusedOnce(reported, "workers run on any CPU", base::PinThreadToCpus(cpus));
  }
  if (p == Processor::kCpu) {
    // A thread starts at its creator's priority, so this is relative to the server's.
    static std::once_flag reported;
    ReportRefusedOnce(reported, "CPU workers keep the server's priority",
                      base::LowerThreadPriority(options_.cpu_worker_priority));
  }
  absl::Time mark = absl::Now();
  std::optional<double> finished;  // the predicted ms of the query this worker ran last
  while (true) {
    WorkerTime time;
    Work work = NextWork(slot, std::exchange(finished, std::nullopt), time.idle, time.lock);
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

HybridQueryExecutor::Work HybridQueryExecutor::NextWork(WorkerSlot& slot,
                                                        std::optional<double> finished,
                                                        absl::Duration& idle,
                                                        absl::Duration& lock_wait) {
  const Processor p = slot.processor;
  {
    absl::MutexLock lock(&slot.mu);
    slot.finished = finished;
    requests_.fetch_add(1);
    slot.state.store(SlotState::kRequest);
  }
  while (true) {
    const SlotState state = slot.state.load(std::memory_order_acquire);
    if (state == SlotState::kServed) {
      Work work;
      {
        absl::MutexLock lock(&slot.mu);
        slot.state.store(SlotState::kRunning);
        work = std::exchange(slot.work, Work{});
      }
      // A round handed over to this worker while it was being served is still to run.
      if (slot.poked.exchange(false)) CombinePending(/*parked=*/false);
      return work;
    }
    if (state == SlotState::kRequest) {
      // A round for this request and whoever else asked, unless another thread holds the lock:
      // that one serves this request in its round or the next, so wait for it here, spinning
      // first (a round takes microseconds), until served or handed the next round.
      slot.poked.store(false);
      CombinePending(/*parked=*/false);
      const absl::Time start = absl::Now();
      const absl::Time spin_end = start + kRequestSpin;
      for (int i = 1; slot.state.load(std::memory_order_acquire) == SlotState::kRequest &&
                      !slot.poked.load(std::memory_order_relaxed);
           ++i) {
        base::CpuRelax();
        if (i % 64 == 0 && absl::Now() >= spin_end) {
          absl::MutexLock lock(&slot.mu);
          if (slot.state.load() == SlotState::kRequest && !slot.poked.load()) {
            slot.sleeping = true;
            slot.changed.WaitWithTimeout(&slot.mu, kRequestRecheck);
            slot.sleeping = false;
          }
          break;
        }
      }
      lock_wait += absl::Now() - start;
      continue;
    }
    assert(state == SlotState::kParked && "a published request is never withdrawn");
    // Nothing to take: sleep until a round serves this worker or hands it the next round, or the
    // earliest expiry it knew of comes; then ask for a round (to answer that query).
    const absl::Time start = absl::Now();
    {
      absl::MutexLock lock(&slot.mu);
      slot.sleeping = true;
      while (slot.state.load() == SlotState::kParked && !slot.poked.load() &&
             absl::Now() < slot.wake_by) {
        slot.changed.WaitWithDeadline(&slot.mu, slot.wake_by);
      }
      slot.sleeping = false;
      if (slot.state.load() == SlotState::kParked) {
        parked_[Index(p)].fetch_sub(1);
        requests_.fetch_add(1);
        slot.state.store(SlotState::kRequest);
      }
    }
    idle += absl::Now() - start;
  }
}

void HybridQueryExecutor::CombinePending(bool parked) {
  for (int round = 0;; ++round) {
    // After a round parked a worker that had asked, a job staged meanwhile needs a round: its
    // Submit may have looked at parked_ before that worker was counted (Submit counts the job in
    // inbox_size_ before it looks at parked_; the round counts the worker before this looks).
    const bool needed =
        requests_.load() > 0 || round_wanted_.load() || (parked && inbox_size_.load() > 0);
    if (!needed) return;
    // This thread has work of its own: after a few rounds the next is for a waiting worker. (With
    // every worker busy, this thread goes on: nobody else would run it.)
    if (round >= kMaxRounds && HandOverNextRound()) return;
    // A thread holding the lock runs this check after it releases it.
    if (!mu_.TryLock()) return;
    parked = Combine();
    mu_.Unlock();
  }
}

bool HybridQueryExecutor::HandOverNextRound() {
  for (const SlotState wanted : {SlotState::kRequest, SlotState::kParked}) {
    // GPU workers' slots are last.
    for (auto it = slots_.rbegin(); it != slots_.rend(); ++it) {
      WorkerSlot& slot = **it;
      if (slot.state.load(std::memory_order_acquire) != wanted) continue;
      absl::MutexLock lock(&slot.mu);
      if (slot.state.load() != wanted) continue;
      slot.poked.store(true);
      if (slot.sleeping) slot.changed.Signal();
      return true;
    }
  }
  return false;
}

bool HybridQueryExecutor::Combine() {
  round_wanted_.store(false);  // before the inbox is drained (see Submit)
  const absl::Time now = absl::Now();
  const bool drained = DrainInbox();
  bool changed = drained;
  // The workers that asked, and the parked ones, from a starting point that moves each round.
  absl::InlinedVector<WorkerSlot*, 32> asking;
  absl::InlinedVector<WorkerSlot*, 32> parked;
  const size_t n = slots_.size();
  for (size_t k = 0; k < n; ++k) {
    WorkerSlot* slot = slots_[(next_slot_ + k) % n].get();
    const SlotState state = slot->state.load(std::memory_order_acquire);
    if (state == SlotState::kRequest) asking.push_back(slot);
    if (state == SlotState::kParked) parked.push_back(slot);
  }
  next_slot_ = (next_slot_ + 1) % n;
  // First the queries the askers finished, so that loads and free slots are current before
  // anything is taken. (Only a round moves a slot out of kRequest, so these stay asking.)
  for (WorkerSlot* slot : asking) {
    std::optional<double> finished;
    {
      absl::MutexLock lock(&slot->mu);
      finished = std::exchange(slot->finished, std::nullopt);
    }
    if (!finished.has_value()) continue;
    const Processor p = slot->processor;
    queues_.Finished(p, *finished);
    --busy_[Index(p)];
    if (options_.hooks.on_busy_workers) options_.hooks.on_busy_workers(p, busy_[Index(p)]);
    changed = true;  // a freed slot (max_running), a lighter load (stealing)
  }
  // Expired queries go to the first worker served; without one they wait for the next round.
  std::vector<Dequeued> expired;
  if (!asking.empty() || !parked.empty()) expired = queues_.RemoveExpired(now);
  const bool any_expired = !expired.empty();
  changed = changed || any_expired || stopping_;

  bool took = false;
  bool parked_asker = false;
  // Once Take finds nothing for a processor, nothing else this round changes that.
  bool exhausted[2] = {false, false};
  const absl::Time next_expiry = queues_.next_expiry();
  auto serve = [&](WorkerSlot& slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    const Processor p = slot.processor;
    const int i = Index(p);
    absl::MutexLock lock(&slot.mu);
    // A parked worker may have asked for a round meanwhile (its wake-up came): served the same.
    const SlotState state = slot.state.load();
    if (state != SlotState::kRequest && state != SlotState::kParked) return;
    Work work;
    for (Dequeued& d : expired) work.expired.emplace_back(Detach(d.item.id), std::move(d));
    expired.clear();
    const bool slot_free = options_.max_running == 0 || busy_[0] + busy_[1] < options_.max_running;
    if (slot_free && !exhausted[i]) {
      if (std::optional<Dequeued> taken = queues_.Take(p, now)) {
        work.ready.emplace(Detach(taken->item.id), *std::move(taken));
        ++busy_[i];
        if (options_.hooks.on_busy_workers) options_.hooks.on_busy_workers(p, busy_[i]);
        took = true;
      } else {
        exhausted[i] = true;
      }
    }
    // Shutdown closed the inbox before it set stopping_, and the inbox was drained above: with
    // the queues empty too, a worker with nothing to do exits.
    const bool exit = stopping_ && queues_.empty();
    if (work.ready.has_value() || !work.expired.empty() || exit) {
      (state == SlotState::kRequest ? requests_ : parked_[i]).fetch_sub(1);
      slot.work = std::move(work);
      slot.state.store(SlotState::kServed);
      if (slot.sleeping) slot.changed.Signal();
      return;
    }
    if (state == SlotState::kRequest) {
      parked_[i].fetch_add(1);  // before CombinePending looks at inbox_size_ (see there)
      requests_.fetch_sub(1);
      slot.wake_by = absl::InfiniteFuture();  // unless it becomes the timekeeper below
      slot.state.store(SlotState::kParked);
      parked_asker = true;
    }
  };
  for (WorkerSlot* slot : asking) serve(*slot);
  // Parked workers are served again only when something changed that could give them work.
  if (changed) {
    for (WorkerSlot* slot : parked) {
      // Skipped without its mutex when the round has nothing for it.
      const bool nothing =
          exhausted[Index(slot->processor)] && expired.empty() && !(stopping_ && queues_.empty());
      if (!nothing) serve(*slot);
    }
  }
  // One parked worker, the timekeeper, sleeps until the earliest expiry to answer it should no
  // round come first; the others sleep until a round serves them. (Waking them all at each expiry
  // had every idle CPU worker, at its lowered priority, run a round.) A GPU worker's slot first:
  // they run at the server's priority.
  WorkerSlot* keeper = timekeeper_;
  if (keeper == nullptr || keeper->state.load(std::memory_order_acquire) != SlotState::kParked) {
    keeper = nullptr;
    for (auto it = slots_.rbegin(); it != slots_.rend() && keeper == nullptr; ++it) {
      if ((*it)->state.load(std::memory_order_acquire) == SlotState::kParked) keeper = it->get();
    }
    timekeeper_ = keeper;
  }
  absl::Time earliest = absl::InfiniteFuture();
  if (keeper != nullptr) {
    absl::MutexLock lock(&keeper->mu);
    // (It may have woken by itself and asked meanwhile: then it runs a round anyway.)
    if (keeper->state.load() == SlotState::kParked) {
      const bool earlier = next_expiry < keeper->wake_by;
      keeper->wake_by = next_expiry;
      if (earlier && keeper->sleeping) keeper->changed.Signal();
      earliest = next_expiry;
    }
  }
  earliest_self_wakeup_ns_.store(earliest == absl::InfiniteFuture() ? INT64_MAX
                                                                    : absl::ToUnixNanos(earliest));
  if (drained || took || any_expired) ReportDepths();
  return parked_asker;
}

HybridQueryExecutor::TaskRef HybridQueryExecutor::Detach(uint64_t id) {
  auto node = tasks_.extract(id);
  TaskRef ref = std::move(node.mapped());
  if (--ref.job->unstarted == 0) waiting_jobs_.fetch_sub(1, std::memory_order_relaxed);
  return ref;
}

void HybridQueryExecutor::PublishThresholds(const scheduler::WorkQueues::Thresholds& t) {
  routed_cpu_threshold_.store(t.cpu, std::memory_order_relaxed);
  routed_gpu_threshold_.store(t.gpu, std::memory_order_relaxed);
}

void HybridQueryExecutor::ReportDepths() {
  if (options_.hooks.on_queue_depth) {
    options_.hooks.on_queue_depth(waiting_jobs_.load(std::memory_order_relaxed));
  }
  const scheduler::WorkQueues::Thresholds t = queues_.thresholds();
  PublishThresholds(t);
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

}  // namespace tandem::scheduler
