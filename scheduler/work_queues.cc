#include "scheduler/work_queues.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "base/enum_names.h"

namespace tandem::scheduler {
namespace {

Processor Other(Processor p) { return p == Processor::kCpu ? Processor::kGpu : Processor::kCpu; }

// cpu_ms / gpu_ms; a zero GPU prediction counts as infinitely cheaper there, two zeros as equal.
double CostRatio(const CostEstimate& cost) {
  if (cost.gpu_ms > 0) return cost.cpu_ms / cost.gpu_ms;
  return cost.cpu_ms > 0 ? std::numeric_limits<double>::infinity() : 1.0;
}

Processor Cheaper(const CostEstimate& cost) {
  return cost.cpu_ms <= cost.gpu_ms ? Processor::kCpu : Processor::kGpu;
}

QueueKind QueueOf(Processor p) { return p == Processor::kCpu ? QueueKind::kCpu : QueueKind::kGpu; }

// When an item has used `fraction` of the time from its arrival to its deadline.
absl::Time UrgentAt(const WorkItem& item, double fraction) {
  if (item.deadline == absl::InfiniteFuture()) return absl::InfiniteFuture();
  if (item.deadline <= item.arrival) return item.arrival;
  return item.arrival + fraction * (item.deadline - item.arrival);
}

}  // namespace

constexpr base::EnumName<QueueKind> kQueueNames[] = {
    {QueueKind::kCpu, "cpu"}, {QueueKind::kGpu, "gpu"}, {QueueKind::kShared, "shared"}};

absl::string_view QueueName(QueueKind queue) { return base::NameOf(kQueueNames, queue); }

absl::Status WorkQueues::Validate(const Policy& policy, const Capacity& capacity) {
  if (!(policy.cpu_threshold > 0) || !std::isfinite(policy.cpu_threshold)) {
    return absl::InvalidArgumentError("cpu_threshold must be a positive number");
  }
  if (!(policy.gpu_threshold >= policy.cpu_threshold) || !std::isfinite(policy.gpu_threshold)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_threshold must be finite and at least cpu_threshold (",
                     policy.cpu_threshold, "), got ", policy.gpu_threshold));
  }
  if (!(policy.max_shift >= 1) || !std::isfinite(policy.max_shift)) {
    return absl::InvalidArgumentError("max_shift must be a finite number >= 1");
  }
  if (!(policy.load_floor_ms > 0) || !std::isfinite(policy.load_floor_ms)) {
    return absl::InvalidArgumentError("load_floor_ms must be a positive number");
  }
  if (!(policy.urgent_fraction >= 0 && policy.urgent_fraction <= 1)) {
    return absl::InvalidArgumentError("urgent_fraction must be between 0 and 1");
  }
  if (policy.max_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max_wait must not be negative");
  }
  if (!(capacity.cpu > 0) || !(capacity.gpu > 0)) {
    return absl::InvalidArgumentError("each processor's capacity must be positive");
  }
  return absl::OkStatus();
}

WorkQueues::WorkQueues(const Policy& policy, const Capacity& capacity)
    : policy_(policy), capacity_(capacity) {
  assert(Validate(policy, capacity).ok());
}

WorkQueues::Thresholds WorkQueues::thresholds() const {
  const double floor = policy_.load_floor_ms;
  const double shift =
      std::clamp((load_ms(Processor::kGpu) + floor) / (load_ms(Processor::kCpu) + floor),
                 1.0 / policy_.max_shift, policy_.max_shift);
  return {.cpu = policy_.cpu_threshold * shift, .gpu = policy_.gpu_threshold * shift};
}

double WorkQueues::load_ms(Processor p) const {
  const int i = Index(p);
  return std::max(0.0, waiting_ms_[i] + running_ms_[i]) / CapacityOf(p);
}

size_t WorkQueues::depth(QueueKind queue) const { return arrival_order_[Index(queue)].size(); }

absl::Time WorkQueues::next_expiry() const {
  return expiry_.empty() ? absl::InfiniteFuture() : expiry_.begin()->first;
}

QueueKind WorkQueues::Route(const WorkItem& item, const Thresholds& t, const Policy& policy,
                            const Capacity& capacity) {
  if (item.pinned.has_value()) return QueueOf(*item.pinned);
  double ratio = CostRatio(item.cost);
  if (policy.normalize_by_capacity) ratio *= capacity.gpu / capacity.cpu;
  if (ratio >= t.gpu) return QueueKind::kGpu;
  if (ratio <= t.cpu) return QueueKind::kCpu;
  return QueueKind::kShared;
}

QueueKind WorkQueues::Push(const WorkItem& item) {
  const uint64_t seq = next_seq_++;
  Entry entry{.item = item,
              .queue = Route(item, thresholds(), policy_, capacity_),
              .preferred = Cheaper(item.cost)};
  if (entry.queue != QueueKind::kShared) {
    entry.preferred = entry.queue == QueueKind::kCpu ? Processor::kCpu : Processor::kGpu;
  }
  entry.urgent_at = UrgentAt(item, policy_.urgent_fraction);

  arrival_order_[Index(entry.queue)].insert({item.arrival, seq});
  if (entry.queue != QueueKind::kShared) {
    const Processor p = entry.preferred;
    shortest_[Index(p)].insert({item.cost.ms(p), seq});
    if (!item.pinned.has_value()) stealable_[Index(p)].insert({item.cost.ms(Other(p)), seq});
    waiting_ms_[Index(p)] += item.cost.ms(p);
  }
  if (entry.urgent_at != absl::InfiniteFuture()) not_yet_urgent_.insert({entry.urgent_at, seq});
  if (item.expires != absl::InfiniteFuture()) expiry_.insert({item.expires, seq});
  const QueueKind queue = entry.queue;
  entries_.emplace(seq, std::move(entry));
  return queue;
}

void WorkQueues::PromoteUrgent(absl::Time now) {
  while (!not_yet_urgent_.empty() && not_yet_urgent_.begin()->first <= now) {
    const uint64_t seq = not_yet_urgent_.begin()->second;
    not_yet_urgent_.erase(not_yet_urgent_.begin());
    Entry& entry = entries_.at(seq);
    entry.urgent = true;
    urgent_[Index(entry.preferred)].insert({entry.item.deadline, seq});
  }
}

std::optional<uint64_t> WorkQueues::Choose(Processor p, absl::Time now, TakeReason* reason) const {
  const int own = Index(p);
  if (!urgent_[own].empty()) {
    *reason = TakeReason::kUrgent;
    return urgent_[own].begin()->second;
  }
  const absl::btree_set<TimeKey>& own_queue = arrival_order_[Index(QueueOf(p))];
  const absl::btree_set<TimeKey>& shared = arrival_order_[Index(QueueKind::kShared)];
  const TimeKey* oldest = nullptr;
  if (!own_queue.empty()) oldest = &*own_queue.begin();
  if (!shared.empty() && (oldest == nullptr || *shared.begin() < *oldest))
    oldest = &*shared.begin();
  if (oldest != nullptr && now - oldest->first >= policy_.max_wait) {
    *reason = TakeReason::kStarved;
    return oldest->second;
  }
  if (!shortest_[own].empty()) {
    *reason = TakeReason::kShortest;
    return shortest_[own].begin()->second;
  }
  if (!shared.empty()) {
    *reason = TakeReason::kShared;
    return shared.begin()->second;
  }
  const std::optional<uint64_t> stolen = Stealable(p);
  if (!stolen.has_value()) return std::nullopt;
  *reason = TakeReason::kStolen;
  return stolen;
}

std::optional<uint64_t> WorkQueues::Stealable(Processor thief) const {
  const absl::btree_set<CostKey>& candidates = stealable_[Index(Other(thief))];
  if (candidates.empty()) return std::nullopt;
  const auto [cost_here, seq] = *candidates.begin();
  if (policy_.steal_only_if_sooner) {
    const Processor owner = Other(thief);
    const double cost_there = entries_.at(seq).item.cost.ms(owner);
    const double wait_there = load_ms(owner) - cost_there / CapacityOf(owner);
    if (!(cost_here < cost_there + wait_there)) return std::nullopt;
  }
  return seq;
}

std::optional<Dequeued> WorkQueues::Take(Processor p, absl::Time now) {
  PromoteUrgent(now);
  TakeReason reason;
  const std::optional<uint64_t> seq = Choose(p, now, &reason);
  if (!seq.has_value()) return std::nullopt;
  Dequeued taken = Remove(*seq, p, reason);
  if (reason == TakeReason::kStolen) ++steals_[Index(p)];
  running_ms_[Index(p)] += taken.predicted_ms;
  ++running_[Index(p)];
  return taken;
}

bool WorkQueues::HasWorkFor(Processor p, absl::Time now) {
  PromoteUrgent(now);
  TakeReason reason;
  return Choose(p, now, &reason).has_value();
}

void WorkQueues::Finished(Processor p, double predicted_ms) {
  const int i = Index(p);
  assert(running_[i] > 0);
  running_ms_[i] -= predicted_ms;
  // Sums of doubles drift; an idle processor's running load is exactly zero.
  if (--running_[i] == 0) running_ms_[i] = 0;
}

std::vector<Dequeued> WorkQueues::RemoveExpired(absl::Time now) {
  std::vector<Dequeued> expired;
  while (!expiry_.empty() && expiry_.begin()->first <= now) {
    const uint64_t seq = expiry_.begin()->second;
    expired.push_back(Remove(seq, entries_.at(seq).preferred, TakeReason::kExpired));
  }
  return expired;
}

Dequeued WorkQueues::Remove(uint64_t seq, Processor processor, TakeReason reason) {
  auto node = entries_.extract(seq);
  assert(!node.empty());
  Entry& entry = node.mapped();
  const WorkItem& item = entry.item;
  arrival_order_[Index(entry.queue)].erase({item.arrival, seq});
  if (entry.queue != QueueKind::kShared) {
    const Processor owner = entry.preferred;
    const int i = Index(owner);
    shortest_[i].erase({item.cost.ms(owner), seq});
    stealable_[i].erase({item.cost.ms(Other(owner)), seq});
    waiting_ms_[i] -= item.cost.ms(owner);
    if (shortest_[i].empty()) waiting_ms_[i] = 0;  // no drift left behind by an empty queue
  }
  if (entry.urgent) {
    urgent_[Index(entry.preferred)].erase({item.deadline, seq});
  } else if (entry.urgent_at != absl::InfiniteFuture()) {
    not_yet_urgent_.erase({entry.urgent_at, seq});
  }
  if (item.expires != absl::InfiniteFuture()) expiry_.erase({item.expires, seq});
  const double predicted_ms = item.cost.ms(processor);
  return Dequeued{.item = std::move(entry.item),
                  .queue = entry.queue,
                  .processor = processor,
                  .reason = reason,
                  .predicted_ms = predicted_ms};
}

}  // namespace tandem::scheduler
