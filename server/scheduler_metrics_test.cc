#include "server/scheduler_metrics.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "cost_model/cost_model.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index/prepared_query.h"
#include "index/query.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "rpc/metric_series.h"
#include "scheduler/executor_observer.h"
#include "scheduler/work_queues.h"
#include "server/metrics_test_util.h"
#include "server/query_metrics.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

using prometheus::Labels;
using prometheus::MetricType;
using scheduler::Processor;
using scheduler::QueueKind;
using scheduler::SchedulerDecision;
using scheduler::TakeReason;
using scheduler::WorkerTime;
using ::testing::ElementsAreArray;

using metrics_testing::CountAtMost;
using metrics_testing::Describe;
using metrics_testing::Scrape;
using metrics_testing::UpperBounds;

constexpr const char* kDecisionQueues[] = {"cpu", "gpu", "shared", "pinned"};
constexpr const char* kActivities[] = {"engine", "answer", "lock", "scheduling", "idle"};

// The families SetWorkers fills, with the label that names the processor.
constexpr std::pair<const char*, const char*> kPerProcessor[] = {
    {"tandem_processor_workers", "processor"},
    {"tandem_processor_busy_workers", "processor"},
    {"tandem_processor_busy_seconds_total", "processor"},
    {"tandem_scheduler_steals_total", "processor"},
    {"tandem_scheduler_urgent_total", "processor"},
    {"tandem_scheduler_cost_ratio", "engine"},
    {"tandem_scheduler_decisions_total", "processor"},
    {"tandem_processor_worker_seconds_total", "processor"},
};

// Series of `name` whose `label` is `value`.
size_t SeriesWith(const Scrape& scrape, const std::string& name, const std::string& label,
                  const std::string& value) {
  size_t n = 0;
  for (const auto& [labels, metric] : scrape.Series(name)) {
    auto it = labels.find(label);
    n += it != labels.end() && it->second == value;
  }
  return n;
}

// The heuristic cost model over `index`, never retrained: no background retraining runs during a
// test, and the refinement counts stay 0.
cost_model::CostModelOptions HeuristicOptions(const index::Index& index) {
  cost_model::CostModelOptions options;
  options.index = &index;
  options.refine_every = 0;
  return options;
}

Labels Decision(const char* queue, const char* processor) {
  return {{"queue", queue}, {"processor", processor}};
}
Labels Activity(const char* processor, const char* activity) {
  return {{"processor", processor}, {"activity", activity}};
}

class SchedulerMetricsTest : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
  QueryMetrics queries_{registry_, {}, {"cpu", "gpu"}};
  SchedulerMetrics metrics_{registry_, queries_, nullptr};
};

TEST_F(SchedulerMetricsTest, BeforeSetWorkersOnlyTheGlobalSeriesExist) {
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Family("tandem_scheduler_deadline_misses_total")->type, MetricType::Counter);
  EXPECT_EQ(scrape.Value("tandem_scheduler_deadline_misses_total"), 0);
  EXPECT_EQ(scrape.Family("tandem_scheduler_ratio_threshold")->type, MetricType::Gauge);
  EXPECT_EQ(scrape.LabelSets("tandem_scheduler_ratio_threshold"),
            (std::set<Labels>{{{"queue", "cpu"}}, {{"queue", "gpu"}}}));
  EXPECT_EQ(scrape.Value("tandem_scheduler_ratio_threshold", {{"queue", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_scheduler_ratio_threshold", {{"queue", "gpu"}}), 0);
  for (const auto& [name, label] : kPerProcessor) {
    EXPECT_TRUE(scrape.Series(name).empty()) << name;
  }
  EXPECT_TRUE(scrape.Series("tandem_scheduler_queue_depth").empty());
  EXPECT_TRUE(scrape.Series("tandem_cost_model_mean_relative_error").empty());
  EXPECT_TRUE(scrape.Series("tandem_cost_model_refinements").empty());
}

TEST_F(SchedulerMetricsTest, SetWorkersCreatesTheProcessorsSeriesAtZero) {
  metrics_.SetWorkers(Processor::kCpu, 12);
  const Scrape scrape(registry_);

  EXPECT_EQ(scrape.Family("tandem_processor_workers")->type, MetricType::Gauge);
  EXPECT_EQ(scrape.LabelSets("tandem_processor_workers"),
            (std::set<Labels>{{{"processor", "cpu"}}}));
  EXPECT_EQ(scrape.Value("tandem_processor_workers", {{"processor", "cpu"}}), 12);
  EXPECT_EQ(scrape.Value("tandem_processor_busy_workers", {{"processor", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_processor_busy_seconds_total", {{"processor", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_scheduler_steals_total", {{"processor", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_scheduler_urgent_total", {{"processor", "cpu"}}), 0);

  EXPECT_EQ(scrape.Family("tandem_scheduler_cost_ratio")->type, MetricType::Histogram);
  const auto ratio = scrape.Histogram("tandem_scheduler_cost_ratio", {{"engine", "cpu"}});
  EXPECT_EQ(ratio.sample_count, 0u);
  std::vector<double> bounds;
  for (const auto& bucket : ratio.bucket) bounds.push_back(bucket.upper_bound);
  std::vector<double> want = rpc::metrics::RatioBuckets();
  want.push_back(std::numeric_limits<double>::infinity());
  EXPECT_THAT(bounds, ElementsAreArray(want));

  std::set<Labels> decisions, activities;
  for (const char* queue : kDecisionQueues) decisions.insert(Decision(queue, "cpu"));
  for (const char* activity : kActivities) activities.insert(Activity("cpu", activity));
  EXPECT_EQ(scrape.LabelSets("tandem_scheduler_decisions_total"), decisions);
  for (const Labels& labels : decisions) {
    EXPECT_EQ(scrape.Value("tandem_scheduler_decisions_total", labels), 0) << Describe(labels);
  }
  EXPECT_EQ(scrape.LabelSets("tandem_processor_worker_seconds_total"), activities);
  for (const Labels& labels : activities) {
    EXPECT_EQ(scrape.Value("tandem_processor_worker_seconds_total", labels), 0) << Describe(labels);
  }

  // The processor's own queue and the shared one; the GPU queue waits for the GPU's workers.
  EXPECT_EQ(scrape.LabelSets("tandem_scheduler_queue_depth"),
            (std::set<Labels>{{{"queue", "cpu"}}, {{"queue", "shared"}}}));
  EXPECT_EQ(scrape.Value("tandem_scheduler_queue_depth", {{"queue", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_scheduler_queue_depth", {{"queue", "shared"}}), 0);

  for (const auto& [name, label] : kPerProcessor) {
    EXPECT_EQ(SeriesWith(scrape, name, label, "gpu"), 0u) << name;
  }
}

TEST_F(SchedulerMetricsTest, SetWorkersForBothProcessors) {
  metrics_.SetWorkers(Processor::kCpu, 8);
  metrics_.SetWorkers(Processor::kGpu, 4);
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_processor_workers", {{"processor", "cpu"}}), 8);
  EXPECT_EQ(scrape.Value("tandem_processor_workers", {{"processor", "gpu"}}), 4);
  EXPECT_EQ(scrape.Series("tandem_scheduler_decisions_total").size(), 8u);
  EXPECT_EQ(scrape.Series("tandem_processor_worker_seconds_total").size(), 10u);
  EXPECT_EQ(scrape.LabelSets("tandem_scheduler_cost_ratio"),
            (std::set<Labels>{{{"engine", "cpu"}}, {{"engine", "gpu"}}}));
  EXPECT_EQ(scrape.LabelSets("tandem_scheduler_queue_depth"),
            (std::set<Labels>{{{"queue", "cpu"}}, {{"queue", "gpu"}}, {{"queue", "shared"}}}));
}

TEST_F(SchedulerMetricsTest, CountsDecisionsByQueueStealsAndUrgentOnes) {
  metrics_.SetWorkers(Processor::kCpu, 2);
  metrics_.SetWorkers(Processor::kGpu, 2);
  const SchedulerDecision decisions[] = {
      {.processor = Processor::kCpu, .queue = QueueKind::kCpu, .reason = TakeReason::kShortest},
      {.processor = Processor::kCpu, .queue = QueueKind::kCpu, .reason = TakeReason::kStarved},
      {.processor = Processor::kCpu, .queue = QueueKind::kShared, .reason = TakeReason::kShared},
      {.processor = Processor::kGpu, .queue = QueueKind::kGpu, .reason = TakeReason::kShortest},
      // The GPU took a query from the CPU queue.
      {.processor = Processor::kGpu, .queue = QueueKind::kCpu, .reason = TakeReason::kStolen},
      {.processor = Processor::kGpu, .queue = QueueKind::kShared, .reason = TakeReason::kUrgent},
      // Pinned by an engine hint: counted under "pinned" whatever queue it waited in.
      {.processor = Processor::kCpu,
       .queue = QueueKind::kCpu,
       .pinned = true,
       .reason = TakeReason::kUrgent},
      {.processor = Processor::kGpu,
       .queue = QueueKind::kGpu,
       .pinned = true,
       .reason = TakeReason::kShortest},
      {.processor = Processor::kGpu,
       .queue = QueueKind::kGpu,
       .pinned = true,
       .reason = TakeReason::kShortest},
  };
  for (const SchedulerDecision& d : decisions) metrics_.OnDecision(d);
  const Scrape scrape(registry_);
  const std::map<Labels, double> want = {
      {Decision("cpu", "cpu"), 2},    {Decision("gpu", "cpu"), 0},
      {Decision("shared", "cpu"), 1}, {Decision("pinned", "cpu"), 1},
      {Decision("cpu", "gpu"), 1},    {Decision("gpu", "gpu"), 1},
      {Decision("shared", "gpu"), 1}, {Decision("pinned", "gpu"), 2},
  };
  EXPECT_EQ(scrape.Series("tandem_scheduler_decisions_total").size(), want.size());
  for (const auto& [labels, count] : want) {
    EXPECT_EQ(scrape.Value("tandem_scheduler_decisions_total", labels), count) << Describe(labels);
  }
  EXPECT_EQ(scrape.Value("tandem_scheduler_steals_total", {{"processor", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_scheduler_steals_total", {{"processor", "gpu"}}), 1);
  EXPECT_EQ(scrape.Value("tandem_scheduler_urgent_total", {{"processor", "cpu"}}), 1);
  EXPECT_EQ(scrape.Value("tandem_scheduler_urgent_total", {{"processor", "gpu"}}), 1);
}

TEST_F(SchedulerMetricsTest, ObservesTheCostRatioWhenThereIsAPrediction) {
  metrics_.SetWorkers(Processor::kCpu, 1);
  metrics_.SetWorkers(Processor::kGpu, 1);
  metrics_.OnMeasured(Processor::kGpu, 2.0, 3.0);   // 1.5
  metrics_.OnMeasured(Processor::kGpu, 4.0, 1.0);   // 0.25
  metrics_.OnMeasured(Processor::kGpu, 0.0, 5.0);   // no prediction: not observed
  metrics_.OnMeasured(Processor::kCpu, 1.0, 20.0);  // 20, past the last bound
  const Scrape scrape(registry_);
  const auto gpu = scrape.Histogram("tandem_scheduler_cost_ratio", {{"engine", "gpu"}});
  EXPECT_EQ(gpu.sample_count, 2u);
  EXPECT_DOUBLE_EQ(gpu.sample_sum, 1.75);
  EXPECT_EQ(CountAtMost(gpu, 0.125), 0u);
  EXPECT_EQ(CountAtMost(gpu, 0.25), 1u);
  EXPECT_EQ(CountAtMost(gpu, 1.25), 1u);
  EXPECT_EQ(CountAtMost(gpu, 1.5), 2u);
  const auto cpu = scrape.Histogram("tandem_scheduler_cost_ratio", {{"engine", "cpu"}});
  EXPECT_EQ(cpu.sample_count, 1u);
  EXPECT_DOUBLE_EQ(cpu.sample_sum, 20.0);
  EXPECT_EQ(CountAtMost(cpu, 8.0), 0u);
  EXPECT_EQ(CountAtMost(cpu, std::numeric_limits<double>::infinity()), 1u);
  // Without a cost model there is no error to report.
  EXPECT_TRUE(scrape.Series("tandem_cost_model_mean_relative_error").empty());
  EXPECT_TRUE(scrape.Series("tandem_cost_model_refinements").empty());
}

TEST_F(SchedulerMetricsTest, AddsWorkerTimeByActivityAndBusyTime) {
  metrics_.SetWorkers(Processor::kCpu, 2);
  metrics_.SetWorkers(Processor::kGpu, 1);
  const WorkerTime first{.engine = absl::Milliseconds(3),
                         .answer = absl::Milliseconds(1),
                         .lock = absl::ZeroDuration(),
                         .scheduling = absl::Microseconds(500),
                         .idle = absl::Milliseconds(10)};
  const WorkerTime second{.engine = absl::Milliseconds(2),
                          .answer = absl::ZeroDuration(),
                          .lock = absl::Microseconds(250),
                          .scheduling = absl::ZeroDuration(),
                          .idle = absl::ZeroDuration()};
  metrics_.OnWorkerTime(Processor::kCpu, first);
  metrics_.OnWorkerTime(Processor::kCpu, second);
  metrics_.OnWorkerTime(Processor::kGpu, {.idle = absl::Seconds(1)});
  metrics_.OnBusyTime(Processor::kCpu, absl::Milliseconds(3));
  metrics_.OnBusyTime(Processor::kCpu, absl::Milliseconds(2));
  metrics_.OnBusyWorkers(Processor::kCpu, 2);
  metrics_.OnBusyWorkers(Processor::kCpu, 1);
  metrics_.OnBusyWorkers(Processor::kGpu, 1);
  const Scrape scrape(registry_);
  const char* name = "tandem_processor_worker_seconds_total";
  EXPECT_DOUBLE_EQ(scrape.Value(name, Activity("cpu", "engine")), 0.005);
  EXPECT_DOUBLE_EQ(scrape.Value(name, Activity("cpu", "answer")), 0.001);
  EXPECT_DOUBLE_EQ(scrape.Value(name, Activity("cpu", "lock")), 0.00025);
  EXPECT_DOUBLE_EQ(scrape.Value(name, Activity("cpu", "scheduling")), 0.0005);
  EXPECT_DOUBLE_EQ(scrape.Value(name, Activity("cpu", "idle")), 0.010);
  EXPECT_EQ(scrape.Value(name, Activity("gpu", "idle")), 1.0);
  EXPECT_EQ(scrape.Value(name, Activity("gpu", "engine")), 0);
  EXPECT_DOUBLE_EQ(scrape.Value("tandem_processor_busy_seconds_total", {{"processor", "cpu"}}),
                   0.005);
  EXPECT_EQ(scrape.Value("tandem_processor_busy_seconds_total", {{"processor", "gpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_processor_busy_workers", {{"processor", "cpu"}}), 1);
  EXPECT_EQ(scrape.Value("tandem_processor_busy_workers", {{"processor", "gpu"}}), 1);
}

TEST_F(SchedulerMetricsTest, ExportsThresholdsAndQueueDepths) {
  metrics_.OnThresholds(0.4, 2.5);
  metrics_.OnThresholds(0.25, 3.0);
  // Queue depths are exported with or without workers: the queue exists either way.
  metrics_.OnSchedulerQueueDepth(QueueKind::kGpu, 7);
  metrics_.OnSchedulerQueueDepth(QueueKind::kShared, 2);
  metrics_.OnSchedulerQueueDepth(QueueKind::kCpu, 1);
  metrics_.OnSchedulerQueueDepth(QueueKind::kCpu, 0);
  metrics_.OnQueueDepth(5);  // the admission queue, a QueryMetrics gauge
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_scheduler_ratio_threshold", {{"queue", "cpu"}}), 0.25);
  EXPECT_EQ(scrape.Value("tandem_scheduler_ratio_threshold", {{"queue", "gpu"}}), 3.0);
  EXPECT_EQ(scrape.Value("tandem_scheduler_queue_depth", {{"queue", "gpu"}}), 7);
  EXPECT_EQ(scrape.Value("tandem_scheduler_queue_depth", {{"queue", "shared"}}), 2);
  EXPECT_EQ(scrape.Value("tandem_scheduler_queue_depth", {{"queue", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_admission_queue_depth"), 5);
}

TEST_F(SchedulerMetricsTest, CountsDeadlineMisses) {
  metrics_.OnDeadlineMiss();
  metrics_.OnDeadlineMiss();
  metrics_.OnDeadlineMiss();
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_scheduler_deadline_misses_total"), 3);
}

TEST_F(SchedulerMetricsTest, DropsEventsOfAProcessorWithoutWorkers) {
  // Neither processor has workers: nothing is recorded, nothing crashes.
  const SchedulerDecision gpu_decision{
      .processor = Processor::kGpu, .queue = QueueKind::kCpu, .reason = TakeReason::kStolen};
  const SchedulerDecision cpu_decision{
      .processor = Processor::kCpu, .queue = QueueKind::kShared, .reason = TakeReason::kUrgent};
  auto send_all = [&] {
    for (const SchedulerDecision& d : {gpu_decision, cpu_decision}) metrics_.OnDecision(d);
    for (Processor p : {Processor::kCpu, Processor::kGpu}) {
      metrics_.OnMeasured(p, 1.0, 2.0);
      metrics_.OnBusyTime(p, absl::Milliseconds(1));
      metrics_.OnBusyWorkers(p, 3);
      metrics_.OnWorkerTime(p, {.engine = absl::Milliseconds(1), .idle = absl::Milliseconds(1)});
    }
  };
  send_all();
  {
    const Scrape scrape(registry_);
    for (const auto& [name, label] : kPerProcessor) {
      EXPECT_TRUE(scrape.Series(name).empty()) << name;
    }
  }

  // The CPU gets workers; the GPU's events are still dropped.
  metrics_.SetWorkers(Processor::kCpu, 1);
  send_all();
  const Scrape scrape(registry_);
  for (const auto& [name, label] : kPerProcessor) {
    EXPECT_EQ(SeriesWith(scrape, name, label, "gpu"), 0u) << name;
  }
  EXPECT_EQ(scrape.Value("tandem_scheduler_decisions_total", Decision("shared", "cpu")), 1);
  EXPECT_EQ(scrape.Value("tandem_scheduler_decisions_total", Decision("cpu", "cpu")), 0);
  EXPECT_EQ(scrape.Value("tandem_scheduler_urgent_total", {{"processor", "cpu"}}), 1);
  EXPECT_EQ(scrape.Value("tandem_scheduler_steals_total", {{"processor", "cpu"}}), 0);
  EXPECT_EQ(scrape.Histogram("tandem_scheduler_cost_ratio", {{"engine", "cpu"}}).sample_count, 1u);
  EXPECT_EQ(scrape.Value("tandem_processor_busy_workers", {{"processor", "cpu"}}), 3);
  EXPECT_DOUBLE_EQ(scrape.Value("tandem_processor_busy_seconds_total", {{"processor", "cpu"}}),
                   0.001);
  EXPECT_DOUBLE_EQ(scrape.Value("tandem_processor_worker_seconds_total", Activity("cpu", "engine")),
                   0.001);
}

TEST_F(SchedulerMetricsTest, SetTrainingErrorWithoutACostModelDoesNothing) {
  metrics_.SetTrainingError();
  const Scrape scrape(registry_);
  EXPECT_TRUE(scrape.Series("tandem_cost_model_mean_relative_error").empty());
}

// SchedulerMetrics with the heuristic cost model of an index built from the test's documents.
class SchedulerMetricsCostModelTest : public ::testing::Test {
 protected:
  // Builds the index and its model, then the metrics with `cpu_workers` CPU workers.
  void Start(const std::vector<std::vector<std::string>>& docs, int cpu_workers) {
    ASSERT_TRUE(testing::BuildIndex(docs, dir_.path() + "/index", "pfor").ok());
    auto index = index::Index::Open(dir_.path() + "/index");
    ASSERT_TRUE(index.ok()) << index.status();
    index_ = std::move(*index);
    auto model = cost_model::CostModel::Heuristic(HeuristicOptions(*index_));
    ASSERT_TRUE(model.ok()) << model.status();
    model_ = std::move(*model);
    metrics_.emplace(registry_, queries_, model_.get());
    metrics_->SetWorkers(Processor::kCpu, cpu_workers);
  }

  testing::TempDir dir_;
  std::unique_ptr<index::Index> index_;
  std::unique_ptr<cost_model::CostModel> model_;
  prometheus::Registry registry_;
  QueryMetrics queries_{registry_, {}, {"cpu"}};
  std::optional<SchedulerMetrics> metrics_;
};

TEST_F(SchedulerMetricsCostModelTest, LiveErrorAndRefinementsAppearAfterTheFirstMeasuredQuery) {
  ASSERT_NO_FATAL_FAILURE(
      Start(testing::RandomDocuments({.num_docs = 300, .vocabulary = 50, .mean_length = 20}), 2));
  // The heuristic has no evaluation error: no training series.
  metrics_->SetTrainingError();
  {
    const Scrape scrape(registry_);
    EXPECT_TRUE(scrape.Series("tandem_cost_model_mean_relative_error").empty());
    EXPECT_TRUE(scrape.Series("tandem_cost_model_refinements").empty());
  }

  // As the executor reports a query: the model observes it, then the metrics hear of it.
  index::Query plain;
  plain.terms = {{.term = "t0"}, {.term = "t3"}};
  plain.mode = index::QueryMode::kOr;
  absl::StatusOr<index::PreparedQuery> prepared = index::PreparedQuery::Prepare(*index_, plain);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const index::PreparedQuery& query = *prepared;
  const double predicted_ms = model_->Predict(query).cpu_ms;
  ASSERT_GT(predicted_ms, 0);
  const double measured_ms = 4 * predicted_ms;
  model_->Observe(query, Processor::kCpu, measured_ms);
  metrics_->OnMeasured(Processor::kCpu, predicted_ms, measured_ms);

  const double live_error = model_->live_relative_error(Processor::kCpu);
  ASSERT_TRUE(std::isfinite(live_error));
  EXPECT_DOUBLE_EQ(live_error, 0.75);  // |p - 4p| / 4p
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Family("tandem_cost_model_mean_relative_error")->type, MetricType::Gauge);
  EXPECT_EQ(scrape.LabelSets("tandem_cost_model_mean_relative_error"),
            (std::set<Labels>{{{"engine", "cpu"}, {"source", "live"}}}));
  EXPECT_DOUBLE_EQ(scrape.Value("tandem_cost_model_mean_relative_error",
                                {{"engine", "cpu"}, {"source", "live"}}),
                   live_error);
  EXPECT_EQ(scrape.LabelSets("tandem_cost_model_refinements"),
            (std::set<Labels>{{{"result", "swapped"}}, {{"result", "rejected"}}}));
  EXPECT_EQ(scrape.Value("tandem_cost_model_refinements", {{"result", "swapped"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_cost_model_refinements", {{"result", "rejected"}}), 0);
  EXPECT_EQ(scrape.Histogram("tandem_scheduler_cost_ratio", {{"engine", "cpu"}}).sample_count, 1u);
}

TEST_F(SchedulerMetricsCostModelTest, NoLiveErrorBeforeTheModelObservedAQuery) {
  ASSERT_NO_FATAL_FAILURE(Start({{"a", "b"}, {"b"}}, 1));
  // A measurement the model never observed: its live error is NaN, so no error series; the
  // refinement counts are exported all the same.
  metrics_->OnMeasured(Processor::kCpu, 1.0, 1.0);
  const Scrape scrape(registry_);
  EXPECT_TRUE(scrape.Series("tandem_cost_model_mean_relative_error").empty());
  EXPECT_EQ(scrape.Value("tandem_cost_model_refinements", {{"result", "swapped"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_cost_model_refinements", {{"result", "rejected"}}), 0);
}

}  // namespace
}  // namespace tandem::server
