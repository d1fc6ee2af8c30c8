#include "scheduler/hybrid_executor.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "base/thread_affinity.h"
#include "base/thread_priority.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/executor_test_util.h"

namespace tandem::scheduler {
namespace {

using fakes::FailingEngine;
using fakes::FakeEngine;
using fakes::FakePredictor;
using fakes::Job;
using fakes::Outcomes;
using scheduler::CostEstimate;
using scheduler::Processor;
using scheduler::QueueKind;
using scheduler::TakeReason;

// Fixed thresholds (cpu_ms / gpu_ms >= 2: GPU queue, <= 0.5: CPU queue), so routing depends only on
// the predictions.
scheduler::WorkQueues::Policy Fixed() { return {.max_shift = 1}; }

// Records what the executor reports through its hooks.
class Recorder {
 public:
  HybridExecutorHooks Hooks() {
    return {.on_queue_depth =
                [this](size_t jobs) {
                  absl::MutexLock lock(&mu_);
                  depths_.push_back(jobs);
                },
            .on_busy_workers =
                [this](Processor p, size_t busy) {
                  absl::MutexLock lock(&mu_);
                  busy_[p] = busy;
                },
            .on_decision =
                [this](const SchedulerDecision& decision) {
                  absl::MutexLock lock(&mu_);
                  decisions_.push_back(decision);
                },
            .on_measured =
                [this](Processor p, double predicted_ms, double measured_ms) {
                  absl::MutexLock lock(&mu_);
                  ++measured_[p];
                },
            .on_busy_time =
                [this](Processor p, absl::Duration busy) {
                  absl::MutexLock lock(&mu_);
                  busy_time_[p] += busy;
                },
            .on_deadline_miss =
                [this] {
                  absl::MutexLock lock(&mu_);
                  ++deadline_misses_;
                }};
  }
  std::vector<SchedulerDecision> decisions() {
    absl::MutexLock lock(&mu_);
    return decisions_;
  }
  // Decisions of processor `p` for queue `queue`; with `reason`, only those made for it.
  int Count(Processor p, QueueKind queue, std::optional<TakeReason> reason = std::nullopt) {
    int n = 0;
    for (const SchedulerDecision& d : decisions()) {
      n += d.processor == p && d.queue == queue && (!reason || d.reason == *reason);
    }
    return n;
  }
  std::vector<size_t> depths() {
    absl::MutexLock lock(&mu_);
    return depths_;
  }
  size_t busy(Processor p) {
    absl::MutexLock lock(&mu_);
    return busy_[p];
  }
  absl::Duration busy_time(Processor p) {
    absl::MutexLock lock(&mu_);
    return busy_time_[p];
  }
  int measured(Processor p) {
    absl::MutexLock lock(&mu_);
    return measured_[p];
  }
  int deadline_misses() {
    absl::MutexLock lock(&mu_);
    return deadline_misses_;
  }

 private:
  absl::Mutex mu_;
  std::vector<SchedulerDecision> decisions_ ABSL_GUARDED_BY(mu_);
  std::vector<size_t> depths_ ABSL_GUARDED_BY(mu_);
  std::map<Processor, size_t> busy_ ABSL_GUARDED_BY(mu_);
  std::map<Processor, absl::Duration> busy_time_ ABSL_GUARDED_BY(mu_);
  std::map<Processor, int> measured_ ABSL_GUARDED_BY(mu_);
  int deadline_misses_ ABSL_GUARDED_BY(mu_) = 0;
};

std::unique_ptr<HybridQueryExecutor> MakeExecutor(const index::Engine* cpu,
                                                  const index::Engine* gpu,
                                                  HybridQueryExecutor::Options options) {
  auto executor = HybridQueryExecutor::Create(cpu, gpu, std::move(options));
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? *std::move(executor) : nullptr;
}

TEST(HybridQueryExecutorTest, RejectsBadOptions) {
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true);
  FakePredictor predictor;
  EXPECT_FALSE(HybridQueryExecutor::Create(nullptr, nullptr, {}).ok());
  EXPECT_FALSE(HybridQueryExecutor::Create(&cpu, nullptr, {.cpu_threads = 0}).ok());
  EXPECT_FALSE(HybridQueryExecutor::Create(&cpu, nullptr, {.queue_capacity = 0}).ok());
  EXPECT_FALSE(
      HybridQueryExecutor::Create(&cpu, nullptr, {.default_deadline = absl::ZeroDuration()}).ok());
  EXPECT_FALSE(HybridQueryExecutor::Create(&cpu, &gpu, {}).ok());  // no predictor
  EXPECT_FALSE(
      HybridQueryExecutor::Create(&cpu, &gpu, {.gpu_threads = 0, .predictor = &predictor}).ok());
  EXPECT_FALSE(HybridQueryExecutor::Create(&cpu, nullptr, {.policy = {.cpu_threshold = 3}}).ok());
  EXPECT_FALSE(
      HybridQueryExecutor::Create(&cpu, nullptr, {.cpu_worker_priority = {.nice = -1}}).ok());
  EXPECT_FALSE(
      HybridQueryExecutor::Create(&cpu, nullptr, {.cpu_worker_priority = {.nice = 20}}).ok());
  for (const HybridQueryExecutor::Options& bad :
       {HybridQueryExecutor::Options{.cpu_worker_cpus = {CPU_SETSIZE - 1}},
        HybridQueryExecutor::Options{.gpu_worker_cpus = {CPU_SETSIZE - 1}}}) {
    const absl::Status status = HybridQueryExecutor::Create(&cpu, nullptr, bad).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), ::testing::HasSubstr("_worker_cpus: CPU 1023 is not one"));
  }
  EXPECT_TRUE(HybridQueryExecutor::Create(&cpu, nullptr, {}).ok());  // no GPU: predictor optional
}

TEST(HybridQueryExecutorTest, RoutesEachQueryToItsCheaperProcessor) {
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}},     // GPU queue
                           {2, {.cpu_ms = 1, .gpu_ms = 20}},     // CPU queue
                           {3, {.cpu_ms = 1.5, .gpu_ms = 1}}});  // shared
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true);
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 2,
                                .gpu_threads = 2,
                                .queue_capacity = 32,
                                .policy = Fixed(),
                                .predictor = &predictor,
                                .hooks = recorder.Hooks()});
  Outcomes outcomes;
  for (int job = 0; job < 10; ++job) {
    ASSERT_TRUE(executor->Submit(Job(outcomes.For(job), {job % 2 == 0 ? 1u : 2u})).ok());
  }
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(10), {3})).ok());
  ASSERT_TRUE(outcomes.WaitFor(11));
  executor->Shutdown();
  for (int job = 0; job < 10; ++job) {
    QueryOutcome o = outcomes.Get(job);
    ASSERT_TRUE(o.result.ok()) << o.result.status();
    EXPECT_EQ(o.result->hits.at(0).docid, job % 2 == 0 ? 1u : 2u);
    EXPECT_EQ(o.engine, job % 2 == 0 ? "gpu" : "cpu") << "job " << job;
    EXPECT_TRUE(o.started);
  }
  // Shortest first, or, on a slow machine, for having waited long (starved, urgent): never stolen.
  EXPECT_EQ(recorder.Count(Processor::kGpu, QueueKind::kGpu), 5);
  EXPECT_EQ(recorder.Count(Processor::kCpu, QueueKind::kCpu), 5);
  int shared = 0;
  for (const SchedulerDecision& d : recorder.decisions()) {
    shared += d.queue == QueueKind::kShared;
    EXPECT_NE(d.reason, TakeReason::kStolen);
    EXPECT_FALSE(d.pinned);
  }
  EXPECT_EQ(shared, 1);
  // Every answered query went back to the predictor with the processor that ran it.
  const std::vector<FakePredictor::Observation> observed = predictor.observed();
  ASSERT_EQ(observed.size(), 11u);
  for (const FakePredictor::Observation& o : observed) {
    if (o.k == 1) {
      EXPECT_EQ(o.processor, Processor::kGpu);
    } else if (o.k == 2) {
      EXPECT_EQ(o.processor, Processor::kCpu);
    }
    EXPECT_GE(o.ms, 0);
  }
  EXPECT_EQ(recorder.measured(Processor::kCpu) + recorder.measured(Processor::kGpu), 11);
  EXPECT_EQ(recorder.busy(Processor::kCpu), 0u);
  EXPECT_EQ(recorder.busy(Processor::kGpu), 0u);
  EXPECT_GT(recorder.busy_time(Processor::kGpu), absl::ZeroDuration());
  EXPECT_EQ(recorder.depths().back(), 0u);
}

TEST(HybridQueryExecutorTest, IdleCpuStealsFromABackloggedGpu) {
  FakePredictor predictor({{1, {.cpu_ms = 40, .gpu_ms = 1}},
                           {2, {.cpu_ms = 1, .gpu_ms = 1}},
                           {3, {.cpu_ms = 2, .gpu_ms = 1}},
                           {4, {.cpu_ms = 50, .gpu_ms = 1}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu");  // held: the GPU is busy until the test opens it
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 1,
                                .gpu_threads = 1,
                                .queue_capacity = 16,
                                .policy = Fixed(),
                                .predictor = &predictor,
                                .hooks = recorder.Hooks()});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0), {1})).ok());
  ASSERT_TRUE(gpu.WaitStarted(1));
  // Pinned to the GPU: never stolen, though the CPU would run it as fast.
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(1), {2}, EnginePreference::kGpu)).ok());
  // Twice as fast on the GPU, but the GPU's backlog makes the CPU sooner: stolen.
  for (int job = 2; job < 7; ++job) ASSERT_TRUE(executor->Submit(Job(outcomes.For(job), {3})).ok());
  ASSERT_TRUE(outcomes.WaitFor(5));
  // 50x cheaper on the GPU: waiting behind 2 ms of GPU work beats 50 ms on the CPU.
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(7), {4})).ok());
  for (int job = 2; job < 7; ++job) EXPECT_EQ(outcomes.Get(job).engine, "cpu");
  EXPECT_EQ(recorder.Count(Processor::kCpu, QueueKind::kGpu, TakeReason::kStolen), 5);
  EXPECT_EQ(outcomes.size(), 5u);
  gpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(8));
  executor->Shutdown();
  EXPECT_EQ(outcomes.Get(0).engine, "gpu");
  EXPECT_EQ(outcomes.Get(1).engine, "gpu");
  EXPECT_EQ(outcomes.Get(7).engine, "gpu");
  EXPECT_EQ(recorder.Count(Processor::kCpu, QueueKind::kGpu, TakeReason::kStolen), 5);
  EXPECT_EQ(cpu.started(), 5);
}

TEST(HybridQueryExecutorTest, QueryExpiredWhileQueuedIsAnsweredWithoutRunning) {
  FakePredictor predictor;
  FakeEngine cpu("cpu");  // held
  FakeEngine gpu("gpu", true);
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 1,
                                .gpu_threads = 1,
                                .queue_capacity = 8,
                                .default_deadline = absl::Seconds(60),
                                .predictor = &predictor,
                                .hooks = recorder.Hooks()});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0), {1}, EnginePreference::kCpu)).ok());
  ASSERT_TRUE(cpu.WaitStarted(1));
  QueryJob expiring = Job(outcomes.For(1), {2}, EnginePreference::kCpu);
  expiring.deadline = absl::Now() + absl::Milliseconds(50);
  ASSERT_TRUE(executor->Submit(std::move(expiring)).ok());
  auto cancelled = std::make_shared<std::atomic<bool>>(true);
  QueryJob gone = Job(outcomes.For(2), {3}, EnginePreference::kCpu);
  gone.cancelled = cancelled;
  ASSERT_TRUE(executor->Submit(std::move(gone)).ok());
  // Answered at its deadline, while the only CPU worker is still busy with job 0.
  ASSERT_TRUE(outcomes.WaitFor(1));
  EXPECT_TRUE(outcomes.Has(1));
  EXPECT_EQ(outcomes.Get(1).result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(outcomes.Get(1).started);
  EXPECT_EQ(outcomes.Get(1).engine, "cpu");
  EXPECT_EQ(recorder.deadline_misses(), 1);
  cpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(3));
  executor->Shutdown();
  EXPECT_TRUE(outcomes.Get(0).result.ok());
  EXPECT_EQ(outcomes.Get(2).result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(outcomes.Get(2).started);
  EXPECT_EQ(cpu.started_ks(), std::vector<uint32_t>{1});
  EXPECT_EQ(recorder.deadline_misses(), 1);
}

TEST(HybridQueryExecutorTest, DefaultDeadlineOrdersWorkButDoesNotStopQueries) {
  FakeEngine cpu("cpu", true, [](const index::Query&) { return 40.0; });
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, nullptr,
                               {.cpu_threads = 1,
                                .queue_capacity = 4,
                                .default_deadline = absl::Milliseconds(10),
                                .hooks = recorder.Hooks()});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0))).ok());
  // Behind it, a query its caller gave up on: answered CANCELLED after the target, not a miss.
  QueryJob gone = Job(outcomes.For(1));
  gone.cancelled = std::make_shared<std::atomic<bool>>(true);
  ASSERT_TRUE(executor->Submit(std::move(gone)).ok());
  ASSERT_TRUE(outcomes.WaitFor(2));
  executor->Shutdown();
  EXPECT_TRUE(outcomes.Get(0).result.ok()) << outcomes.Get(0).result.status();
  EXPECT_EQ(outcomes.Get(1).result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(recorder.deadline_misses(), 1);  // answered after 40 ms against a 10 ms target
}

// Start order of a short query (k=2) and a long one (k=3) queued behind a blocker (k=1), when the
// long one's call deadline is `long_deadline` from now and the worker frees up after 150 ms.
std::vector<uint32_t> StartOrder(absl::Duration long_deadline) {
  FakePredictor predictor({{1, {.cpu_ms = 1}}, {2, {.cpu_ms = 1}}, {3, {.cpu_ms = 50}}});
  FakeEngine cpu("cpu");
  auto executor =
      MakeExecutor(&cpu, nullptr,
                   {.cpu_threads = 1,
                    .queue_capacity = 4,
                    .default_deadline = absl::Seconds(60),
                    .policy = {.urgent_fraction = 0.1, .max_wait = absl::InfiniteDuration()},
                    .predictor = &predictor});
  Outcomes outcomes;
  EXPECT_TRUE(executor->Submit(Job(outcomes.For(0), {1})).ok());
  EXPECT_TRUE(cpu.WaitStarted(1));
  EXPECT_TRUE(executor->Submit(Job(outcomes.For(1), {2})).ok());
  QueryJob urgent = Job(outcomes.For(2), {3});
  urgent.deadline = absl::Now() + long_deadline;
  EXPECT_TRUE(executor->Submit(std::move(urgent)).ok());
  absl::SleepFor(absl::Milliseconds(150));
  cpu.Open();
  EXPECT_TRUE(outcomes.WaitFor(3));
  executor->Shutdown();
  for (int job = 0; job < 3; ++job) EXPECT_TRUE(outcomes.Get(job).result.ok());
  return cpu.started_ks();
}

TEST(HybridQueryExecutorTest, QueryNearItsDeadlineJumpsTheQueue) {
  // Urgent from 100 ms (a tenth of its 1 s): it runs before the shorter query.
  EXPECT_EQ(StartOrder(absl::Seconds(1)), (std::vector<uint32_t>{1, 3, 2}));
  // Urgent only from 6 s: shortest first.
  EXPECT_EQ(StartOrder(absl::Seconds(60)), (std::vector<uint32_t>{1, 2, 3}));
}

// Where a long query (k=9) starts among 100 shorter ones (k=1, 5 ms each) queued after it, all
// behind a blocker (k=2) that holds the only worker until everything is queued.
size_t LongQueryPosition(absl::Duration max_wait) {
  FakePredictor predictor({{1, {.cpu_ms = 1}}, {2, {.cpu_ms = 1}}, {9, {.cpu_ms = 100}}});
  FakeEngine cpu("cpu", false, [](const index::Query& q) { return q.k == 1 ? 5.0 : 0.0; });
  auto executor = MakeExecutor(&cpu, nullptr,
                               {.cpu_threads = 1,
                                .queue_capacity = 128,
                                .default_deadline = absl::Seconds(60),
                                .policy = {.max_wait = max_wait},
                                .predictor = &predictor});
  Outcomes outcomes;
  EXPECT_TRUE(executor->Submit(Job(outcomes.For(-1), {2})).ok());
  EXPECT_TRUE(cpu.WaitStarted(1));
  EXPECT_TRUE(executor->Submit(Job(outcomes.For(0), {9})).ok());
  for (int job = 1; job <= 100; ++job) {
    EXPECT_TRUE(executor->Submit(Job(outcomes.For(job), {1})).ok());
  }
  cpu.Open();
  EXPECT_TRUE(outcomes.WaitFor(102));
  executor->Shutdown();
  const std::vector<uint32_t> ks = cpu.started_ks();
  return std::find(ks.begin(), ks.end(), 9u) - ks.begin() - 1;  // after the blocker
}

TEST(HybridQueryExecutorTest, BoundedWaitRunsALongQueryDespiteShorterOnes) {
  // Shorter queries overtake it (shortest first) until it has waited 200 ms, about 40 of them.
  const size_t bounded = LongQueryPosition(absl::Milliseconds(200));
  EXPECT_GT(bounded, 0u);
  EXPECT_LT(bounded, 100u);
  // Without the bound it runs last.
  EXPECT_EQ(LongQueryPosition(absl::InfiniteDuration()), 100u);
}

TEST(HybridQueryExecutorTest, EngineHintsBypassRouting) {
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true);
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 1,
                                .gpu_threads = 1,
                                .queue_capacity = 4,
                                .policy = Fixed(),
                                .predictor = &predictor,
                                .hooks = recorder.Hooks()});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0), {1}, EnginePreference::kCpu)).ok());
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(1), {2}, EnginePreference::kGpu)).ok());
  ASSERT_TRUE(outcomes.WaitFor(2));
  executor->Shutdown();
  EXPECT_EQ(outcomes.Get(0).engine, "cpu");
  EXPECT_EQ(outcomes.Get(1).engine, "gpu");
  const std::vector<SchedulerDecision> decisions = recorder.decisions();
  ASSERT_EQ(decisions.size(), 2u);
  for (const SchedulerDecision& d : decisions) EXPECT_TRUE(d.pinned);
}

TEST(HybridQueryExecutorTest, GpuFaultsAreAnsweredOnTheCpu) {
  FakePredictor predictor({{5, {.cpu_ms = 20, .gpu_ms = 1}}});
  FakeEngine cpu("cpu", true);
  FailingEngine gpu(absl::ResourceExhaustedError("device out of memory"));
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 1,
                                .gpu_threads = 1,
                                .queue_capacity = 4,
                                .policy = Fixed(),
                                .predictor = &predictor});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0), {5})).ok());
  ASSERT_TRUE(outcomes.WaitFor(1));
  executor->Shutdown();
  QueryOutcome o = outcomes.Get(0);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  EXPECT_EQ(o.result->hits.at(0).docid, 5u);
  EXPECT_EQ(o.engine, "cpu");
  EXPECT_TRUE(o.gpu_fallback);
  EXPECT_TRUE(predictor.observed().empty());  // a fault is no measurement of the GPU's cost
}

TEST(HybridQueryExecutorTest, WithoutAGpuEngineEverythingRunsOnTheCpu) {
  FakeEngine cpu("cpu", true);
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, nullptr,
                               {.cpu_threads = 1, .queue_capacity = 4, .hooks = recorder.Hooks()});
  EXPECT_EQ(executor->engines(), std::vector<std::string>{"cpu"});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0), {1})).ok());
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(1), {1}, EnginePreference::kGpu)).ok());
  ASSERT_TRUE(outcomes.WaitFor(2));
  EXPECT_EQ(outcomes.Get(0).engine, "cpu");
  EXPECT_EQ(outcomes.Get(1).result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(outcomes.Get(1).engine, "");
  EXPECT_EQ(cpu.started(), 1);
  executor->Shutdown();
  // Both waited in the CPU queue; only the hinted one counts as pinned.
  const std::vector<SchedulerDecision> decisions = recorder.decisions();
  ASSERT_EQ(decisions.size(), 2u);
  for (const SchedulerDecision& d : decisions) {
    EXPECT_EQ(d.queue, QueueKind::kCpu);
    EXPECT_EQ(d.processor, Processor::kCpu);
  }
  EXPECT_EQ(decisions[0].pinned + decisions[1].pinned, 1);
}

TEST(HybridQueryExecutorTest, FullQueueRefusesAtOnce) {
  FakeEngine cpu("cpu");
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, nullptr,
                               {.cpu_threads = 1, .queue_capacity = 1, .hooks = recorder.Hooks()});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0))).ok());
  ASSERT_TRUE(cpu.WaitStarted(1));
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(1), {1, 2, 3})).ok());  // a batch takes one slot
  EXPECT_EQ(executor->queue_depth(), 1u);
  const absl::Time before = absl::Now();
  EXPECT_EQ(executor->Submit(Job(outcomes.For(2))).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));
  cpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(4));
  executor->Shutdown();
  EXPECT_EQ(outcomes.size(), 4u);  // the refused job's callback never runs
  EXPECT_FALSE(outcomes.Has(2));
  // The batch leaves the admission queue when its last query starts. (It was admitted while the
  // worker was busy, so its depth of 1 is first reported when the worker moves it into the queues
  // and takes its first query; job 0's own 1 is reported only if the worker was already waiting.)
  const std::vector<size_t> depths = recorder.depths();
  ASSERT_GE(depths.size(), 3u);
  EXPECT_EQ(depths.back(), 0u);
  EXPECT_EQ(depths[depths.size() - 2], 1u);  // the batch with one query left to start
  for (size_t d : depths) EXPECT_LE(d, 1u);
}

TEST(HybridQueryExecutorTest, ShutdownFinishesQueuedWorkAndRefusesNewWork) {
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  FakeEngine cpu("cpu");
  FakeEngine gpu("gpu");
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 1,
                                .gpu_threads = 1,
                                .queue_capacity = 8,
                                .policy = Fixed(),
                                .predictor = &predictor});
  Outcomes outcomes;
  for (int job = 0; job < 4; ++job) {
    ASSERT_TRUE(executor->Submit(Job(outcomes.For(job), {job % 2 == 0 ? 1u : 2u})).ok());
  }
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(4), {1, 2, 3})).ok());
  ASSERT_TRUE(cpu.WaitStarted(1));
  ASSERT_TRUE(gpu.WaitStarted(1));
  std::thread shutdown([&] { executor->Shutdown(); });
  cpu.Open();
  gpu.Open();
  shutdown.join();
  EXPECT_EQ(executor->Submit(Job(outcomes.For(5))).code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(outcomes.size(), 7u);
  for (int job = 0; job < 4; ++job) EXPECT_TRUE(outcomes.Get(job).result.ok());
  for (size_t task = 0; task < 3; ++task) EXPECT_TRUE(outcomes.Get(4, task).result.ok());
  EXPECT_FALSE(outcomes.Has(5));
  executor->Shutdown();  // idempotent
}

// Many submitters racing with the workers (and, with answer_threads, the answer threads): every
// admitted task answered exactly once, also through Shutdown.
void ExpectEveryTaskAnsweredExactlyOnce(size_t answer_threads, bool answer_cpu_queries = false) {
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}},
                           {2, {.cpu_ms = 1, .gpu_ms = 20}},
                           {3, {.cpu_ms = 1.5, .gpu_ms = 1}},
                           {4, {.cpu_ms = 3, .gpu_ms = 1}},
                           {5, {.cpu_ms = 0, .gpu_ms = 0}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true);
  Recorder recorder;
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 3,
                                .gpu_threads = 2,
                                .answer_threads = answer_threads,
                                .answer_cpu_queries = answer_cpu_queries,
                                .queue_capacity = 16,
                                .policy = {.max_wait = absl::Milliseconds(2)},
                                .predictor = &predictor,
                                .hooks = recorder.Hooks()});
  Outcomes outcomes;
  constexpr int kThreads = 6;
  constexpr int kJobsPerThread = 150;
  std::atomic<int> admitted_tasks{0};
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int j = 0; j < kJobsPerThread; ++j) {
        const int id = t * 1000 + j;
        std::vector<uint32_t> ks;
        for (int n = 1 + static_cast<int>(rng() % 3); n > 0; --n) ks.push_back(1 + rng() % 5);
        const EnginePreference engine = rng() % 8 == 0   ? EnginePreference::kCpu
                                        : rng() % 8 == 0 ? EnginePreference::kGpu
                                                         : EnginePreference::kAuto;
        QueryJob job = Job(outcomes.For(id), ks, engine);
        if (rng() % 10 == 0) job.deadline = absl::Now();  // already expired
        if (rng() % 10 == 0) job.cancelled = std::make_shared<std::atomic<bool>>(true);
        // Retry a refusal a few times: the point is many admissions racing with the workers.
        for (int attempt = 0; attempt < 50; ++attempt) {
          absl::Status s = executor->Submit(job);
          if (s.ok()) {
            admitted_tasks.fetch_add(static_cast<int>(ks.size()));
            break;
          }
          EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
          absl::SleepFor(absl::Microseconds(100));
        }
      }
    });
  }
  for (std::thread& s : submitters) s.join();
  executor->Shutdown();  // drains what is queued
  EXPECT_EQ(static_cast<int>(outcomes.size()), admitted_tasks.load());
  EXPECT_EQ(outcomes.duplicates(), 0);
  EXPECT_GT(admitted_tasks.load(), kThreads * kJobsPerThread / 2);
  EXPECT_EQ(executor->queue_depth(), 0u);
  EXPECT_EQ(recorder.busy(Processor::kCpu), 0u);
  EXPECT_EQ(recorder.busy(Processor::kGpu), 0u);
  for (const auto& [job, task] : outcomes.order()) {
    const absl::StatusCode code = outcomes.Get(job, task).result.status().code();
    EXPECT_TRUE(code == absl::StatusCode::kOk || code == absl::StatusCode::kDeadlineExceeded ||
                code == absl::StatusCode::kCancelled)
        << code;
  }
}

TEST(HybridQueryExecutorTest, ConcurrentSubmittersGetEveryTaskAnsweredExactlyOnce) {
  ExpectEveryTaskAnsweredExactlyOnce(0);
}

TEST(HybridQueryExecutorTest, WithAnswerThreadsEveryTaskIsAnsweredExactlyOnce) {
  ExpectEveryTaskAnsweredExactlyOnce(2);
}

TEST(HybridQueryExecutorTest, AnsweringCpuQueriesOnAnswerThreadsEveryTaskIsAnsweredExactlyOnce) {
  ExpectEveryTaskAnsweredExactlyOnce(2, /*answer_cpu_queries=*/true);
}

// Eight queries, the even ones cheaper on the GPU and the odd ones on the CPU, by default with one
// answer thread: where each was answered (thread name, nice value, SCHED_IDLE, allowed CPUs) and by
// which engine. `options` sets the workers' priority, CPUs and answer threads.
struct AnsweredOn {
  std::string engine;
  std::string thread;
  int nice = 0;
  bool idle = false;
  std::vector<int> cpus;
};
std::map<int, AnsweredOn> RunCpuAndGpuQueries(HybridQueryExecutor::Options options) {
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true);
  options.cpu_threads = 2;
  options.gpu_threads = 1;
  options.queue_capacity = 32;
  options.policy = Fixed();
  options.predictor = &predictor;
  auto executor = MakeExecutor(&cpu, &gpu, std::move(options));
  absl::Mutex mu;
  std::map<int, AnsweredOn> answered_on;  // by job
  Outcomes outcomes;
  for (int job = 0; job < 8; ++job) {
    auto done = [&, job, record = outcomes.For(job)](size_t task, QueryOutcome o) {
      char name[16] = {};
      pthread_getname_np(pthread_self(), name, sizeof(name));
      AnsweredOn on{.engine = o.engine,
                    .thread = name,
                    .nice = base::ThreadNice().value_or(-100),
                    .idle = base::ThreadIsIdle(),
                    .cpus = base::ThreadCpus().value_or(std::vector<int>())};
      {
        absl::MutexLock lock(&mu);
        answered_on[job] = on;
      }
      record(task, std::move(o));
    };
    EXPECT_TRUE(executor->Submit(Job(done, {job % 2 == 0 ? 1u : 2u})).ok());
  }
  EXPECT_TRUE(outcomes.WaitFor(8));
  executor->Shutdown();
  absl::MutexLock lock(&mu);
  return answered_on;
}

// With answer threads, the GPU's queries are answered there and the CPU's by their workers.
TEST(HybridQueryExecutorTest, AnswerThreadsAnswerTheGpuWorkersQueries) {
  std::map<int, AnsweredOn> answered_on = RunCpuAndGpuQueries({.answer_threads = 1});
  for (int job = 0; job < 8; ++job) {
    EXPECT_EQ(answered_on[job].engine, job % 2 == 0 ? "gpu" : "cpu");
    EXPECT_EQ(answered_on[job].thread, job % 2 == 0 ? "tandem-answer" : "tandem-cpu")
        << "job " << job;
  }
}

// With answer_cpu_queries, the answer threads answer the CPU's queries too, at the server's
// priority, not the CPU workers' lowered one.
TEST(HybridQueryExecutorTest, AnswerThreadsAnswerTheCpuWorkersQueriesWhenAsked) {
  std::map<int, AnsweredOn> answered_on = RunCpuAndGpuQueries(
      {.answer_threads = 1, .answer_cpu_queries = true, .cpu_worker_priority = {.nice = 3}});
  const int base_nice = base::ThreadNice().value_or(-100);
  for (int job = 0; job < 8; ++job) {
    EXPECT_EQ(answered_on[job].engine, job % 2 == 0 ? "gpu" : "cpu");
    EXPECT_EQ(answered_on[job].thread, "tandem-answer") << "job " << job;
    EXPECT_EQ(answered_on[job].nice, base_nice) << "job " << job;
  }
}

// cpu_worker_priority lowers the CPU workers' priority only: GPU workers and answer threads keep
// the priority of the thread that created the executor.
TEST(HybridQueryExecutorTest, CpuWorkersRunAtTheirNiceLevel) {
  const absl::StatusOr<int> base = base::ThreadNice();
  ASSERT_TRUE(base.ok()) << base.status();
  if (*base > 16) GTEST_SKIP() << "the test runs at nice " << *base;
  std::map<int, AnsweredOn> answered_on =
      RunCpuAndGpuQueries({.answer_threads = 1, .cpu_worker_priority = {.nice = 3}});
  for (int job = 0; job < 8; ++job) {
    const bool on_gpu = job % 2 == 0;
    EXPECT_EQ(answered_on[job].thread, on_gpu ? "tandem-answer" : "tandem-cpu") << "job " << job;
    EXPECT_EQ(answered_on[job].nice, on_gpu ? *base : *base + 3) << "job " << job;
    EXPECT_FALSE(answered_on[job].idle);
  }
  EXPECT_EQ(*base::ThreadNice(), *base);  // the creating thread is left as it was
}

TEST(HybridQueryExecutorTest, IdleCpuWorkersRunUnderSchedIdle) {
  std::map<int, AnsweredOn> answered_on =
      RunCpuAndGpuQueries({.answer_threads = 1, .cpu_worker_priority = {.idle = true}});
  for (int job = 0; job < 8; ++job) {
    const bool on_gpu = job % 2 == 0;
    EXPECT_EQ(answered_on[job].thread, on_gpu ? "tandem-answer" : "tandem-cpu") << "job " << job;
    EXPECT_EQ(answered_on[job].idle, !on_gpu) << "job " << job;
  }
  EXPECT_FALSE(base::ThreadIsIdle());
}

// cpu_worker_cpus and gpu_worker_cpus confine each kind of worker to its CPUs (no answer threads
// here, so the GPU worker answers its own queries); the creating thread is left as it was.
TEST(HybridQueryExecutorTest, WorkersRunOnTheirCpus) {
  const absl::StatusOr<std::vector<int>> allowed = base::ThreadCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  const std::vector<int> cpu_cpus = {allowed->front()};
  const std::vector<int> gpu_cpus = {allowed->back()};  // the same CPU on a one-CPU machine
  std::map<int, AnsweredOn> answered_on = RunCpuAndGpuQueries(
      {.answer_threads = 0, .cpu_worker_cpus = cpu_cpus, .gpu_worker_cpus = gpu_cpus});
  for (int job = 0; job < 8; ++job) {
    const bool on_gpu = job % 2 == 0;
    EXPECT_EQ(answered_on[job].thread, on_gpu ? "tandem-gpu" : "tandem-cpu") << "job " << job;
    EXPECT_EQ(answered_on[job].cpus, on_gpu ? gpu_cpus : cpu_cpus) << "job " << job;
  }
  EXPECT_EQ(*base::ThreadCpus(), *allowed);
}

// Sleeps a few milliseconds per query and records how many queries of both engines (sharing one
// counter) ran at once.
class ConcurrencyProbe final : public index::Engine {
 public:
  ConcurrencyProbe(std::string name, std::atomic<int>* running, std::atomic<int>* peak)
      : name_(std::move(name)), running_(running), peak_(peak) {}
  absl::string_view name() const override { return name_; }
  absl::StatusOr<index::SearchResult> Search(const index::Query& query,
                                             const index::SearchContext&) const override {
    const int now = ++*running_;
    int seen = peak_->load();
    while (now > seen && !peak_->compare_exchange_weak(seen, now)) {
    }
    absl::SleepFor(absl::Milliseconds(3));
    --*running_;
    index::SearchResult result;
    result.hits.push_back({.docid = query.k, .score = 1.0f});
    return result;
  }

 private:
  std::string name_;
  std::atomic<int>* running_;
  std::atomic<int>* peak_;
};

// max_running = 1 (the serialized baseline of Figure 7): never two queries at once, each on the
// processor its prediction favours, even with several workers per processor.
TEST(HybridQueryExecutorTest, MaxRunningOneRunsOneQueryAtATime) {
  std::atomic<int> running{0}, peak{0};
  ConcurrencyProbe cpu("cpu", &running, &peak);
  ConcurrencyProbe gpu("gpu", &running, &peak);
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 3,
                                .gpu_threads = 3,
                                .max_running = 1,
                                .queue_capacity = 64,
                                .policy = {.gpu_threshold = 1, .cpu_threshold = 1, .max_shift = 1},
                                .predictor = &predictor});
  Outcomes outcomes;
  for (int job = 0; job < 24; ++job) {
    ASSERT_TRUE(executor->Submit(Job(outcomes.For(job), {job % 2 == 0 ? 1u : 2u})).ok());
  }
  ASSERT_TRUE(outcomes.WaitFor(24));
  executor->Shutdown();
  EXPECT_EQ(peak.load(), 1);
  for (int job = 0; job < 24; ++job) {
    const QueryOutcome o = outcomes.Get(job);
    ASSERT_TRUE(o.result.ok()) << o.result.status();
    EXPECT_EQ(o.engine, job % 2 == 0 ? "gpu" : "cpu") << "job " << job;
  }
}

// Without the limit the same load runs in parallel on both processors.
TEST(HybridQueryExecutorTest, WithoutMaxRunningQueriesOverlap) {
  std::atomic<int> running{0}, peak{0};
  ConcurrencyProbe cpu("cpu", &running, &peak);
  ConcurrencyProbe gpu("gpu", &running, &peak);
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  auto executor = MakeExecutor(
      &cpu, &gpu,
      {.cpu_threads = 3, .gpu_threads = 3, .queue_capacity = 64, .predictor = &predictor});
  Outcomes outcomes;
  for (int job = 0; job < 24; ++job) {
    ASSERT_TRUE(executor->Submit(Job(outcomes.For(job), {job % 2 == 0 ? 1u : 2u})).ok());
  }
  ASSERT_TRUE(outcomes.WaitFor(24));
  executor->Shutdown();
  EXPECT_GT(peak.load(), 1);
}

// The thresholds follow the load: with the GPU held and its queue growing, a query needs a larger
// cost advantage on the GPU to be sent there (the load shift), and the reports say so.
TEST(HybridQueryExecutorTest, ThresholdsShiftWithTheGpuBacklogAndAreReported) {
  FakePredictor predictor({{1, {.cpu_ms = 40, .gpu_ms = 2}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu");  // held
  absl::Mutex mu;
  std::vector<std::pair<double, double>> reported;
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 1,
                                .gpu_threads = 1,
                                .queue_capacity = 16,
                                .predictor = &predictor,
                                .hooks = {.on_thresholds = [&](double c, double g) {
                                  absl::MutexLock lock(&mu);
                                  reported.emplace_back(c, g);
                                }}});
  Outcomes outcomes;
  for (int job = 0; job < 6; ++job) ASSERT_TRUE(executor->Submit(Job(outcomes.For(job))).ok());
  ASSERT_TRUE(gpu.WaitStarted(1));
  gpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(6));
  executor->Shutdown();
  absl::MutexLock lock(&mu);
  ASSERT_FALSE(reported.empty());
  double highest_gpu = 0;
  for (const auto& [c, g] : reported) {
    EXPECT_NEAR(g / c, 4.0, 1e-9);  // the band shifts, it does not widen (default 0.5 and 2)
    highest_gpu = std::max(highest_gpu, g);
  }
  EXPECT_GT(highest_gpu, 2.0);  // the GPU's backlog raised the bar
  for (size_t i = 1; i < reported.size(); ++i) EXPECT_NE(reported[i], reported[i - 1]);
}

// Each worker's time splits into engine, answer, lock, scheduling and idle, adding up to its wall
// time:
// one CPU worker, three queries of 30 ms each (debug delay, engine time) with an answer callback
// that takes 10 ms, and idle time between them.
TEST(HybridQueryExecutorTest, WorkerTimeAddsUpByActivity) {
  absl::Mutex mu;
  WorkerTime total;
  int reports = 0;
  FakeEngine cpu("cpu", true);
  const absl::Time created = absl::Now();
  auto executor = MakeExecutor(&cpu, nullptr,
                               {.cpu_threads = 1,
                                .queue_capacity = 8,
                                .debug_query_delay = absl::Milliseconds(30),
                                .hooks = {.on_worker_time = [&](Processor p, const WorkerTime& t) {
                                  absl::MutexLock lock(&mu);
                                  EXPECT_EQ(p, Processor::kCpu);
                                  EXPECT_GE(t.engine, absl::ZeroDuration());
                                  EXPECT_GE(t.scheduling, absl::ZeroDuration());
                                  EXPECT_GE(t.lock, absl::ZeroDuration());
                                  total.engine += t.engine;
                                  total.answer += t.answer;
                                  total.lock += t.lock;
                                  total.scheduling += t.scheduling;
                                  total.idle += t.idle;
                                  ++reports;
                                }}});
  Outcomes outcomes;
  for (int job = 0; job < 3; ++job) {
    absl::SleepFor(absl::Milliseconds(20));  // idle before each query
    ASSERT_TRUE(executor
                    ->Submit(Job(
                        [&outcomes, job](size_t task, QueryOutcome o) {
                          absl::SleepFor(absl::Milliseconds(10));  // a slow answer
                          outcomes.For(job)(task, std::move(o));
                        },
                        {1}))
                    .ok());
    ASSERT_TRUE(outcomes.WaitFor(job + 1));
  }
  executor->Shutdown();
  const absl::Duration wall = absl::Now() - created;
  absl::MutexLock lock(&mu);
  EXPECT_EQ(reports, 4);  // three queries and the exit
  EXPECT_GE(total.engine, absl::Milliseconds(90));
  EXPECT_GE(total.answer, absl::Milliseconds(30));
  // Three 20 ms sleeps of the submitter, each less the moments between its wake-up and the
  // worker's wait (more on a loaded machine).
  EXPECT_GE(total.idle, absl::Milliseconds(50));
  const absl::Duration sum =
      total.engine + total.answer + total.lock + total.scheduling + total.idle;
  EXPECT_LE(sum, wall);
  // The worker started after `created` and reported its exit before Shutdown returned.
  EXPECT_GE(sum, wall - absl::Milliseconds(50));
  EXPECT_LT(total.scheduling + total.lock, absl::Milliseconds(50));
}

// A round serves every worker that asked and, when the queues changed, every parked one: with
// queries queued for them, workers neither idle (parked) nor wait long for a round. Four
// submitters queue 400 GPU queries of 2 ms at once for 4 GPU workers (6 idle CPU workers
// beside them, which must not take them: pinned); the GPU workers' idle time is their start and
// their last moments, not the run (a parked worker missed by the rounds would idle for all of it).
TEST(HybridQueryExecutorTest, ParkedWorkersAreServedWhileQueriesWait) {
  absl::Mutex mu;
  WorkerTime gpu_time;
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true, [](const index::Query&) { return 2.0; });
  FakePredictor predictor({{1, {.cpu_ms = 2, .gpu_ms = 2}}});
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 6,
                                .gpu_threads = 4,
                                .queue_capacity = 1000,
                                .predictor = &predictor,
                                .hooks = {.on_worker_time = [&](Processor p, const WorkerTime& t) {
                                  if (p != Processor::kGpu) return;
                                  absl::MutexLock lock(&mu);
                                  gpu_time.engine += t.engine;
                                  gpu_time.lock += t.lock;
                                  gpu_time.idle += t.idle;
                                }}});
  // Every worker asks and parks before the first query comes.
  absl::SleepFor(absl::Milliseconds(100));
  const absl::Time start = absl::Now();
  Outcomes outcomes;
  constexpr int kThreads = 4;
  constexpr int kJobsPerThread = 100;
  std::vector<std::thread> submitters;
  for (int t = 0; t < kThreads; ++t) {
    submitters.emplace_back([&, t] {
      for (int j = 0; j < kJobsPerThread; ++j) {
        ASSERT_TRUE(
            executor->Submit(Job(outcomes.For(t * 1000 + j), {1}, EnginePreference::kGpu)).ok());
      }
    });
  }
  for (std::thread& s : submitters) s.join();
  ASSERT_TRUE(outcomes.WaitFor(kThreads * kJobsPerThread));
  absl::MutexLock lock(&mu);
  EXPECT_GE(gpu_time.engine, absl::Milliseconds(kThreads * kJobsPerThread * 2));
  // 200 ms on each of the 4 workers, and nothing stranded in the inbox or a parked slot.
  const absl::Duration run = absl::Now() - start;
  EXPECT_LT(run, absl::Seconds(2));
  // Idle: the 100 ms each parked before the first query, and moments at the start and the end.
  EXPECT_LT(gpu_time.idle, absl::Milliseconds(4 * 100 + 150)) << "run " << run;
  EXPECT_LT(gpu_time.lock, absl::Milliseconds(150)) << "run " << run;
  EXPECT_EQ(gpu.started(), kThreads * kJobsPerThread);
  EXPECT_EQ(cpu.started(), 0);
}

}  // namespace
}  // namespace tandem::scheduler
