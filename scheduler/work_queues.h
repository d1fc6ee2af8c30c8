// File: work_queues.h
//
// The scheduling policy of the hybrid CPU+GPU executor (Ding et al. 2009, section 9), without
// threads or clocks: the caller passes the time in, so every decision can be replayed in a test.
//
// Three queues, as in the paper: queries much cheaper on the GPU, much cheaper on the CPU, and the
// rest (shared). A query goes by its predicted cost ratio, by default per unit of capacity:
//
//   r = (cpu_ms / capacity_cpu) / (gpu_ms / capacity_gpu)
//   r >= gpu_threshold -> GPU queue;   r <= cpu_threshold -> CPU queue;   else -> shared queue.
//
// Normalizing by capacity (normalize_by_capacity; off gives the paper's plain cpu_ms / gpu_ms)
// compares the share of each processor's throughput a query would use, which is what decides how
// many queries per second the pair sustains when the processors run different numbers of queries
// at once. With 10 CPU workers and 4 GPU queries in flight, a query of 0.6 ms on a core and 0.16 ms
// on the GPU uses 0.06 ms of the CPU pool's time and 0.04 ms of the GPU's: r = 1.5 (shared),
// where the plain ratio, 3.75, would send it to the GPU queue however busy the GPU is.
//
// The thresholds adapt to load. Each processor's load is the predicted time to drain what is
// committed to it: (predicted ms of its waiting queries + predicted ms of its running ones) /
// capacity (queries it runs at once). Both thresholds are multiplied by
//
//   shift = clamp((load_gpu + load_floor_ms) / (load_cpu + load_floor_ms), 1/max_shift, max_shift)
//
// so when the GPU has twice the CPU's backlog a query needs twice the GPU advantage to be sent
// there, and the other way round; load_floor_ms keeps near-idle processors from swinging the band.
// The band is shifted, not widened, under load: the shared queue is served only when a processor's
// own queue is empty, so a wider band would park more queries until they turn urgent.
//
// An engine hint pins a query to one processor: it waits in that processor's queue, is never
// stolen and is labelled "pinned" in the decisions.
//
// Take(p, now) picks what processor p runs next:
//   (a) urgent: a query whose preferred processor is p (pinned or own queue: that processor;
//   shared:
//       the cheaper one) and that has used urgent_fraction of the time from arrival to its deadline
//       goes first, earliest deadline first;
//   (b) starved: else the oldest query of p's queue or the shared queue that has waited max_wait or
//       more, so nothing waits unboundedly behind a stream of shorter queries;
//   (c) shortest: else p's own queue, shortest predicted time on p first;
//   (d) shared: else the oldest query of the shared queue;
//   (e) stolen: else the other processor's queue (pinned queries excepted): the query cheapest on
//   p,
//       taken only when p is predicted to finish it sooner than its own processor would:
//         cost_p < cost_other + (load_other - cost_other / capacity_other)
//       (steal_only_if_sooner; off gives the paper's unconditional stealing).
//
// Usage (under the caller's lock):
//   WorkQueues queues(WorkQueues::Policy{}, {.cpu = 16, .gpu = 4});
//   queues.Push({.id = 7, .cost = {.cpu_ms = 3, .gpu_ms = 0.4}, .arrival = now, .deadline = d});
//   if (std::optional<Dequeued> next = queues.Take(Processor::kGpu, absl::Now())) {
//     ... run next->item.id ...;  queues.Finished(Processor::kGpu, next->predicted_ms);
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/btree_set.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cost_model/cost_predictor.h"

namespace tandem::scheduler {

// The cost model's words, which the whole scheduler speaks.
using cost_model::CostEstimate;
using cost_model::CostPredictor;
using cost_model::Processor;
using cost_model::ProcessorName;

enum class QueueKind { kCpu, kGpu, kShared };
inline constexpr QueueKind kAllQueues[] = {QueueKind::kCpu, QueueKind::kGpu, QueueKind::kShared};
absl::string_view QueueName(QueueKind queue);  // "cpu", "gpu", "shared"

struct WorkItem {
  uint64_t id = 0;  // the caller's handle; WorkQueues only hands it back
  CostEstimate cost;
  absl::Time arrival = absl::UnixEpoch();
  // When the query should be answered by: urgency counts towards it.
  absl::Time deadline = absl::InfiniteFuture();
  // When it is no longer worth running (the caller's hard deadline): RemoveExpired drops it then.
  absl::Time expires = absl::InfiniteFuture();
  // An engine hint: only this processor runs it.
  std::optional<Processor> pinned = std::nullopt;
};

// Why an item left the queues.
enum class TakeReason { kUrgent, kStarved, kShortest, kShared, kStolen, kExpired };

struct Dequeued {
  WorkItem item;
  QueueKind queue = QueueKind::kShared;  // where it waited
  // Take: the processor that took it. RemoveExpired: the one it would have run on.
  Processor processor = Processor::kCpu;
  TakeReason reason = TakeReason::kShortest;
  double predicted_ms = 0;  // item.cost.ms(processor); hand it back to Finished
};

class WorkQueues {
 public:
  struct Policy {
    double gpu_threshold = 2.0;  // cpu_ms / gpu_ms at or above this, before the load shift: GPU
    double cpu_threshold = 0.5;  // at or below this: CPU
    double max_shift = 4.0;      // bound of the load shift; 1 turns adaptation off
    double load_floor_ms = 1.0;
    double urgent_fraction =
        0.5;  // of the time from arrival to deadline; 0 = earliest deadline first
    // 20 ms: on the H100 machine's Figure 7 runs, 100 ms let shortest-first ordering push the p99
    // of every configuration to ~100 ms under load; at 20 ms the GPU alone kept p99 <= 50 ms up to
    // twice the rate.
    absl::Duration max_wait = absl::Milliseconds(20);
    bool steal_only_if_sooner = true;
    bool normalize_by_capacity = true;  // see above
  };
  // Queries each processor runs at once (worker threads, GPU query contexts).
  struct Capacity {
    double cpu = 1;
    double gpu = 1;
  };
  struct Thresholds {
    double cpu = 0;
    double gpu = 0;
  };

  // INVALID_ARGUMENT naming the field when `policy` or `capacity` is unusable.
  static absl::Status Validate(const Policy& policy, const Capacity& capacity);

  // `policy` and `capacity` must pass Validate.
  WorkQueues(const Policy& policy, const Capacity& capacity);

  // Queues `item` (its id must not be queued already) and returns the queue it joined.
  QueueKind Push(const WorkItem& item);

  // The queue `item` would join under thresholds `t` with `policy` and `capacity` (Push uses its
  // own and thresholds()). Static, so that a scheduler can guess a query's queue from thresholds
  // read earlier without its lock.
  static QueueKind Route(const WorkItem& item, const Thresholds& t, const Policy& policy,
                         const Capacity& capacity);

  // The next query for processor `p` at time `now`, or nothing when p has nothing to do. Items
  // are never handed out twice. Every taken item must be reported to Finished once it has run.
  std::optional<Dequeued> Take(Processor p, absl::Time now);
  // Whether Take(p, now) would hand out a query, without taking it: for a scheduler deciding
  // whether to wake a parked worker of `p`.
  bool HasWorkFor(Processor p, absl::Time now);
  // A query taken by Take for `p` has finished; `predicted_ms` is its Dequeued::predicted_ms.
  void Finished(Processor p, double predicted_ms);

  // Removes and returns the items whose `expires` is at or before `now` (reason kExpired).
  std::vector<Dequeued> RemoveExpired(absl::Time now);
  // The earliest `expires` of a queued item; InfiniteFuture when none.
  absl::Time next_expiry() const;

  // The current ratio thresholds (after the load shift).
  Thresholds thresholds() const;
  // Predicted milliseconds until `p` has run everything committed to it, per unit of capacity.
  double load_ms(Processor p) const;
  size_t depth(QueueKind queue) const;
  size_t size() const { return entries_.size(); }
  bool empty() const { return entries_.empty(); }
  // Queries processor `thief` took from the other processor's queue.
  uint64_t steals(Processor thief) const { return steals_[Index(thief)]; }

 private:
  struct Entry {
    WorkItem item;
    QueueKind queue = QueueKind::kShared;
    Processor preferred = Processor::kCpu;  // where it runs when urgent
    absl::Time urgent_at = absl::InfiniteFuture();
    bool urgent = false;
  };
  // Keys ordered by a value, then by push order (seq), so ties go to the older item.
  using TimeKey = std::pair<absl::Time, uint64_t>;
  using CostKey = std::pair<double, uint64_t>;

  static int Index(Processor p) { return p == Processor::kCpu ? 0 : 1; }
  static int Index(QueueKind q) { return static_cast<int>(q); }
  double CapacityOf(Processor p) const {
    return p == Processor::kCpu ? capacity_.cpu : capacity_.gpu;
  }
  void PromoteUrgent(absl::Time now);
  std::optional<uint64_t> Choose(Processor p, absl::Time now, TakeReason* reason) const;
  // Step (e) of Take: the query `thief` would steal, if any.
  std::optional<uint64_t> Stealable(Processor thief) const;
  Dequeued Remove(uint64_t seq, Processor processor, TakeReason reason);

  const Policy policy_;
  const Capacity capacity_;
  uint64_t next_seq_ = 0;
  // B-trees and a flat hash map rather than node-based containers: the caller holds its lock for
  // every Push and Take, and these allocate a node per few dozen items instead of one per item.
  absl::flat_hash_map<uint64_t, Entry> entries_;  // by seq
  absl::btree_set<TimeKey> arrival_order_[3];     // per QueueKind, by arrival
  absl::btree_set<CostKey> shortest_[2];          // CPU and GPU queue, by cost on that processor
  absl::btree_set<CostKey> stealable_[2];    // same minus pinned, by cost on the other processor
  absl::btree_set<TimeKey> not_yet_urgent_;  // by urgent_at (finite ones only)
  absl::btree_set<TimeKey> urgent_[2];       // by preferred processor, by deadline
  absl::btree_set<TimeKey> expiry_;          // by expires (finite ones only)
  double waiting_ms_[2] = {0, 0};            // predicted ms queued in the CPU / GPU queue
  double running_ms_[2] = {0, 0};            // predicted ms taken and not yet finished
  size_t running_[2] = {0, 0};
  uint64_t steals_[2] = {0, 0};
};

}  // namespace tandem::scheduler
