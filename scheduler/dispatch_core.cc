#include "scheduler/dispatch_core.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/combining_dispatcher.h"
#include "scheduler/locked_dispatcher.h"

namespace tandem::scheduler {

bool AbslParseFlag(absl::string_view text, DispatchProtocol* protocol, std::string* error) {
  if (text == "locked") {
    *protocol = DispatchProtocol::kLocked;
  } else if (text == "combining") {
    *protocol = DispatchProtocol::kCombining;
  } else {
    *error = absl::StrCat("must be locked or combining, got '", text, "'");
    return false;
  }
  return true;
}

std::string AbslUnparseFlag(DispatchProtocol protocol) {
  return protocol == DispatchProtocol::kLocked ? "locked" : "combining";
}

ExecutorObserver& NoObserver() {
  static ExecutorObserver* const observer = new ExecutorObserver();
  return *observer;
}

std::unique_ptr<Dispatcher> CreateDispatcher(DispatchProtocol protocol, DispatcherConfig config) {
  if (config.observer == nullptr) config.observer = &NoObserver();
  if (protocol == DispatchProtocol::kLocked) {
    return std::make_unique<LockedDispatcher>(std::move(config));
  }
  return std::make_unique<CombiningDispatcher>(std::move(config));
}

DispatchCore::DispatchCore(const DispatcherConfig& config)
    : config_(config), queues_(config.policy, config.capacity) {
  absl::MutexLock lock(&mu_);
  PublishThresholds(queues_.thresholds());
}

absl::Status DispatchCore::Reserve() {
  size_t jobs = waiting_jobs_.load(std::memory_order_relaxed);
  do {
    if (jobs >= config_.queue_capacity) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "the admission queue is full (", config_.queue_capacity, " waiting); retry later"));
    }
  } while (!waiting_jobs_.compare_exchange_weak(jobs, jobs + 1, std::memory_order_relaxed));
  return absl::OkStatus();
}

void DispatchCore::Unreserve() { waiting_jobs_.fetch_sub(1, std::memory_order_relaxed); }

std::array<bool, 2> DispatchCore::MayTake(const std::vector<WorkItem>& items) const {
  // The thresholds move with the load between this read and the routing: within this factor of
  // them a job may land on either side.
  constexpr double kMargin = 2;
  const WorkQueues::Thresholds widened{
      .cpu = routed_cpu_threshold_.load(std::memory_order_relaxed) / kMargin,
      .gpu = routed_gpu_threshold_.load(std::memory_order_relaxed) * kMargin};
  std::array<bool, 2> may_take = {false, false};
  for (const WorkItem& item : items) {
    const QueueKind queue = WorkQueues::Route(item, widened, config_.policy, config_.capacity);
    if (queue != QueueKind::kGpu) may_take[Index(Processor::kCpu)] = true;
    if (queue != QueueKind::kCpu) may_take[Index(Processor::kGpu)] = true;
  }
  return may_take;
}

void DispatchCore::Enqueue(const std::shared_ptr<PendingJob>& job, std::vector<WorkItem>& items) {
  job->unstarted = items.size();
  for (size_t i = 0; i < items.size(); ++i) {
    WorkItem& item = items[i];
    item.id = next_id_++;
    tasks_.emplace(item.id, TaskRef{.job = job, .task = i});
    queues_.Push(item);
  }
}

void DispatchCore::Finished(Processor p, double predicted_ms) {
  queues_.Finished(p, predicted_ms);
  --busy_[Index(p)];
  observer().OnBusyWorkers(p, busy_[Index(p)]);
}

std::vector<std::pair<TaskRef, Dequeued>> DispatchCore::RemoveExpired(absl::Time now) {
  std::vector<std::pair<TaskRef, Dequeued>> expired;
  for (Dequeued& d : queues_.RemoveExpired(now)) {
    TaskRef ref = Detach(d.item.id);
    expired.emplace_back(std::move(ref), std::move(d));
  }
  return expired;
}

bool DispatchCore::SlotFree() const {
  return config_.max_running == 0 || busy_[0] + busy_[1] < config_.max_running;
}

std::optional<std::pair<TaskRef, Dequeued>> DispatchCore::Take(Processor p, absl::Time now) {
  if (!SlotFree()) return std::nullopt;
  std::optional<Dequeued> taken = queues_.Take(p, now);
  if (!taken.has_value()) return std::nullopt;
  const int i = Index(p);
  ++busy_[i];
  observer().OnBusyWorkers(p, busy_[i]);
  TaskRef ref = Detach(taken->item.id);
  return std::make_pair(std::move(ref), *std::move(taken));
}

bool DispatchCore::HasWorkFor(Processor p, absl::Time now) {
  return SlotFree() && queues_.HasWorkFor(p, now);
}

TaskRef DispatchCore::Detach(uint64_t id) {
  auto node = tasks_.extract(id);
  TaskRef ref = std::move(node.mapped());
  if (--ref.job->unstarted == 0) waiting_jobs_.fetch_sub(1, std::memory_order_relaxed);
  return ref;
}

void DispatchCore::PublishThresholds(const WorkQueues::Thresholds& t) {
  routed_cpu_threshold_.store(t.cpu, std::memory_order_relaxed);
  routed_gpu_threshold_.store(t.gpu, std::memory_order_relaxed);
}

void DispatchCore::ReportDepths() {
  observer().OnQueueDepth(waiting_jobs());
  const WorkQueues::Thresholds t = queues_.thresholds();
  PublishThresholds(t);
  if (t.cpu != reported_thresholds_.cpu || t.gpu != reported_thresholds_.gpu) {
    observer().OnThresholds(t.cpu, t.gpu);
    reported_thresholds_ = t;
  }
  // Only the queues that changed: this runs under the lock on every take.
  for (QueueKind queue : kAllQueues) {
    const size_t depth = queues_.depth(queue);
    size_t& reported = reported_depth_[static_cast<int>(queue)];
    if (depth != reported) observer().OnSchedulerQueueDepth(queue, depth);
    reported = depth;
  }
}

}  // namespace tandem::scheduler
