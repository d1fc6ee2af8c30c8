// File: executor_test_util.h
//
// Test doubles shared by the QueryExecutor tests: an engine whose queries run for a known time and
// can be held at a gate, an engine that always fails, a cost predictor with a fixed table, a
// collector of outcomes by (job, task), and an ExecutorObserver that records the reports. Queries
// are told apart by their k, which FakeEngine echoes as the docid of its one hit; they are
// prepared against testing::SmallIndex(), the index every fake engine answers over.
// HybridQueryExecutor tests use the fixture HybridQueryExecutorTest to run once per dispatch
// protocol.
//
//   FakeEngine cpu("cpu");          // queries block until cpu.Open()
//   Outcomes outcomes;
//   RecordingObserver observer;
//   auto executor = MakeHybridExecutor(&cpu, nullptr, {.cpu_threads = 1}, nullptr, &observer);
//   executor->Submit(Job(outcomes.For(0), {7}));
//   cpu.Open();
//   outcomes.WaitFor(1);  outcomes.Get(0).result->hits[0].docid == 7
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "cost_model/cost_predictor.h"
#include "gtest/gtest.h"
#include "index/engine.h"
#include "index/prepared_query.h"
#include "scheduler/executor_observer.h"
#include "scheduler/executor_options.h"
#include "scheduler/hybrid_executor.h"
#include "scheduler/query_executor.h"
#include "scheduler/work_queues.h"
#include "tests/test_collection.h"

namespace tandem::scheduler {

// How GoogleTest prints a test's DispatchProtocol parameter: "locked", "combining".
inline void PrintTo(DispatchProtocol protocol, std::ostream* os) {
  *os << AbslUnparseFlag(protocol);
}

}  // namespace tandem::scheduler

namespace tandem::scheduler::fakes {

// Generous bound for anything that should happen "promptly" on a loaded 2-core machine.
inline constexpr absl::Duration kPatience = absl::Seconds(30);

// Queries block while the gate is closed, then run for run_ms(query) milliseconds (a sleep),
// polling their context all along as the real engines do.
class FakeEngine final : public index::Engine {
 public:
  explicit FakeEngine(std::string name, bool open = false,
                      std::function<double(const index::Query&)> run_ms = nullptr)
      : name_(std::move(name)), run_ms_(std::move(run_ms)), open_(open) {}
  absl::string_view name() const override { return name_; }
  const index::Index& index() const override { return testing::SmallIndex(); }
  using index::Engine::Search;

  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& prepared,
                                             const index::SearchContext& context) const override {
    const index::Query& query = prepared.query();
    {
      absl::MutexLock lock(&mu_);
      started_.push_back(query.k);
    }
    while (true) {
      if (absl::Status s = context.Check(); !s.ok()) return s;
      absl::MutexLock lock(&mu_);
      if (open_) break;
      mu_.AwaitWithTimeout(absl::Condition(&open_), absl::Milliseconds(1));
    }
    const absl::Time end = absl::Now() + absl::Milliseconds(run_ms_ ? run_ms_(query) : 0.0);
    for (absl::Time now = absl::Now(); now < end; now = absl::Now()) {
      if (absl::Status s = context.Check(); !s.ok()) return s;
      absl::SleepFor(std::min(absl::Milliseconds(1), end - now));
    }
    index::SearchResult result;
    result.hits.push_back({.docid = query.k, .score = 1.0f});
    return result;
  }

  void Open() {
    absl::MutexLock lock(&mu_);
    open_ = true;
  }
  void Close() {
    absl::MutexLock lock(&mu_);
    open_ = false;
  }
  bool WaitStarted(size_t n) const {
    absl::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return started_.size() >= n; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kPatience);
  }
  int started() const {
    absl::MutexLock lock(&mu_);
    return static_cast<int>(started_.size());
  }
  // The k of every query started, in start order.
  std::vector<uint32_t> started_ks() const {
    absl::MutexLock lock(&mu_);
    return started_;
  }

 private:
  const std::string name_;
  const std::function<double(const index::Query&)> run_ms_;
  mutable absl::Mutex mu_;
  mutable std::vector<uint32_t> started_ ABSL_GUARDED_BY(mu_);
  bool open_ ABSL_GUARDED_BY(mu_);
};

// A GPU engine that always fails, e.g. the way a device out of memory does.
class FailingEngine final : public index::Engine {
 public:
  explicit FailingEngine(absl::Status status) : status_(std::move(status)) {}
  absl::string_view name() const override { return "gpu"; }
  const index::Index& index() const override { return testing::SmallIndex(); }
  using index::Engine::Search;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery&,
                                             const index::SearchContext&) const override {
    return status_;
  }

 private:
  absl::Status status_;
};

// Predicts from a table by the query's k (unlisted: 1 ms on each) and records what it observes.
class FakePredictor final : public cost_model::CostPredictor {
 public:
  struct Observation {
    uint32_t k;
    cost_model::Processor processor;
    double ms;
  };

  explicit FakePredictor(std::map<uint32_t, cost_model::CostEstimate> costs = {})
      : costs_(std::move(costs)) {}
  cost_model::CostEstimate Predict(const index::PreparedQuery& query) const override {
    auto it = costs_.find(query.query().k);
    return it == costs_.end() ? cost_model::CostEstimate{.cpu_ms = 1, .gpu_ms = 1} : it->second;
  }
  void Observe(const index::PreparedQuery& query, cost_model::Processor processor,
               double measured_ms) override {
    absl::MutexLock lock(&mu_);
    observed_.push_back({query.query().k, processor, measured_ms});
  }
  std::vector<Observation> observed() const {
    absl::MutexLock lock(&mu_);
    return observed_;
  }

 private:
  const std::map<uint32_t, cost_model::CostEstimate> costs_;
  mutable absl::Mutex mu_;
  std::vector<Observation> observed_ ABSL_GUARDED_BY(mu_);
};

// Collects outcomes by (job, task); counts a second outcome for the same task as a failure.
class Outcomes {
 public:
  std::function<void(size_t, QueryOutcome)> For(int job) {
    return [this, job](size_t task, QueryOutcome outcome) {
      absl::MutexLock lock(&mu_);
      const bool first = outcomes_.emplace(std::pair<int, size_t>(job, task), outcome).second;
      if (!first) ++duplicates_;
      order_.emplace_back(job, task);
    };
  }
  bool WaitFor(size_t count) {
    absl::MutexLock lock(&mu_);
    auto enough = [this, count]()
                      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return outcomes_.size() >= count; };
    return mu_.AwaitWithTimeout(absl::Condition(&enough), kPatience);
  }
  QueryOutcome Get(int job, size_t task = 0) {
    absl::MutexLock lock(&mu_);
    auto it = outcomes_.find({job, task});
    if (it == outcomes_.end()) {
      ADD_FAILURE() << "no outcome for job " << job << " task " << task;
      return QueryOutcome{.result = absl::NotFoundError("missing")};
    }
    return it->second;
  }
  bool Has(int job, size_t task = 0) {
    absl::MutexLock lock(&mu_);
    return outcomes_.count({job, task}) > 0;
  }
  size_t size() {
    absl::MutexLock lock(&mu_);
    return outcomes_.size();
  }
  int duplicates() {
    absl::MutexLock lock(&mu_);
    return duplicates_;
  }
  // (job, task) in completion order.
  std::vector<std::pair<int, size_t>> order() {
    absl::MutexLock lock(&mu_);
    return order_;
  }

 private:
  absl::Mutex mu_;
  std::map<std::pair<int, size_t>, QueryOutcome> outcomes_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<int, size_t>> order_ ABSL_GUARDED_BY(mu_);
  int duplicates_ ABSL_GUARDED_BY(mu_) = 0;
};

// A query of no terms with top `k`, prepared against testing::SmallIndex().
inline index::PreparedQuery Prepared(uint32_t k) {
  index::Query query;
  query.k = k;
  absl::StatusOr<index::PreparedQuery> prepared =
      index::PreparedQuery::Prepare(testing::SmallIndex(), query);
  EXPECT_TRUE(prepared.ok()) << prepared.status();
  return *std::move(prepared);
}

// A job of one query per k, each with engine preference `engine`.
inline QueryJob Job(std::function<void(size_t, QueryOutcome)> done, std::vector<uint32_t> ks = {1},
                    EnginePreference engine = EnginePreference::kAuto) {
  QueryJob job;
  for (uint32_t k : ks) job.tasks.push_back({.query = Prepared(k), .engine = engine});
  job.on_done = std::move(done);
  return job;
}

// Records what an executor reports, all but the three queues' depths. Thread-safe; its lock is
// taken after the scheduler's (for the ordered reports) and held only to append.
class RecordingObserver final : public ExecutorObserver {
 public:
  void OnQueueDepth(size_t jobs) override {
    absl::MutexLock lock(&mu_);
    depths_.push_back(jobs);
  }
  void OnThresholds(double cpu, double gpu) override {
    absl::MutexLock lock(&mu_);
    thresholds_.emplace_back(cpu, gpu);
  }
  void OnBusyWorkers(Processor p, size_t busy) override {
    absl::MutexLock lock(&mu_);
    busy_[p] = busy;
  }
  void OnDecision(const SchedulerDecision& decision) override {
    absl::MutexLock lock(&mu_);
    decisions_.push_back(decision);
  }
  void OnMeasured(Processor p, double predicted_ms, double measured_ms) override {
    absl::MutexLock lock(&mu_);
    ++measured_[p];
  }
  void OnBusyTime(Processor p, absl::Duration busy) override {
    absl::MutexLock lock(&mu_);
    busy_time_[p] += busy;
  }
  void OnWorkerTime(Processor p, const WorkerTime& time) override {
    absl::MutexLock lock(&mu_);
    worker_times_.emplace_back(p, time);
  }
  void OnDeadlineMiss() override {
    absl::MutexLock lock(&mu_);
    ++deadline_misses_;
  }

  std::vector<SchedulerDecision> decisions() { return Read(decisions_); }
  // Decisions of processor `p` for queue `queue`; with `reason`, only those made for it.
  int Count(Processor p, QueueKind queue, std::optional<TakeReason> reason = std::nullopt) {
    int n = 0;
    for (const SchedulerDecision& d : decisions()) {
      n += d.processor == p && d.queue == queue && (!reason || d.reason == *reason);
    }
    return n;
  }
  // Admission queue depths, in report order.
  std::vector<size_t> depths() { return Read(depths_); }
  // (cpu, gpu) thresholds, in report order.
  std::vector<std::pair<double, double>> thresholds() { return Read(thresholds_); }
  // Busy workers of `p` as last reported.
  size_t busy(Processor p) { return Read(busy_, p); }
  absl::Duration busy_time(Processor p) { return Read(busy_time_, p); }
  int measured(Processor p) { return Read(measured_, p); }
  int deadline_misses() { return Read(deadline_misses_); }
  // Every worker-time report, in report order.
  std::vector<std::pair<Processor, WorkerTime>> worker_times() { return Read(worker_times_); }
  // The sum of the worker-time reports of `p`'s workers.
  WorkerTime total_time(Processor p) {
    WorkerTime total;
    for (const auto& [processor, t] : worker_times()) {
      if (processor != p) continue;
      total.engine += t.engine;
      total.answer += t.answer;
      total.lock += t.lock;
      total.scheduling += t.scheduling;
      total.idle += t.idle;
    }
    return total;
  }

 private:
  // A copy of `field`, taken under the lock.
  template <typename T>
  T Read(const T& field) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    return field;
  }
  // The value of `p` in `by_processor`, 0 when never reported.
  template <typename T>
  T Read(const std::map<Processor, T>& by_processor, Processor p) ABSL_LOCKS_EXCLUDED(mu_) {
    absl::MutexLock lock(&mu_);
    const auto it = by_processor.find(p);
    return it == by_processor.end() ? T{} : it->second;
  }

  absl::Mutex mu_;
  std::vector<size_t> depths_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<double, double>> thresholds_ ABSL_GUARDED_BY(mu_);
  std::map<Processor, size_t> busy_ ABSL_GUARDED_BY(mu_);
  std::vector<SchedulerDecision> decisions_ ABSL_GUARDED_BY(mu_);
  std::map<Processor, int> measured_ ABSL_GUARDED_BY(mu_);
  std::map<Processor, absl::Duration> busy_time_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<Processor, WorkerTime>> worker_times_ ABSL_GUARDED_BY(mu_);
  int deadline_misses_ ABSL_GUARDED_BY(mu_) = 0;
};

// Fixed thresholds (cpu_ms / gpu_ms >= 2: GPU queue, <= 0.5: CPU queue), so routing depends only on
// the predictions.
inline WorkQueues::Policy Fixed() { return {.max_shift = 1}; }

// A HybridQueryExecutor, or null after a test failure when Create refuses `options`.
inline std::unique_ptr<HybridQueryExecutor> MakeHybridExecutor(
    const index::Engine* cpu, const index::Engine* gpu, const ExecutorOptions& options,
    CostPredictor* predictor = nullptr, ExecutorObserver* observer = nullptr) {
  auto executor = HybridQueryExecutor::Create(cpu, gpu, options, predictor, observer);
  EXPECT_TRUE(executor.ok()) << executor.status();
  return executor.ok() ? *std::move(executor) : nullptr;
}

// Every dispatch protocol, and the names ("locked", "combining") that tests run against each carry.
inline constexpr DispatchProtocol kAllDispatchProtocols[] = {DispatchProtocol::kLocked,
                                                             DispatchProtocol::kCombining};
inline std::string DispatchName(const ::testing::TestParamInfo<DispatchProtocol>& info) {
  return AbslUnparseFlag(info.param);
}

// A fixture whose tests run once per dispatch protocol; MakeExecutor uses the one under test.
//
//   using fakes::HybridQueryExecutorTest;
//   INSTANTIATE_TEST_SUITE_P(Dispatchers, HybridQueryExecutorTest,
//                            ::testing::ValuesIn(fakes::kAllDispatchProtocols),
//                            fakes::DispatchName);
class HybridQueryExecutorTest : public ::testing::TestWithParam<DispatchProtocol> {
 protected:
  std::unique_ptr<HybridQueryExecutor> MakeExecutor(const index::Engine* cpu,
                                                    const index::Engine* gpu,
                                                    ExecutorOptions options,
                                                    CostPredictor* predictor = nullptr,
                                                    ExecutorObserver* observer = nullptr) const {
    options.dispatch = GetParam();
    return MakeHybridExecutor(cpu, gpu, options, predictor, observer);
  }
};

}  // namespace tandem::scheduler::fakes
