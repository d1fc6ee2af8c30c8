// HybridQueryExecutor's scheduling decisions, against each dispatch protocol: routing by predicted
// cost, stealing, deadlines (call and default), the bounded wait, engine hints, max_running and the
// load-shifted thresholds.
#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/executor_test_util.h"
#include "scheduler/hybrid_executor.h"

namespace tandem::scheduler {
namespace {

using fakes::FakeEngine;
using fakes::FakePredictor;
using fakes::HybridQueryExecutorTest;
using fakes::Job;
using fakes::Outcomes;
using fakes::RecordingObserver;

TEST_P(HybridQueryExecutorTest, RoutesEachQueryToItsCheaperProcessor) {
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}},     // GPU queue
                           {2, {.cpu_ms = 1, .gpu_ms = 20}},     // CPU queue
                           {3, {.cpu_ms = 1.5, .gpu_ms = 1}}});  // shared
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true);
  RecordingObserver recorder;
  auto executor = MakeExecutor(
      &cpu, &gpu,
      {.cpu_threads = 2, .gpu_threads = 2, .queue_capacity = 32, .policy = fakes::Fixed()},
      &predictor, &recorder);
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

TEST_P(HybridQueryExecutorTest, IdleCpuStealsFromABackloggedGpu) {
  FakePredictor predictor({{1, {.cpu_ms = 40, .gpu_ms = 1}},
                           {2, {.cpu_ms = 1, .gpu_ms = 1}},
                           {3, {.cpu_ms = 2, .gpu_ms = 1}},
                           {4, {.cpu_ms = 50, .gpu_ms = 1}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu");  // held: the GPU is busy until the test opens it
  RecordingObserver recorder;
  auto executor = MakeExecutor(
      &cpu, &gpu,
      {.cpu_threads = 1, .gpu_threads = 1, .queue_capacity = 16, .policy = fakes::Fixed()},
      &predictor, &recorder);
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

TEST_P(HybridQueryExecutorTest, QueryExpiredWhileQueuedIsAnsweredWithoutRunning) {
  FakePredictor predictor;
  FakeEngine cpu("cpu");  // held
  FakeEngine gpu("gpu", true);
  RecordingObserver recorder;
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 1,
                                .gpu_threads = 1,
                                .queue_capacity = 8,
                                .default_deadline = absl::Seconds(60)},
                               &predictor, &recorder);
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

TEST_P(HybridQueryExecutorTest, DefaultDeadlineOrdersWorkButDoesNotStopQueries) {
  FakeEngine cpu("cpu", true, [](const index::Query&) { return 40.0; });
  RecordingObserver recorder;
  auto executor = MakeExecutor(
      &cpu, nullptr,
      {.cpu_threads = 1, .queue_capacity = 4, .default_deadline = absl::Milliseconds(10)}, nullptr,
      &recorder);
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
std::vector<uint32_t> StartOrder(DispatchProtocol dispatch, absl::Duration long_deadline) {
  FakePredictor predictor({{1, {.cpu_ms = 1}}, {2, {.cpu_ms = 1}}, {3, {.cpu_ms = 50}}});
  FakeEngine cpu("cpu");
  auto executor = fakes::MakeHybridExecutor(
      &cpu, nullptr,
      {.cpu_threads = 1,
       .queue_capacity = 4,
       .default_deadline = absl::Seconds(60),
       .policy = {.urgent_fraction = 0.1, .max_wait = absl::InfiniteDuration()},
       .dispatch = dispatch},
      &predictor);
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

TEST_P(HybridQueryExecutorTest, QueryNearItsDeadlineJumpsTheQueue) {
  // Urgent from 100 ms (a tenth of its 1 s): it runs before the shorter query.
  EXPECT_EQ(StartOrder(GetParam(), absl::Seconds(1)), (std::vector<uint32_t>{1, 3, 2}));
  // Urgent only from 6 s: shortest first.
  EXPECT_EQ(StartOrder(GetParam(), absl::Seconds(60)), (std::vector<uint32_t>{1, 2, 3}));
}

// Where a long query (k=9) starts among 100 shorter ones (k=1, 5 ms each) queued after it, all
// behind a blocker (k=2) that holds the only worker until everything is queued.
size_t LongQueryPosition(DispatchProtocol dispatch, absl::Duration max_wait) {
  FakePredictor predictor({{1, {.cpu_ms = 1}}, {2, {.cpu_ms = 1}}, {9, {.cpu_ms = 100}}});
  FakeEngine cpu("cpu", false, [](const index::Query& q) { return q.k == 1 ? 5.0 : 0.0; });
  auto executor = fakes::MakeHybridExecutor(&cpu, nullptr,
                                            {.cpu_threads = 1,
                                             .queue_capacity = 128,
                                             .default_deadline = absl::Seconds(60),
                                             .policy = {.max_wait = max_wait},
                                             .dispatch = dispatch},
                                            &predictor);
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

TEST_P(HybridQueryExecutorTest, BoundedWaitRunsALongQueryDespiteShorterOnes) {
  // Shorter queries overtake it (shortest first) until it has waited 200 ms, about 40 of them.
  const size_t bounded = LongQueryPosition(GetParam(), absl::Milliseconds(200));
  EXPECT_GT(bounded, 0u);
  EXPECT_LT(bounded, 100u);
  // Without the bound it runs last.
  EXPECT_EQ(LongQueryPosition(GetParam(), absl::InfiniteDuration()), 100u);
}

TEST_P(HybridQueryExecutorTest, EngineHintsBypassRouting) {
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu", true);
  RecordingObserver recorder;
  auto executor = MakeExecutor(
      &cpu, &gpu,
      {.cpu_threads = 1, .gpu_threads = 1, .queue_capacity = 4, .policy = fakes::Fixed()},
      &predictor, &recorder);
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

// Sleeps a few milliseconds per query and records how many queries of both engines (sharing one
// counter) ran at once.
class ConcurrencyProbe final : public index::Engine {
 public:
  ConcurrencyProbe(std::string name, std::atomic<int>* running, std::atomic<int>* peak)
      : name_(std::move(name)), running_(running), peak_(peak) {}
  absl::string_view name() const override { return name_; }
  const index::Index& index() const override { return testing::SmallIndex(); }
  using index::Engine::Search;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& prepared,
                                             const index::SearchContext&) const override {
    const index::Query& query = prepared.query();
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
TEST_P(HybridQueryExecutorTest, MaxRunningOneRunsOneQueryAtATime) {
  std::atomic<int> running{0}, peak{0};
  ConcurrencyProbe cpu("cpu", &running, &peak);
  ConcurrencyProbe gpu("gpu", &running, &peak);
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  auto executor = MakeExecutor(&cpu, &gpu,
                               {.cpu_threads = 3,
                                .gpu_threads = 3,
                                .queue_capacity = 64,
                                .max_running = 1,
                                .policy = {.gpu_threshold = 1, .cpu_threshold = 1, .max_shift = 1}},
                               &predictor);
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
TEST_P(HybridQueryExecutorTest, WithoutMaxRunningQueriesOverlap) {
  std::atomic<int> running{0}, peak{0};
  ConcurrencyProbe cpu("cpu", &running, &peak);
  ConcurrencyProbe gpu("gpu", &running, &peak);
  FakePredictor predictor({{1, {.cpu_ms = 20, .gpu_ms = 1}}, {2, {.cpu_ms = 1, .gpu_ms = 20}}});
  auto executor = MakeExecutor(
      &cpu, &gpu, {.cpu_threads = 3, .gpu_threads = 3, .queue_capacity = 64}, &predictor);
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
TEST_P(HybridQueryExecutorTest, ThresholdsShiftWithTheGpuBacklogAndAreReported) {
  FakePredictor predictor({{1, {.cpu_ms = 40, .gpu_ms = 2}}});
  FakeEngine cpu("cpu", true);
  FakeEngine gpu("gpu");  // held
  RecordingObserver recorder;
  auto executor =
      MakeExecutor(&cpu, &gpu, {.cpu_threads = 1, .gpu_threads = 1, .queue_capacity = 16},
                   &predictor, &recorder);
  Outcomes outcomes;
  for (int job = 0; job < 6; ++job) ASSERT_TRUE(executor->Submit(Job(outcomes.For(job))).ok());
  ASSERT_TRUE(gpu.WaitStarted(1));
  gpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(6));
  executor->Shutdown();
  const std::vector<std::pair<double, double>> reported = recorder.thresholds();
  ASSERT_FALSE(reported.empty());
  double highest_gpu = 0;
  for (const auto& [c, g] : reported) {
    EXPECT_NEAR(g / c, 4.0, 1e-9);  // the band shifts, it does not widen (default 0.5 and 2)
    highest_gpu = std::max(highest_gpu, g);
  }
  EXPECT_GT(highest_gpu, 2.0);  // the GPU's backlog raised the bar
  for (size_t i = 1; i < reported.size(); ++i) EXPECT_NE(reported[i], reported[i - 1]);
}

INSTANTIATE_TEST_SUITE_P(Dispatchers, HybridQueryExecutorTest,
                         ::testing::ValuesIn(fakes::kAllDispatchProtocols), fakes::DispatchName);

}  // namespace
}  // namespace tandem::scheduler
