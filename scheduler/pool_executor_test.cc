#include "scheduler/pool_executor.h"

#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/executor_test_util.h"

namespace tandem::scheduler {
namespace {

using fakes::FailingEngine;
using fakes::FakeEngine;
using fakes::Job;
using fakes::Outcomes;
using fakes::RecordingObserver;

std::unique_ptr<PoolQueryExecutor> MakeExecutor(const index::Engine* cpu, const index::Engine* gpu,
                                                const ExecutorOptions& options,
                                                ExecutorObserver* observer = nullptr) {
  auto executor = PoolQueryExecutor::Create(cpu, gpu, options, observer);
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? *std::move(executor) : nullptr;
}

TEST(PoolQueryExecutorTest, RejectsBadOptions) {
  FakeEngine cpu("cpu");
  EXPECT_FALSE(PoolQueryExecutor::Create(nullptr, nullptr, {}).ok());
  EXPECT_FALSE(PoolQueryExecutor::Create(&cpu, nullptr, {.cpu_threads = 0}).ok());
  EXPECT_FALSE(
      PoolQueryExecutor::Create(&cpu, nullptr, {.testing_query_delay = -absl::Milliseconds(1)})
          .ok());
}

// queue_capacity 0: four jobs per worker.
TEST(PoolQueryExecutorTest, QueueCapacityDefaultsToFourJobsPerWorker) {
  FakeEngine cpu("cpu");
  EXPECT_EQ(MakeExecutor(&cpu, nullptr, {.cpu_threads = 3})->queue_capacity(), 12u);
  EXPECT_EQ(MakeExecutor(&cpu, nullptr, {.cpu_threads = 3, .queue_capacity = 5})->queue_capacity(),
            5u);
}

TEST(PoolQueryExecutorTest, RunsQueriesOnTheCpuEngine) {
  FakeEngine cpu("cpu");
  cpu.Open();
  auto executor = MakeExecutor(&cpu, nullptr, {.cpu_threads = 2, .queue_capacity = 4});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0), {7})).ok());
  ASSERT_TRUE(outcomes.WaitFor(1));
  QueryOutcome o = outcomes.Get(0);
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  EXPECT_EQ(o.result->hits.at(0).docid, 7u);
  EXPECT_EQ(o.engine, "cpu");
  EXPECT_TRUE(o.started);
  EXPECT_EQ(executor->engines(), std::vector<std::string>{"cpu"});
}

// One query for the GPU, whose engine fails every query with `gpu_error`.
QueryOutcome RunOnFailingGpu(FakeEngine& cpu, absl::Status gpu_error) {
  FailingEngine gpu(std::move(gpu_error));
  auto executor = MakeExecutor(&cpu, &gpu, {.cpu_threads = 1, .queue_capacity = 4});
  Outcomes outcomes;
  QueryJob job = Job(outcomes.For(0), {5});
  job.tasks[0].engine = EnginePreference::kGpu;
  EXPECT_TRUE(executor->Submit(std::move(job)).ok());
  EXPECT_TRUE(outcomes.WaitFor(1));
  return outcomes.Get(0);
}

TEST(PoolQueryExecutorTest, GpuFaultsAreAnsweredOnTheCpu) {
  FakeEngine cpu("cpu");
  cpu.Open();
  const QueryOutcome o = RunOnFailingGpu(cpu, absl::ResourceExhaustedError("device out of memory"));
  ASSERT_TRUE(o.result.ok()) << o.result.status();
  EXPECT_EQ(o.result->hits.at(0).docid, 5u);
  EXPECT_EQ(o.engine, "cpu");
  EXPECT_TRUE(o.gpu_fallback);
}

TEST(PoolQueryExecutorTest, QueryErrorsFromTheGpuAreNotRetried) {
  FakeEngine cpu("cpu");
  cpu.Open();
  const QueryOutcome o =
      RunOnFailingGpu(cpu, absl::InvalidArgumentError("k must be between 1 and 10000"));
  EXPECT_EQ(o.result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(o.engine, "gpu");
  EXPECT_FALSE(o.gpu_fallback);
  EXPECT_EQ(cpu.started(), 0);
}

TEST(PoolQueryExecutorTest, FullQueueRefusesAtOnce) {
  FakeEngine cpu("cpu");
  RecordingObserver recorder;
  auto executor = MakeExecutor(&cpu, nullptr, {.cpu_threads = 1, .queue_capacity = 1}, &recorder);
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0))).ok());
  ASSERT_TRUE(cpu.WaitStarted(1));  // the only worker is busy
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(1))).ok());
  EXPECT_EQ(executor->queue_depth(), 1u);
  const absl::Time before = absl::Now();
  absl::Status refused = executor->Submit(Job(outcomes.For(2)));
  EXPECT_LT(absl::Now() - before, absl::Seconds(1));  // at once, not after a wait
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted);
  cpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(2));
  executor->Shutdown();
  EXPECT_EQ(outcomes.size(), 2u);  // the refused job's callback never runs
  EXPECT_TRUE(outcomes.Get(0).result.ok());
  EXPECT_TRUE(outcomes.Get(1).result.ok());
  EXPECT_EQ(recorder.depths(), (std::vector<size_t>{1, 0, 1, 0}));
}

TEST(PoolQueryExecutorTest, QueryExpiredInTheQueueIsNotRun) {
  FakeEngine cpu("cpu");
  auto executor = MakeExecutor(&cpu, nullptr, {.cpu_threads = 1, .queue_capacity = 4});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0))).ok());
  ASSERT_TRUE(cpu.WaitStarted(1));
  QueryJob expired = Job(outcomes.For(1));
  expired.deadline = absl::Now() - absl::Seconds(1);
  ASSERT_TRUE(executor->Submit(std::move(expired)).ok());
  auto cancelled = std::make_shared<std::atomic<bool>>(true);
  QueryJob gone = Job(outcomes.For(2));
  gone.cancelled = cancelled;
  ASSERT_TRUE(executor->Submit(std::move(gone)).ok());
  cpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(3));
  EXPECT_EQ(outcomes.Get(1).result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(outcomes.Get(1).started);
  EXPECT_EQ(outcomes.Get(2).result.status().code(), absl::StatusCode::kCancelled);
  EXPECT_FALSE(outcomes.Get(2).started);
  EXPECT_EQ(cpu.started(), 1);
}

TEST(PoolQueryExecutorTest, DeadlineAndCancellationStopRunningQueries) {
  FakeEngine cpu("cpu");  // never opened: only the context can end these queries
  auto executor = MakeExecutor(&cpu, nullptr, {.cpu_threads = 2, .queue_capacity = 4});
  Outcomes outcomes;
  QueryJob timed = Job(outcomes.For(0));
  timed.deadline = absl::Now() + absl::Milliseconds(500);  // ample for a worker to start it
  ASSERT_TRUE(executor->Submit(std::move(timed)).ok());
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  QueryJob cancellable = Job(outcomes.For(1));
  cancellable.cancelled = cancelled;
  ASSERT_TRUE(executor->Submit(std::move(cancellable)).ok());
  ASSERT_TRUE(cpu.WaitStarted(2));
  cancelled->store(true);
  ASSERT_TRUE(outcomes.WaitFor(2));
  EXPECT_EQ(outcomes.Get(0).result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(outcomes.Get(0).started);
  EXPECT_EQ(outcomes.Get(1).result.status().code(), absl::StatusCode::kCancelled);
}

TEST(PoolQueryExecutorTest, TestingDelayHonoursTheDeadline) {
  FakeEngine cpu("cpu");
  cpu.Open();
  auto executor =
      MakeExecutor(&cpu, nullptr,
                   {.cpu_threads = 1, .queue_capacity = 1, .testing_query_delay = absl::Hours(1)});
  Outcomes outcomes;
  QueryJob job = Job(outcomes.For(0));
  job.deadline = absl::Now() + absl::Milliseconds(500);  // ample for a worker to start it
  ASSERT_TRUE(executor->Submit(std::move(job)).ok());
  ASSERT_TRUE(outcomes.WaitFor(1));
  EXPECT_EQ(outcomes.Get(0).result.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_TRUE(outcomes.Get(0).started);
  EXPECT_EQ(cpu.started(), 0);  // stopped during the delay, before the engine
}

TEST(PoolQueryExecutorTest, RoutesByEnginePreference) {
  FakeEngine cpu("cpu");
  FakeEngine gpu("gpu");
  cpu.Open();
  gpu.Open();
  Outcomes outcomes;
  auto cpu_only = MakeExecutor(&cpu, nullptr, {.cpu_threads = 1, .queue_capacity = 4});
  ASSERT_TRUE(cpu_only->Submit(Job(outcomes.For(0), {1}, EnginePreference::kGpu)).ok());
  ASSERT_TRUE(outcomes.WaitFor(1));
  EXPECT_EQ(outcomes.Get(0).result.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(outcomes.Get(0).engine, "");

  auto both = MakeExecutor(&cpu, &gpu, {.cpu_threads = 1, .queue_capacity = 4});
  EXPECT_EQ(both->engines(), (std::vector<std::string>{"cpu", "gpu"}));
  ASSERT_TRUE(both->Submit(Job(outcomes.For(1), {1}, EnginePreference::kGpu)).ok());
  ASSERT_TRUE(both->Submit(Job(outcomes.For(2), {1}, EnginePreference::kCpu)).ok());
  ASSERT_TRUE(both->Submit(Job(outcomes.For(3), {1}, EnginePreference::kAuto)).ok());
  ASSERT_TRUE(outcomes.WaitFor(4));
  EXPECT_EQ(outcomes.Get(1).engine, "gpu");
  EXPECT_EQ(outcomes.Get(2).engine, "cpu");
  EXPECT_EQ(outcomes.Get(3).engine, "cpu");
}

TEST(PoolQueryExecutorTest, BatchTakesOneSlotAndSharesTheWorkers) {
  FakeEngine cpu("cpu");
  auto executor = MakeExecutor(&cpu, nullptr, {.cpu_threads = 3, .queue_capacity = 1});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0), {1, 2, 3})).ok());
  ASSERT_TRUE(cpu.WaitStarted(3));  // all three queries of the batch run at once
  EXPECT_EQ(executor->queue_depth(), 0u);
  cpu.Open();
  ASSERT_TRUE(outcomes.WaitFor(3));
  for (size_t task = 0; task < 3; ++task) {
    QueryOutcome o = outcomes.Get(0, task);
    ASSERT_TRUE(o.result.ok());
    EXPECT_EQ(o.result->hits.at(0).docid, task + 1);  // each task reports under its own index
  }
}

TEST(PoolQueryExecutorTest, ShutdownFinishesAdmittedJobsAndRefusesNewOnes) {
  FakeEngine cpu("cpu");
  auto executor = MakeExecutor(&cpu, nullptr, {.cpu_threads = 1, .queue_capacity = 2});
  Outcomes outcomes;
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(0))).ok());
  ASSERT_TRUE(executor->Submit(Job(outcomes.For(1))).ok());
  ASSERT_TRUE(cpu.WaitStarted(1));
  std::thread shutdown([&] { executor->Shutdown(); });
  cpu.Open();
  shutdown.join();
  EXPECT_EQ(outcomes.size(), 2u);
  EXPECT_TRUE(outcomes.Get(0).result.ok());
  EXPECT_TRUE(outcomes.Get(1).result.ok());
  EXPECT_EQ(executor->Submit(Job(outcomes.For(2))).code(), absl::StatusCode::kUnavailable);
  executor->Shutdown();  // idempotent
}

}  // namespace
}  // namespace tandem::scheduler
