#include "scheduler/work_queues.h"

#include <algorithm>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::scheduler {
namespace {

constexpr Processor kCpu = Processor::kCpu;
constexpr Processor kGpu = Processor::kGpu;
const absl::Time kT0 = absl::FromUnixSeconds(1000);

absl::Time At(int ms) { return kT0 + absl::Milliseconds(ms); }

WorkItem Item(uint64_t id, double cpu_ms, double gpu_ms, int arrival_ms = 0) {
  return {.id = id, .cost = {.cpu_ms = cpu_ms, .gpu_ms = gpu_ms}, .arrival = At(arrival_ms)};
}

WorkItem Pinned(uint64_t id, Processor p, double cpu_ms, double gpu_ms, int arrival_ms = 0) {
  WorkItem item = Item(id, cpu_ms, gpu_ms, arrival_ms);
  item.pinned = p;
  return item;
}

// No load shift, no starvation guard: the static rules alone.
WorkQueues::Policy Static() { return {.max_shift = 1.0, .max_wait = absl::InfiniteDuration()}; }

// Takes one item for `p` and returns its id, or 0 when there is none.
uint64_t TakeId(WorkQueues& queues, Processor p, absl::Time now = kT0,
                TakeReason* reason = nullptr) {
  std::optional<Dequeued> taken = queues.Take(p, now);
  if (!taken.has_value()) return 0;
  if (reason != nullptr) *reason = taken->reason;
  return taken->item.id;
}

TEST(WorkQueuesTest, ValidateRejectsUnusablePolicies) {
  const WorkQueues::Capacity one{};
  EXPECT_TRUE(WorkQueues::Validate({}, one).ok());
  EXPECT_FALSE(WorkQueues::Validate({.gpu_threshold = 0.4}, one).ok());  // below cpu_threshold
  EXPECT_FALSE(WorkQueues::Validate({.cpu_threshold = 0}, one).ok());
  EXPECT_FALSE(WorkQueues::Validate({.max_shift = 0.5}, one).ok());
  EXPECT_FALSE(WorkQueues::Validate({.load_floor_ms = 0}, one).ok());
  EXPECT_FALSE(WorkQueues::Validate({.urgent_fraction = 1.5}, one).ok());
  EXPECT_FALSE(WorkQueues::Validate({.max_wait = absl::Seconds(-1)}, one).ok());
  EXPECT_FALSE(WorkQueues::Validate({}, {.cpu = 0, .gpu = 1}).ok());
}

TEST(WorkQueuesTest, RoutesByCostRatio) {
  WorkQueues queues(Static(), {});
  EXPECT_EQ(queues.Push(Item(1, 10, 1)), QueueKind::kGpu);      // ratio 10
  EXPECT_EQ(queues.Push(Item(2, 2, 1)), QueueKind::kGpu);       // ratio 2: at the GPU threshold
  EXPECT_EQ(queues.Push(Item(3, 1.9, 1)), QueueKind::kShared);  // just below
  EXPECT_EQ(queues.Push(Item(4, 1, 1)), QueueKind::kShared);
  EXPECT_EQ(queues.Push(Item(5, 0, 0)), QueueKind::kShared);  // no prediction: ratio 1
  EXPECT_EQ(queues.Push(Item(6, 1, 2)), QueueKind::kCpu);     // ratio 0.5: at the CPU threshold
  EXPECT_EQ(queues.Push(Item(7, 1, 10)), QueueKind::kCpu);
  EXPECT_EQ(queues.Push(Pinned(8, kCpu, 10, 1)), QueueKind::kCpu);  // a hint beats the ratio
  EXPECT_EQ(queues.Push(Pinned(9, kGpu, 1, 10)), QueueKind::kGpu);
  EXPECT_EQ(queues.depth(QueueKind::kGpu), 3u);
  EXPECT_EQ(queues.depth(QueueKind::kShared), 3u);
  EXPECT_EQ(queues.depth(QueueKind::kCpu), 3u);
  EXPECT_EQ(queues.size(), 9u);
}

TEST(WorkQueuesTest, ThresholdsShiftTowardTheLessLoadedProcessor) {
  // Default policy: thresholds 0.5 / 2, shift bounded by 4, load floor 1 ms; plain ratios.
  WorkQueues queues({.normalize_by_capacity = false}, {.cpu = 2, .gpu = 1});
  EXPECT_DOUBLE_EQ(queues.thresholds().cpu, 0.5);
  EXPECT_DOUBLE_EQ(queues.thresholds().gpu, 2.0);

  // 3 ms committed to the GPU: shift (3 + 1) / (0 + 1) = 4, the bound.
  queues.Push(Pinned(1, kGpu, 30, 3));
  EXPECT_DOUBLE_EQ(queues.load_ms(kGpu), 3.0);
  EXPECT_DOUBLE_EQ(queues.thresholds().gpu, 8.0);
  EXPECT_DOUBLE_EQ(queues.thresholds().cpu, 2.0);
  EXPECT_EQ(queues.Push(Item(2, 5, 1)), QueueKind::kShared);  // ratio 5 no longer goes to the GPU
  EXPECT_EQ(queues.Push(Item(3, 2, 1)), QueueKind::kCpu);     // ratio 2 goes to the CPU

  // 8 ms committed to the CPU's 2 workers: load 4 against the GPU's 3, shift (3 + 1) / (4 + 1).
  queues.Push(Pinned(4, kCpu, 6, 60));
  EXPECT_DOUBLE_EQ(queues.load_ms(kCpu), (6.0 + 2.0) / 2);  // item 3 counts too
  EXPECT_DOUBLE_EQ(queues.thresholds().gpu, 2.0 * (3 + 1) / (4 + 1));
  EXPECT_EQ(queues.Push(Item(5, 1.7, 1)), QueueKind::kGpu);  // 1.7 >= 1.6

  // The GPU idle and the CPU loaded: shift down to 1/4.
  WorkQueues cpu_busy({}, {.cpu = 1, .gpu = 1});
  cpu_busy.Push(Pinned(1, kCpu, 100, 1));
  EXPECT_DOUBLE_EQ(cpu_busy.thresholds().gpu, 0.5);
  EXPECT_DOUBLE_EQ(cpu_busy.thresholds().cpu, 0.125);
  EXPECT_EQ(cpu_busy.Push(Item(2, 1, 1.5)), QueueKind::kGpu);  // CPU 1.5x cheaper, sent to the GPU

  // max_shift 1 turns adaptation off.
  WorkQueues fixed({.max_shift = 1}, {});
  fixed.Push(Pinned(1, kCpu, 100, 1));
  EXPECT_DOUBLE_EQ(fixed.thresholds().gpu, 2.0);
}

// By default the ratio is per unit of capacity: (cpu_ms / cpu slots) / (gpu_ms / gpu slots).
TEST(WorkQueuesTest, RatioIsNormalizedByCapacity) {
  WorkQueues normalized({.max_shift = 1}, {.cpu = 10, .gpu = 4});
  WorkQueues plain({.max_shift = 1, .normalize_by_capacity = false}, {.cpu = 10, .gpu = 4});
  // 0.6 ms on a core, 0.16 ms on the GPU: plain ratio 3.75 (GPU), per capacity 1.5 (shared).
  EXPECT_EQ(plain.Push(Item(1, 0.6, 0.16)), QueueKind::kGpu);
  EXPECT_EQ(normalized.Push(Item(1, 0.6, 0.16)), QueueKind::kShared);
  // 0.2 ms on a core: per capacity 0.5, the CPU queue; plain 1.25, shared.
  EXPECT_EQ(plain.Push(Item(2, 0.2, 0.16)), QueueKind::kShared);
  EXPECT_EQ(normalized.Push(Item(2, 0.2, 0.16)), QueueKind::kCpu);
  // 2 ms on a core: per capacity 5, the GPU queue in both.
  EXPECT_EQ(normalized.Push(Item(3, 2, 0.16)), QueueKind::kGpu);
}

TEST(WorkQueuesTest, RunningQueriesCountAsLoadUntilFinished) {
  WorkQueues queues(Static(), {.cpu = 2, .gpu = 1});
  queues.Push(Pinned(1, kCpu, 8, 1));
  std::optional<Dequeued> taken = queues.Take(kCpu, kT0);
  ASSERT_TRUE(taken.has_value());
  EXPECT_DOUBLE_EQ(taken->predicted_ms, 8.0);
  EXPECT_EQ(queues.size(), 0u);
  EXPECT_DOUBLE_EQ(queues.load_ms(kCpu), 4.0);
  queues.Finished(kCpu, taken->predicted_ms);
  EXPECT_DOUBLE_EQ(queues.load_ms(kCpu), 0.0);
}

TEST(WorkQueuesTest, OwnQueueShortestPredictedFirst) {
  WorkQueues queues(Static(), {});
  queues.Push(Item(1, 5, 50));
  queues.Push(Item(2, 1, 10));
  queues.Push(Item(3, 3, 30));
  queues.Push(Item(4, 1, 10));  // ties with 2: the older one first
  TakeReason reason;
  EXPECT_EQ(TakeId(queues, kCpu, kT0, &reason), 2u);
  EXPECT_EQ(reason, TakeReason::kShortest);
  EXPECT_EQ(TakeId(queues, kCpu), 4u);
  EXPECT_EQ(TakeId(queues, kCpu), 3u);
  EXPECT_EQ(TakeId(queues, kCpu), 1u);
  EXPECT_EQ(TakeId(queues, kCpu), 0u);
}

TEST(WorkQueuesTest, IdleProcessorTakesTheOldestSharedQueryAfterItsOwn) {
  WorkQueues queues(Static(), {});
  queues.Push(Item(1, 1, 1, /*arrival_ms=*/5));
  queues.Push(Item(2, 9, 9, /*arrival_ms=*/2));  // older, though longer
  queues.Push(Item(3, 1, 1, /*arrival_ms=*/7));
  queues.Push(Item(4, 10, 1, /*arrival_ms=*/9));  // the GPU's own
  TakeReason reason;
  EXPECT_EQ(TakeId(queues, kGpu, At(10), &reason), 4u);  // own queue before the shared one
  EXPECT_EQ(reason, TakeReason::kShortest);
  EXPECT_EQ(TakeId(queues, kGpu, At(10), &reason), 2u);
  EXPECT_EQ(reason, TakeReason::kShared);
  EXPECT_EQ(TakeId(queues, kCpu, At(10)), 1u);
  EXPECT_EQ(TakeId(queues, kGpu, At(10)), 3u);
  EXPECT_TRUE(queues.empty());
}

TEST(WorkQueuesTest, StealsFromABackloggedProcessorOnlyWhenSooner) {
  // One GPU context; items 4x cheaper on the GPU.
  WorkQueues queues(Static(), {.cpu = 1, .gpu = 1});
  for (uint64_t id = 1; id <= 3; ++id) queues.Push(Item(id, 4, 1));
  // Cheapest on the CPU: 4 ms; on the GPU it would finish after 1 ms + (3 - 1) ms waiting = 3 ms.
  EXPECT_EQ(TakeId(queues, kCpu), 0u);
  EXPECT_EQ(queues.steals(kCpu), 0u);
  queues.Push(Item(4, 4, 1));
  queues.Push(Item(5, 4, 1));
  // Now 1 + (5 - 1) = 5 ms on the GPU > 4 ms on the CPU: steal, the oldest of the equally cheap.
  TakeReason reason;
  EXPECT_EQ(TakeId(queues, kCpu, kT0, &reason), 1u);
  EXPECT_EQ(reason, TakeReason::kStolen);
  EXPECT_EQ(queues.steals(kCpu), 1u);
  EXPECT_EQ(queues.steals(kGpu), 0u);
  EXPECT_EQ(queues.depth(QueueKind::kGpu), 4u);
}

// Route is Push's choice of queue, for any thresholds, without a WorkQueues.
TEST(WorkQueuesTest, RouteIsPushsChoiceForGivenThresholds) {
  const WorkQueues::Policy policy = Static();
  const WorkQueues::Capacity capacity{.cpu = 4, .gpu = 1};
  WorkQueues queues(policy, capacity);
  // Normalized by capacity: 8 / 1 x 1 / 4 = 2 (GPU), 6 / 1 / 4 = 1.5 (shared), 1 / 1 / 4 (CPU).
  for (const WorkItem& item :
       {Item(1, 8, 1), Item(2, 6, 1), Item(3, 1, 1), Pinned(4, kCpu, 8, 1)}) {
    EXPECT_EQ(WorkQueues::Route(item, queues.thresholds(), policy, capacity), queues.Push(item))
        << item.id;
  }
  // Wider thresholds (as a scheduler guessing with a margin): the 2 is shared now.
  EXPECT_EQ(WorkQueues::Route(Item(5, 8, 1), {.cpu = 0.25, .gpu = 4}, policy, capacity),
            QueueKind::kShared);
  EXPECT_EQ(WorkQueues::Route(Item(6, 0.5, 1), {.cpu = 0.25, .gpu = 4}, policy, capacity),
            QueueKind::kCpu);
  EXPECT_EQ(WorkQueues::Route(Pinned(7, kGpu, 0.5, 1), {.cpu = 0.25, .gpu = 4}, policy, capacity),
            QueueKind::kGpu);
}

TEST(WorkQueuesTest, StealsTheQueryCheapestForTheThief) {
  WorkQueues queues({.max_shift = 1, .steal_only_if_sooner = false}, {});
  queues.Push(Item(1, 8, 2));
  queues.Push(Item(2, 40, 4));
  queues.Push(Item(3, 4, 1));
  EXPECT_EQ(TakeId(queues, kCpu), 3u);
  EXPECT_EQ(TakeId(queues, kCpu), 1u);
  EXPECT_EQ(TakeId(queues, kCpu), 2u);
  EXPECT_EQ(queues.steals(kCpu), 3u);
  // The other way round: the GPU steals from the CPU queue.
  queues.Push(Item(4, 1, 3));
  EXPECT_EQ(TakeId(queues, kGpu), 4u);
  EXPECT_EQ(queues.steals(kGpu), 1u);
}

TEST(WorkQueuesTest, PinnedQueriesAreNeverStolen) {
  WorkQueues queues({.max_shift = 1, .steal_only_if_sooner = false}, {});
  for (uint64_t id = 1; id <= 50; ++id) queues.Push(Pinned(id, kGpu, 1, 100));
  EXPECT_EQ(TakeId(queues, kCpu), 0u);
  EXPECT_EQ(TakeId(queues, kGpu), 1u);
  queues.Push(Pinned(60, kCpu, 100, 1));
  EXPECT_EQ(TakeId(queues, kGpu), 2u);  // its own pinned work, not the CPU's
}

TEST(WorkQueuesTest, UrgentQueriesJumpTheQueueEarliestDeadlineFirst) {
  WorkQueues queues(Static(), {});
  WorkItem slow = Item(1, 10, 100);
  slow.deadline = At(100);  // urgent from 50 ms (urgent_fraction 0.5)
  queues.Push(slow);
  queues.Push(Item(2, 1, 10));
  queues.Push(Item(3, 2, 20));
  EXPECT_EQ(TakeId(queues, kCpu, At(49)), 2u);  // not yet urgent: shortest first
  TakeReason reason;
  EXPECT_EQ(TakeId(queues, kCpu, At(50), &reason), 1u);
  EXPECT_EQ(reason, TakeReason::kUrgent);

  // Two urgent ones: the earlier deadline goes first, though pushed later and longer.
  WorkItem late = Item(4, 1, 10);
  late.deadline = At(400);  // urgent from 200 ms
  WorkItem early = Item(5, 5, 50, /*arrival_ms=*/100);
  early.deadline = At(300);  // urgent from 200 ms
  queues.Push(late);
  queues.Push(early);
  EXPECT_EQ(TakeId(queues, kCpu, At(250)), 5u);
  EXPECT_EQ(TakeId(queues, kCpu, At(250)), 4u);
  EXPECT_EQ(TakeId(queues, kCpu, At(250)), 3u);
}

TEST(WorkQueuesTest, UrgentSharedQueryGoesToItsCheaperProcessor) {
  WorkQueues queues(Static(), {});
  WorkItem shared = Item(1, 3, 2);  // ratio 1.5: shared, cheaper on the GPU
  shared.deadline = At(100);
  ASSERT_EQ(queues.Push(shared), QueueKind::kShared);
  queues.Push(Item(2, 1, 10));    // the CPU's own
  queues.Push(Item(3, 100, 10));  // the GPU's own
  // Urgent, but the CPU is not its preferred processor: the CPU serves its own queue.
  EXPECT_EQ(TakeId(queues, kCpu, At(60)), 2u);
  TakeReason reason;
  EXPECT_EQ(TakeId(queues, kGpu, At(60), &reason), 1u);
  EXPECT_EQ(reason, TakeReason::kUrgent);
}

TEST(WorkQueuesTest, BoundedWaitTakesALongQueryDespiteAStreamOfShortOnes) {
  // A 50 ms query and, every 10 ms, a 1 ms one arriving as a worker becomes free.
  auto run = [](absl::Duration max_wait) -> int {
    WorkQueues queues({.max_shift = 1, .max_wait = max_wait}, {});
    queues.Push(Pinned(1, kCpu, 50, 0));
    for (int i = 1; i <= 100; ++i) {
      queues.Push(Pinned(100 + i, kCpu, 1, 0, /*arrival_ms=*/10 * i));
      TakeReason reason;
      if (TakeId(queues, kCpu, At(10 * i), &reason) == 1) {
        EXPECT_EQ(reason, TakeReason::kStarved);
        return 10 * i;
      }
    }
    return -1;  // starved
  };
  EXPECT_EQ(run(absl::Milliseconds(100)), 100);
  EXPECT_EQ(run(absl::Milliseconds(35)), 40);
  EXPECT_EQ(run(absl::InfiniteDuration()), -1);  // without the bound, shortest-first starves it
}

TEST(WorkQueuesTest, BoundedWaitCoversTheSharedQueue) {
  WorkQueues queues({.max_shift = 1, .max_wait = absl::Milliseconds(100)}, {});
  queues.Push(Item(1, 1, 1, /*arrival_ms=*/0));  // shared
  queues.Push(Item(2, 1, 10, /*arrival_ms=*/50));
  queues.Push(Item(3, 1, 10, /*arrival_ms=*/60));
  EXPECT_EQ(TakeId(queues, kCpu, At(99)), 2u);
  TakeReason reason;
  EXPECT_EQ(TakeId(queues, kCpu, At(100), &reason), 1u);
  EXPECT_EQ(reason, TakeReason::kStarved);
}

TEST(WorkQueuesTest, RemoveExpiredDropsQueriesPastTheirExpiry) {
  WorkQueues queues(Static(), {});
  WorkItem a = Item(1, 1, 10);
  a.expires = At(30);
  WorkItem b = Item(2, 10, 1);
  b.expires = At(20);
  queues.Push(a);
  queues.Push(b);
  queues.Push(Item(3, 1, 1));
  EXPECT_EQ(queues.next_expiry(), At(20));
  EXPECT_TRUE(queues.RemoveExpired(At(19)).empty());
  std::vector<Dequeued> expired = queues.RemoveExpired(At(30));
  ASSERT_EQ(expired.size(), 2u);
  EXPECT_EQ(expired[0].item.id, 2u);
  EXPECT_EQ(expired[0].processor, kGpu);  // where it would have run
  EXPECT_EQ(expired[0].reason, TakeReason::kExpired);
  EXPECT_EQ(expired[1].item.id, 1u);
  EXPECT_EQ(expired[1].queue, QueueKind::kCpu);
  EXPECT_EQ(queues.next_expiry(), absl::InfiniteFuture());
  EXPECT_DOUBLE_EQ(queues.load_ms(kCpu), 0.0);
  EXPECT_EQ(TakeId(queues, kCpu), 3u);
  EXPECT_TRUE(queues.empty());
}

TEST(WorkQueuesTest, EveryItemIsTakenExactlyOnce) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<double> cost(0.01, 20.0);
  std::uniform_int_distribution<int> pick(0, 9);
  WorkQueues queues({.max_wait = absl::Milliseconds(30)}, {.cpu = 3, .gpu = 2});
  std::set<uint64_t> taken;
  std::vector<std::pair<Processor, double>> running;
  uint64_t next_id = 1;
  for (int step = 0; step < 5000; ++step) {
    const absl::Time now = At(step);
    if (step < 4000 && pick(rng) < 6) {
      WorkItem item = Item(next_id++, cost(rng), cost(rng), step);
      item.deadline = now + absl::Milliseconds(pick(rng) * 20);
      if (pick(rng) == 0) item.pinned = pick(rng) < 5 ? kCpu : kGpu;
      queues.Push(item);
    }
    if (!running.empty() && pick(rng) < 5) {
      queues.Finished(running.back().first, running.back().second);
      running.pop_back();
    }
    const Processor p = pick(rng) < 5 ? kCpu : kGpu;
    const bool has_work = queues.HasWorkFor(p, now);  // says what Take is about to do
    std::optional<Dequeued> d = queues.Take(p, now);
    EXPECT_EQ(has_work, d.has_value()) << "step " << step;
    if (d.has_value()) {
      EXPECT_TRUE(taken.insert(d->item.id).second) << "id " << d->item.id << " taken twice";
      if (d->item.pinned.has_value()) {
        EXPECT_EQ(*d->item.pinned, p);
      }
      running.emplace_back(p, d->predicted_ms);
    }
  }
  // Whatever is left: each processor drains its own queue.
  for (int i = 0; !queues.empty() && i < 10000; ++i) {
    const Processor p = i % 2 == 0 ? kCpu : kGpu;
    if (std::optional<Dequeued> d = queues.Take(p, At(10000))) {
      EXPECT_TRUE(taken.insert(d->item.id).second) << "id " << d->item.id << " taken twice";
    }
  }
  EXPECT_TRUE(queues.empty());
  EXPECT_EQ(taken.size(), next_id - 1);
}

}  // namespace
}  // namespace tandem::scheduler
