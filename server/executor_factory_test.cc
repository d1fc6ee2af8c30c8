#include "server/executor_factory.h"

#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cpu/reference_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index/prepared_query.h"
#include "index/query.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "scheduler/query_executor.h"
#include "server/engine_factory.h"
#include "server/query_metrics.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

using prometheus::Labels;
using scheduler::QueryOutcome;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// The value of a counter or gauge series of one scrape; NaN when it is absent.
double Value(const prometheus::Registry& registry, const std::string& name,
             const Labels& labels = {}) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name != name) continue;
    for (const prometheus::ClientMetric& metric : family.metric) {
      Labels got;
      for (const prometheus::ClientMetric::Label& label : metric.label) {
        got[label.name] = label.value;
      }
      if (got != labels) continue;
      return family.type == prometheus::MetricType::Counter ? metric.counter.value
                                                            : metric.gauge.value;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

// Series of `name` in one scrape.
size_t SeriesCount(const prometheus::Registry& registry, const std::string& name) {
  for (const prometheus::MetricFamily& family : registry.Collect()) {
    if (family.name == name) return family.metric.size();
  }
  return 0;
}

class ExecutorFactoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(testing::BuildIndex(testing::RandomDocuments(
                                        {.num_docs = 400, .vocabulary = 80, .mean_length = 20}),
                                    dir_.path() + "/index", "pfor")
                    .ok());
    auto index = index::Index::Open(dir_.path() + "/index");
    ASSERT_TRUE(index.ok()) << index.status();
    index_ = *std::move(index);
    auto engines = CreateEngines(*index_, {.gpu = GpuMode::kOff});
    ASSERT_TRUE(engines.ok()) << engines.status();
    ASSERT_EQ(engines->gpu, nullptr);
    engines_ = *std::move(engines);
  }

  absl::StatusOr<ExecutorSet> Create(const SchedulerOptions& options) {
    return CreateExecutor(options, *index_, engines_, registry_, query_metrics_);
  }

  static SchedulerOptions Options(SchedulerKind kind, size_t cpu_threads = 2) {
    SchedulerOptions options;
    options.kind = kind;
    options.executor.cpu_threads = cpu_threads;
    return options;
  }

  testing::TempDir dir_;
  std::unique_ptr<index::Index> index_;
  EngineSet engines_;
  prometheus::Registry registry_;
  QueryMetrics query_metrics_{registry_, {}, {"cpu"}};
};

TEST_F(ExecutorFactoryTest, AutoWithoutAGpuGivesThePool) {
  absl::StatusOr<ExecutorSet> set = Create(Options(SchedulerKind::kAuto, 3));
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->summary, "pool scheduler (3 workers, FIFO)");
  ASSERT_NE(set->executor, nullptr);
  EXPECT_NE(set->metrics, nullptr);
  EXPECT_EQ(set->cost_model, nullptr);
  EXPECT_EQ(set->executor->engines(), std::vector<std::string>{"cpu"});
  EXPECT_EQ(set->executor->queue_capacity(), 12u);  // 4 x 3 workers
  EXPECT_EQ(set->executor->queue_depth(), 0u);
  // The pool reports no per-processor series.
  EXPECT_EQ(SeriesCount(registry_, "tandem_processor_workers"), 0u);
}

TEST_F(ExecutorFactoryTest, PoolIgnoresTheCostModelFile) {
  SchedulerOptions options = Options(SchedulerKind::kPool);
  options.executor.queue_capacity = 5;
  options.cost_model.file = dir_.path() + "/absent-cost-model.txt";
  absl::StatusOr<ExecutorSet> set = Create(options);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ(set->summary, "pool scheduler (2 workers, FIFO); --cost-model unused");
  EXPECT_EQ(set->cost_model, nullptr);
  EXPECT_EQ(set->executor->queue_capacity(), 5u);
}

TEST_F(ExecutorFactoryTest, HybridSummaryNamesWorkersAndCostModel) {
  absl::StatusOr<ExecutorSet> set = Create(Options(SchedulerKind::kHybrid, 2));
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_NE(set->cost_model, nullptr);
  ASSERT_NE(set->metrics, nullptr);
  const std::string description = set->cost_model->description();
  EXPECT_THAT(description, StartsWith("cost model: "));
  EXPECT_THAT(description, HasSubstr("heuristic"));
  // Without a GPU engine: no GPU queries in flight and no answer threads, whatever the options say.
  EXPECT_EQ(set->summary, absl::StrCat("hybrid scheduler (2 CPU workers, 0 GPU queries in flight, "
                                       "0 answer threads, combining dispatch, default deadline "
                                       "500ms, max wait 20ms); ",
                                       description));
  EXPECT_EQ(set->executor->engines(), std::vector<std::string>{"cpu"});
  // 4 x the CPU workers: the default 4 GPU threads do not count without a GPU engine.
  EXPECT_EQ(set->executor->queue_capacity(), 8u);
  EXPECT_EQ(Value(registry_, "tandem_processor_workers", {{"processor", "cpu"}}), 2);
  EXPECT_EQ(SeriesCount(registry_, "tandem_processor_workers"), 1u);
  // The heuristic has no evaluation error to export.
  EXPECT_EQ(SeriesCount(registry_, "tandem_cost_model_mean_relative_error"), 0u);
}

TEST_F(ExecutorFactoryTest, HybridSummaryFollowsTheOptions) {
  SchedulerOptions options = Options(SchedulerKind::kHybrid, 1);
  options.executor.dispatch = scheduler::DispatchProtocol::kLocked;
  options.executor.default_deadline = absl::Milliseconds(250);
  options.executor.policy.max_wait = absl::Milliseconds(5);
  options.executor.answer_threads = 2;
  options.executor.queue_capacity = 3;
  absl::StatusOr<ExecutorSet> set = Create(options);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_THAT(set->summary,
              StartsWith("hybrid scheduler (1 CPU workers, 0 GPU queries in flight, 0 answer "
                         "threads, locked dispatch, default deadline 250ms, max wait 5ms); "));
  EXPECT_EQ(set->executor->queue_capacity(), 3u);
}

TEST_F(ExecutorFactoryTest, SerialRunsOneQueryAtATime) {
  absl::StatusOr<ExecutorSet> set = Create(Options(SchedulerKind::kSerial, 4));
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_NE(set->cost_model, nullptr);
  EXPECT_EQ(set->summary,
            absl::StrCat("serial scheduler (one query at a time on the cheaper processor); ",
                         set->cost_model->description()));
  // One CPU worker whatever --threads says, so 4 x 1 admission slots.
  EXPECT_EQ(Value(registry_, "tandem_processor_workers", {{"processor", "cpu"}}), 1);
  EXPECT_EQ(set->executor->queue_capacity(), 4u);
}

TEST_F(ExecutorFactoryTest, ZeroQueueCapacityIsFourTimesTheWorkers) {
  for (SchedulerKind kind : {SchedulerKind::kPool, SchedulerKind::kHybrid}) {
    SchedulerOptions options = Options(kind, 3);
    options.executor.gpu_threads = 4;  // no GPU engine: not workers
    absl::StatusOr<ExecutorSet> set = Create(options);
    ASSERT_TRUE(set.ok()) << AbslUnparseFlag(kind) << ": " << set.status();
    EXPECT_EQ(set->executor->queue_capacity(), 12u) << AbslUnparseFlag(kind);
  }
  for (SchedulerKind kind :
       {SchedulerKind::kPool, SchedulerKind::kHybrid, SchedulerKind::kSerial}) {
    SchedulerOptions options = Options(kind, 3);
    options.executor.queue_capacity = 7;
    absl::StatusOr<ExecutorSet> set = Create(options);
    ASSERT_TRUE(set.ok()) << AbslUnparseFlag(kind) << ": " << set.status();
    EXPECT_EQ(set->executor->queue_capacity(), 7u) << AbslUnparseFlag(kind);
  }
}

TEST_F(ExecutorFactoryTest, MissingCostModelFileFails) {
  for (SchedulerKind kind : {SchedulerKind::kHybrid, SchedulerKind::kSerial}) {
    SchedulerOptions options = Options(kind);
    options.cost_model.file = dir_.path() + "/absent-cost-model.txt";
    absl::StatusOr<ExecutorSet> set = Create(options);
    ASSERT_FALSE(set.ok()) << AbslUnparseFlag(kind);
    EXPECT_EQ(set.status().code(), absl::StatusCode::kNotFound) << set.status();
    EXPECT_THAT(std::string(set.status().message()), StartsWith("cannot load cost model: "));
    EXPECT_THAT(std::string(set.status().message()), HasSubstr("absent-cost-model.txt"));
  }
}

TEST_F(ExecutorFactoryTest, MalformedCostModelFileFails) {
  const std::string path = dir_.path() + "/cost-model.txt";
  std::ofstream(path) << "this is not a cost model\n";
  SchedulerOptions options = Options(SchedulerKind::kHybrid);
  options.cost_model.file = path;
  absl::StatusOr<ExecutorSet> set = Create(options);
  ASSERT_FALSE(set.ok());
  EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument) << set.status();
  EXPECT_THAT(std::string(set.status().message()), StartsWith("cannot load cost model: "));
}

TEST_F(ExecutorFactoryTest, RejectsUnusableExecutorOptions) {
  struct Case {
    const char* what;
    SchedulerOptions options;
    const char* names;  // what the message must name
  };
  std::vector<Case> cases;
  // Serial replaces the worker counts and the wait bound with its own, but a bad value is still
  // an error.
  for (SchedulerKind kind : {SchedulerKind::kAuto, SchedulerKind::kPool, SchedulerKind::kHybrid,
                             SchedulerKind::kSerial}) {
    cases.push_back({"no threads", Options(kind, 0), "threads"});
  }
  for (SchedulerKind kind : {SchedulerKind::kHybrid, SchedulerKind::kSerial}) {
    SchedulerOptions o = Options(kind);
    o.executor.policy.max_wait = absl::Milliseconds(-1);
    cases.push_back({"negative max wait", o, "max_wait"});
  }
  {
    SchedulerOptions o = Options(SchedulerKind::kHybrid);
    o.cost_model.refine_interval = absl::Seconds(-1);
    cases.push_back({"negative refine interval", o, "refine interval"});
  }
  {
    SchedulerOptions o = Options(SchedulerKind::kSerial);
    o.cost_model.refine_interval = absl::Seconds(-1);
    cases.push_back({"negative refine interval, serial", o, "refine interval"});
  }
  {
    SchedulerOptions o = Options(SchedulerKind::kHybrid);
    o.executor.default_deadline = absl::ZeroDuration();
    cases.push_back({"no default deadline", o, "default_deadline"});
  }
  for (SchedulerKind kind : {SchedulerKind::kPool, SchedulerKind::kHybrid}) {
    SchedulerOptions o = Options(kind);
    o.executor.testing_query_delay = absl::Milliseconds(-1);
    cases.push_back({"negative query delay", o, "testing_query_delay"});
  }
  for (const Case& c : cases) {
    absl::StatusOr<ExecutorSet> set = Create(c.options);
    ASSERT_FALSE(set.ok()) << c.what << " (" << AbslUnparseFlag(c.options.kind) << ")";
    EXPECT_EQ(set.status().code(), absl::StatusCode::kInvalidArgument)
        << c.what << ": " << set.status();
    EXPECT_THAT(std::string(set.status().message()), HasSubstr(c.names)) << c.what;
  }
}

TEST(SchedulerKindTest, NamesRoundTrip) {
  const std::pair<SchedulerKind, const char*> names[] = {{SchedulerKind::kAuto, "auto"},
                                                         {SchedulerKind::kPool, "pool"},
                                                         {SchedulerKind::kHybrid, "hybrid"},
                                                         {SchedulerKind::kSerial, "serial"}};
  for (const auto& [kind, name] : names) {
    EXPECT_EQ(AbslUnparseFlag(kind), name);
    SchedulerKind parsed =
        kind == SchedulerKind::kAuto ? SchedulerKind::kPool : SchedulerKind::kAuto;
    std::string error;
    EXPECT_TRUE(AbslParseFlag(name, &parsed, &error)) << name << ": " << error;
    EXPECT_EQ(parsed, kind) << name;
  }
}

TEST(SchedulerKindTest, BadNamesAreRefused) {
  for (const char* bad : {"fifo", "", "Hybrid", "auto ", "pool,hybrid"}) {
    SchedulerKind kind = SchedulerKind::kAuto;
    std::string error;
    EXPECT_FALSE(AbslParseFlag(bad, &kind, &error)) << "'" << bad << "'";
    EXPECT_EQ(error, absl::StrCat("must be auto, pool, hybrid or serial, got '", bad, "'"));
  }
}

// Every executor CreateExecutor makes answers queries as the reference engine does.
class CreatedExecutorTest : public ExecutorFactoryTest,
                            public ::testing::WithParamInterface<SchedulerKind> {};

TEST_P(CreatedExecutorTest, AnswersQueriesLikeTheReferenceEngine) {
  absl::StatusOr<ExecutorSet> set = Create(Options(GetParam(), 2));
  ASSERT_TRUE(set.ok()) << set.status();

  auto query = [](std::vector<std::string> terms, index::QueryMode mode, uint32_t k) {
    index::Query q;
    for (std::string& term : terms) q.terms.push_back({.term = std::move(term)});
    q.mode = mode;
    q.k = k;
    return q;
  };
  const std::vector<index::Query> queries = {
      query({"t0", "t7"}, index::QueryMode::kOr, 10),
      query({"t1", "t2"}, index::QueryMode::kAnd, 5),
      query({"t3", "t60", "t70"}, index::QueryMode::kAndOr, 20),
      query({"t5"}, index::QueryMode::kOr, 1),
      query({"absent"}, index::QueryMode::kOr, 10),
  };

  absl::Mutex mu;
  std::map<size_t, QueryOutcome> outcomes;
  int duplicates = 0;
  scheduler::QueryJob job;
  for (const index::Query& q : queries) {
    job.tasks.push_back({.query = *index::PreparedQuery::Prepare(*index_, q)});
  }
  job.on_done = [&](size_t task, QueryOutcome outcome) {
    absl::MutexLock lock(&mu);
    if (!outcomes.emplace(task, std::move(outcome)).second) ++duplicates;
  };
  ASSERT_TRUE(set->executor->Submit(std::move(job)).ok());
  {
    absl::MutexLock lock(&mu);
    auto all_done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
      return outcomes.size() == queries.size();
    };
    ASSERT_TRUE(mu.AwaitWithTimeout(absl::Condition(&all_done), absl::Seconds(30)));
  }

  const cpu::ReferenceEngine reference(*index_);
  absl::MutexLock lock(&mu);
  EXPECT_EQ(duplicates, 0);
  for (size_t i = 0; i < queries.size(); ++i) {
    const QueryOutcome& outcome = outcomes.at(i);
    ASSERT_TRUE(outcome.result.ok()) << "query " << i << ": " << outcome.result.status();
    EXPECT_EQ(outcome.engine, "cpu") << "query " << i;
    EXPECT_TRUE(outcome.started) << "query " << i;
    EXPECT_FALSE(outcome.gpu_fallback) << "query " << i;
    const absl::StatusOr<index::SearchResult> want = reference.Search(queries[i], {});
    ASSERT_TRUE(want.ok()) << want.status();
    // Same documents in the same order, same scores: both engines add the same floats in the
    // same order.
    EXPECT_EQ(outcome.result->hits, want->hits) << "query " << i;
    EXPECT_EQ(outcome.result->stats.executed_mode, want->stats.executed_mode) << "query " << i;
    if (i != 4) {
      EXPECT_FALSE(want->hits.empty()) << "query " << i << " tests nothing";
    }
  }
  EXPECT_TRUE(outcomes.at(4).result->hits.empty());
}

TEST_P(CreatedExecutorTest, ObserverHearsOfTheQueries) {
  absl::StatusOr<ExecutorSet> set = Create(Options(GetParam(), 2));
  ASSERT_TRUE(set.ok()) << set.status();
  absl::Mutex mu;
  int done = 0;
  constexpr int kQueries = 3;
  scheduler::QueryJob job;
  for (int i = 0; i < kQueries; ++i) {
    index::Query query;
    query.terms = {{.term = absl::StrCat("t", i)}};
    job.tasks.push_back({.query = *index::PreparedQuery::Prepare(*index_, query)});
  }
  job.on_done = [&](size_t, QueryOutcome) {
    absl::MutexLock lock(&mu);
    ++done;
  };
  ASSERT_TRUE(set->executor->Submit(std::move(job)).ok());
  // Shutdown finishes every admitted job and stops the workers, so every report is in.
  set->executor->Shutdown();
  EXPECT_EQ(done, kQueries);
  EXPECT_EQ(Value(registry_, "tandem_admission_queue_depth"), 0);
  if (set->cost_model == nullptr) return;  // the pool reports its queue depth only
  double decisions = 0;
  for (const char* queue : {"cpu", "gpu", "shared", "pinned"}) {
    decisions += Value(registry_, "tandem_scheduler_decisions_total",
                       {{"queue", queue}, {"processor", "cpu"}});
  }
  EXPECT_EQ(decisions, kQueries);
  // Without a GPU engine every query waits in the CPU queue, and none was pinned by a hint.
  EXPECT_EQ(Value(registry_, "tandem_scheduler_decisions_total",
                  {{"queue", "cpu"}, {"processor", "cpu"}}),
            kQueries);
  EXPECT_GT(Value(registry_, "tandem_processor_worker_seconds_total",
                  {{"processor", "cpu"}, {"activity", "engine"}}),
            0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, CreatedExecutorTest,
                         ::testing::Values(SchedulerKind::kAuto, SchedulerKind::kPool,
                                           SchedulerKind::kHybrid, SchedulerKind::kSerial),
                         [](const ::testing::TestParamInfo<SchedulerKind>& info) {
                           return AbslUnparseFlag(info.param);
                         });

}  // namespace
}  // namespace tandem::server
