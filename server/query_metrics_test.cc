#include "server/query_metrics.h"

#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "rpc/metric_series.h"
#include "server/metrics_test_util.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

using prometheus::Labels;
using prometheus::MetricType;
using ::testing::ElementsAreArray;

// Canonical names of grpc::StatusCode 0..16, as the `code` label spells them.
constexpr const char* kCodeNames[] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

using metrics_testing::CountAtMost;
using metrics_testing::Describe;
using metrics_testing::ModeEngine;
using metrics_testing::Query;
using metrics_testing::Scrape;
using metrics_testing::UpperBounds;

constexpr const char* kHistograms[] = {"tandem_query_queue_wait_seconds",
                                       "tandem_query_execution_seconds",
                                       "tandem_query_duration_seconds"};

class QueryMetricsTest : public ::testing::Test {
 protected:
  prometheus::Registry registry_;
};

TEST_F(QueryMetricsTest, SeriesExistBeforeTheFirstQuery) {
  QueryMetrics metrics(registry_, {.version = "1.2.3", .commit = "abc123", .gpu = true},
                       {"cpu", "gpu"});
  const Scrape scrape(registry_);

  EXPECT_EQ(scrape.LabelSets("tandem_build_info"),
            (std::set<Labels>{{{"version", "1.2.3"}, {"commit", "abc123"}, {"gpu", "true"}}}));
  EXPECT_EQ(scrape.Value("tandem_build_info",
                         {{"version", "1.2.3"}, {"commit", "abc123"}, {"gpu", "true"}}),
            1);

  // OK for every engine and mode; no series for "none" nor for other codes until they occur.
  std::set<Labels> ok_series, mode_engine;
  for (const char* engine : {"cpu", "gpu"}) {
    for (const char* mode : {"and", "or", "and_or"}) {
      ok_series.insert(Query(mode, engine, "OK"));
      mode_engine.insert(ModeEngine(mode, engine));
    }
  }
  ASSERT_NE(scrape.Family("tandem_queries_total"), nullptr);
  EXPECT_EQ(scrape.Family("tandem_queries_total")->type, MetricType::Counter);
  EXPECT_EQ(scrape.LabelSets("tandem_queries_total"), ok_series);
  for (const Labels& labels : ok_series) {
    EXPECT_EQ(scrape.Value("tandem_queries_total", labels), 0) << Describe(labels);
  }

  std::vector<double> bounds = rpc::metrics::LatencyBuckets();
  bounds.push_back(std::numeric_limits<double>::infinity());
  for (const char* name : kHistograms) {
    ASSERT_NE(scrape.Family(name), nullptr) << name;
    EXPECT_EQ(scrape.Family(name)->type, MetricType::Histogram) << name;
    EXPECT_EQ(scrape.LabelSets(name), mode_engine) << name;
    for (const Labels& labels : mode_engine) {
      const auto histogram = scrape.Histogram(name, labels);
      EXPECT_EQ(histogram.sample_count, 0u) << name << Describe(labels);
      EXPECT_EQ(histogram.sample_sum, 0) << name << Describe(labels);
      EXPECT_THAT(UpperBounds(histogram), ElementsAreArray(bounds)) << name << Describe(labels);
    }
  }
  EXPECT_EQ(bounds.front(), 50e-6);  // 50 us to 10 s
  EXPECT_EQ(bounds[bounds.size() - 2], 10.0);

  EXPECT_EQ(scrape.LabelSets("tandem_postings_decoded_total"),
            (std::set<Labels>{{{"engine", "cpu"}}, {{"engine", "gpu"}}}));
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "cpu"}}), 0);
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "gpu"}}), 0);

  std::set<Labels> reasons;
  for (absl::string_view reason :
       {reject_reason::kInvalidArgument, reject_reason::kQueueFull, reject_reason::kDraining,
        reject_reason::kExpiredInQueue, reject_reason::kNoGpu, reject_reason::kInFlightLimit,
        reject_reason::kMemoryBreaker, reject_reason::kMalformed}) {
    reasons.insert({{"reason", std::string(reason)}});
  }
  EXPECT_EQ(scrape.LabelSets("tandem_rejected_queries_total"), reasons);
  for (const Labels& labels : reasons) {
    EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", labels), 0) << Describe(labels);
  }

  EXPECT_EQ(scrape.Family("tandem_gpu_fallbacks_total")->type, MetricType::Counter);
  EXPECT_EQ(scrape.Value("tandem_gpu_fallbacks_total"), 0);
  for (const char* gauge :
       {"tandem_queries_in_flight", "tandem_admission_queue_depth",
        "tandem_admission_queue_capacity", "tandem_index_documents", "tandem_index_terms",
        "tandem_index_postings", "tandem_index_size_bytes"}) {
    ASSERT_NE(scrape.Family(gauge), nullptr) << gauge;
    EXPECT_EQ(scrape.Family(gauge)->type, MetricType::Gauge) << gauge;
    EXPECT_EQ(scrape.LabelSets(gauge), std::set<Labels>{Labels{}}) << gauge;
    EXPECT_EQ(scrape.Value(gauge), 0) << gauge;
  }
}

TEST_F(QueryMetricsTest, BuildInfoWithoutGpu) {
  QueryMetrics metrics(registry_, {.version = "0.1.0", .commit = "", .gpu = false}, {"cpu"});
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.LabelSets("tandem_build_info"),
            (std::set<Labels>{{{"version", "0.1.0"}, {"commit", ""}, {"gpu", "false"}}}));
  EXPECT_EQ(scrape.LabelSets("tandem_postings_decoded_total"),
            (std::set<Labels>{{{"engine", "cpu"}}}));
}

TEST_F(QueryMetricsTest, CountsEveryGrpcCode) {
  QueryMetrics metrics(registry_, {}, {"cpu", "gpu"});
  // Code c is recorded c + 1 times, so a query landing in another code's series shows.
  for (int c = 0; c <= 16; ++c) {
    for (int i = 0; i <= c; ++i) {
      metrics.RecordQuery(
          {.mode = "and", .engine = "gpu", .code = static_cast<grpc::StatusCode>(c)});
    }
  }
  const Scrape scrape(registry_);
  for (int c = 0; c <= 16; ++c) {
    EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and", "gpu", kCodeNames[c])), c + 1)
        << kCodeNames[c];
  }
  // The 6 OK series made up front, plus the 16 other codes of (and, gpu).
  EXPECT_EQ(scrape.Series("tandem_queries_total").size(), 6u + 16u);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and", "cpu", "OK")), 0);
  // None of them reached an engine: no latency observed.
  EXPECT_EQ(
      scrape.Histogram("tandem_query_duration_seconds", ModeEngine("and", "gpu")).sample_count, 0u);
}

TEST_F(QueryMetricsTest, CountsLabelsWithoutACachedSeries) {
  QueryMetrics metrics(registry_, {}, {"cpu"});
  // An unknown mode, the "none" engine, an engine the node does not know, a code outside the
  // canonical range (20: still a value of the enum, whose values span -32..31).
  metrics.RecordQuery(
      {.mode = "invalid", .engine = "none", .code = grpc::StatusCode::INVALID_ARGUMENT});
  metrics.RecordQuery(
      {.mode = "invalid", .engine = "none", .code = grpc::StatusCode::INVALID_ARGUMENT});
  metrics.RecordQuery({.mode = "or", .engine = "none", .code = grpc::StatusCode::UNAVAILABLE});
  metrics.RecordQuery({.mode = "or", .engine = "cpu", .code = grpc::StatusCode::UNKNOWN});
  metrics.RecordQuery({.mode = "or", .engine = "cpu", .code = static_cast<grpc::StatusCode>(20)});
  metrics.RecordQuery({.mode = "and_or",
                       .engine = "tpu",
                       .code = grpc::StatusCode::OK,
                       .reached_engine = true,
                       .started = true,
                       .queued = absl::Milliseconds(1),
                       .executed = absl::Milliseconds(2),
                       .total = absl::Milliseconds(4),
                       .postings_decoded = 9});
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("invalid", "none", "INVALID_ARGUMENT")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "UNAVAILABLE")), 1);
  // A code past the canonical range reads UNKNOWN and shares its series.
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "UNKNOWN")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and_or", "tpu", "OK")), 1);
  EXPECT_EQ(scrape.Series("tandem_queries_total").size(), 3u + 4u);

  // "none" never gets latencies; the unknown engine gets its own series.
  for (const char* name : kHistograms) {
    EXPECT_EQ(scrape.Find(name, ModeEngine("invalid", "none")), nullptr) << name;
    EXPECT_EQ(scrape.Find(name, ModeEngine("or", "none")), nullptr) << name;
    EXPECT_EQ(scrape.Histogram(name, ModeEngine("and_or", "tpu")).sample_count, 1u) << name;
  }
  EXPECT_DOUBLE_EQ(
      scrape.Histogram("tandem_query_duration_seconds", ModeEngine("and_or", "tpu")).sample_sum,
      0.004);
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "tpu"}}), 9);
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "cpu"}}), 0);
  EXPECT_EQ(scrape.Find("tandem_postings_decoded_total", {{"engine", "none"}}), nullptr);
}

TEST_F(QueryMetricsTest, ObservesTheLatenciesOfQueriesThatReachedAnEngine) {
  QueryMetrics metrics(registry_, {}, {"cpu", "gpu"});
  // Ran on the GPU engine.
  metrics.RecordQuery({.mode = "and",
                       .engine = "gpu",
                       .code = grpc::StatusCode::OK,
                       .reached_engine = true,
                       .started = true,
                       .queued = absl::Milliseconds(2),
                       .executed = absl::Milliseconds(3),
                       .total = absl::Milliseconds(6),
                       .postings_decoded = 100});
  // Expired in the GPU queue: queue time and duration, no execution, no postings.
  metrics.RecordQuery({.mode = "and",
                       .engine = "gpu",
                       .code = grpc::StatusCode::DEADLINE_EXCEEDED,
                       .reached_engine = true,
                       .started = false,
                       .queued = absl::Milliseconds(40),
                       .total = absl::Milliseconds(40)});
  // The GPU failed and the CPU answered.
  metrics.RecordQuery({.mode = "or",
                       .engine = "cpu",
                       .code = grpc::StatusCode::OK,
                       .reached_engine = true,
                       .started = true,
                       .queued = absl::Microseconds(10),
                       .executed = absl::Microseconds(300),
                       .total = absl::Microseconds(400),
                       .postings_decoded = 5,
                       .gpu_fallback = true});
  const Scrape scrape(registry_);

  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and", "gpu", "OK")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and", "gpu", "DEADLINE_EXCEEDED")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "OK")), 1);

  const auto wait = scrape.Histogram("tandem_query_queue_wait_seconds", ModeEngine("and", "gpu"));
  EXPECT_EQ(wait.sample_count, 2u);
  EXPECT_DOUBLE_EQ(wait.sample_sum, 0.042);
  EXPECT_EQ(CountAtMost(wait, 1e-3), 0u);
  EXPECT_EQ(CountAtMost(wait, 2.5e-3), 1u);
  EXPECT_EQ(CountAtMost(wait, 25e-3), 1u);
  EXPECT_EQ(CountAtMost(wait, 50e-3), 2u);
  const auto execution =
      scrape.Histogram("tandem_query_execution_seconds", ModeEngine("and", "gpu"));
  EXPECT_EQ(execution.sample_count, 1u);
  EXPECT_DOUBLE_EQ(execution.sample_sum, 0.003);
  EXPECT_EQ(CountAtMost(execution, 2.5e-3), 0u);
  EXPECT_EQ(CountAtMost(execution, 5e-3), 1u);
  const auto duration = scrape.Histogram("tandem_query_duration_seconds", ModeEngine("and", "gpu"));
  EXPECT_EQ(duration.sample_count, 2u);
  EXPECT_DOUBLE_EQ(duration.sample_sum, 0.046);

  const auto cpu_execution =
      scrape.Histogram("tandem_query_execution_seconds", ModeEngine("or", "cpu"));
  EXPECT_EQ(cpu_execution.sample_count, 1u);
  EXPECT_DOUBLE_EQ(cpu_execution.sample_sum, 300e-6);
  EXPECT_EQ(CountAtMost(cpu_execution, 250e-6), 0u);
  EXPECT_EQ(CountAtMost(cpu_execution, 500e-6), 1u);
  // Other (mode, engine) pairs saw nothing.
  EXPECT_EQ(scrape.Histogram("tandem_query_duration_seconds", ModeEngine("or", "gpu")).sample_count,
            0u);

  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "gpu"}}), 100);
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "cpu"}}), 5);
  EXPECT_EQ(scrape.Value("tandem_gpu_fallbacks_total"), 1);
}

TEST_F(QueryMetricsTest, QueriesThatNeverReachedAnEngineAreCountedOnly) {
  QueryMetrics metrics(registry_, {}, {"cpu"});
  // Durations given but reached_engine false: nothing is observed.
  metrics.RecordQuery({.mode = "or",
                       .engine = "cpu",
                       .code = grpc::StatusCode::RESOURCE_EXHAUSTED,
                       .queued = absl::Milliseconds(5),
                       .executed = absl::Milliseconds(5),
                       .total = absl::Milliseconds(5),
                       .postings_decoded = 7});
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "RESOURCE_EXHAUSTED")), 1);
  for (const char* name : kHistograms) {
    EXPECT_EQ(scrape.Histogram(name, ModeEngine("or", "cpu")).sample_count, 0u) << name;
  }
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "cpu"}}), 0);
}

TEST_F(QueryMetricsTest, CountsRejectionsByReason) {
  QueryMetrics metrics(registry_, {}, {"cpu"});
  metrics.RecordRejection(reject_reason::kInvalidArgument);
  metrics.RecordRejection(reject_reason::kQueueFull, 3);
  metrics.RecordRejection(reject_reason::kQueueFull);
  metrics.RecordRejection(reject_reason::kDraining, 2);
  metrics.RecordRejection(reject_reason::kExpiredInQueue);
  metrics.RecordRejection(reject_reason::kNoGpu, 5);
  metrics.RecordRejection(reject_reason::kInFlightLimit, 6);
  metrics.RecordRejection(reject_reason::kMemoryBreaker, 7);
  metrics.RecordRejection(reject_reason::kMalformed);
  metrics.RecordRejection("too_large", 2);  // a reason without a cached series
  metrics.RecordRejection(reject_reason::kDraining, 0);
  const Scrape scrape(registry_);
  const std::map<std::string, double> want = {{"invalid_argument", 1}, {"queue_full", 4},
                                              {"draining", 2},         {"expired_in_queue", 1},
                                              {"no_gpu", 5},           {"in_flight_limit", 6},
                                              {"memory_breaker", 7},   {"malformed_request", 1},
                                              {"too_large", 2}};
  EXPECT_EQ(scrape.Series("tandem_rejected_queries_total").size(), want.size());
  for (const auto& [reason, count] : want) {
    EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", {{"reason", reason}}), count) << reason;
  }
  // Rejections are not answers: the query counters stay at zero.
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "OK")), 0);
  EXPECT_EQ(scrape.Series("tandem_queries_total").size(), 3u);
}

TEST_F(QueryMetricsTest, GaugesHoldTheLatestValue) {
  QueryMetrics metrics(registry_, {}, {"cpu"});
  metrics.SetQueueCapacity(64);
  metrics.SetQueueDepth(3);
  metrics.SetInFlight(5);
  {
    const Scrape scrape(registry_);
    EXPECT_EQ(scrape.Value("tandem_admission_queue_capacity"), 64);
    EXPECT_EQ(scrape.Value("tandem_admission_queue_depth"), 3);
    EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 5);
  }
  metrics.SetQueueDepth(0);
  metrics.SetInFlight(1);
  metrics.SetInFlight(0);
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_admission_queue_capacity"), 64);
  EXPECT_EQ(scrape.Value("tandem_admission_queue_depth"), 0);
  EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 0);
}

TEST_F(QueryMetricsTest, SetIndexExportsTheServedIndex) {
  testing::TempDir dir;
  // 3 documents; terms cat (1 posting), dog (3), fish (1).
  ASSERT_TRUE(testing::BuildIndex({{"cat", "dog"}, {"dog"}, {"fish", "dog", "dog"}},
                                  dir.path() + "/index", "pfor")
                  .ok());
  auto index = index::Index::Open(dir.path() + "/index");
  ASSERT_TRUE(index.ok()) << index.status();

  QueryMetrics metrics(registry_, {}, {"cpu"});
  metrics.SetIndex(**index);
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_index_documents"), 3);
  EXPECT_EQ(scrape.Value("tandem_index_terms"), 3);
  EXPECT_EQ(scrape.Value("tandem_index_postings"), 5);
  EXPECT_EQ(scrape.Value("tandem_index_size_bytes"), static_cast<double>((*index)->index_bytes()));
  EXPECT_GT(scrape.Value("tandem_index_size_bytes"), 0);
}

TEST_F(QueryMetricsTest, NoEnginesLeavesOnlyTheNoneSlot) {
  QueryMetrics metrics(registry_, {}, {});
  {
    const Scrape scrape(registry_);
    EXPECT_TRUE(scrape.Series("tandem_queries_total").empty());
    EXPECT_TRUE(scrape.Series("tandem_postings_decoded_total").empty());
    EXPECT_TRUE(scrape.Series("tandem_query_duration_seconds").empty());
  }
  metrics.RecordQuery({.mode = "or", .engine = "none", .code = grpc::StatusCode::UNAVAILABLE});
  metrics.RecordQuery({.mode = "or",
                       .engine = "cpu",
                       .code = grpc::StatusCode::OK,
                       .reached_engine = true,
                       .started = true,
                       .total = absl::Milliseconds(1),
                       .postings_decoded = 2});
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "UNAVAILABLE")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "OK")), 1);
  EXPECT_EQ(scrape.Histogram("tandem_query_duration_seconds", ModeEngine("or", "cpu")).sample_count,
            1u);
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "cpu"}}), 2);
}

TEST_F(QueryMetricsTest, ConcurrentRecordsAreAllCounted) {
  QueryMetrics metrics(registry_, {}, {"cpu"});
  constexpr int kThreads = 4, kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics] {
      for (int i = 0; i < kPerThread; ++i) {
        // NOT_FOUND's cached series is created at first use, possibly by two threads at once.
        metrics.RecordQuery({.mode = "or", .engine = "cpu", .code = grpc::StatusCode::NOT_FOUND});
        metrics.RecordQuery({.mode = "and",
                             .engine = "cpu",
                             .code = grpc::StatusCode::OK,
                             .reached_engine = true,
                             .started = true,
                             .postings_decoded = 1});
        metrics.RecordRejection(reject_reason::kQueueFull);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  const Scrape scrape(registry_);
  constexpr double kTotal = kThreads * kPerThread;
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "NOT_FOUND")), kTotal);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and", "cpu", "OK")), kTotal);
  EXPECT_EQ(
      scrape.Histogram("tandem_query_execution_seconds", ModeEngine("and", "cpu")).sample_count,
      static_cast<uint64_t>(kTotal));
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "cpu"}}), kTotal);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", {{"reason", "queue_full"}}), kTotal);
}

}  // namespace
}  // namespace tandem::server
