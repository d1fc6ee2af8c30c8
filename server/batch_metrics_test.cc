#include "server/batch_metrics.h"

#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "prometheus/metric_family.h"
#include "prometheus/text_serializer.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

// An engine over testing::SmallIndex() whose answer is empty.
class FakeEngine final : public index::Engine {
 public:
  absl::string_view name() const override { return "gpu"; }
  const index::Index& index() const override { return testing::SmallIndex(); }
  using index::Engine::Search;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery&,
                                             const index::SearchContext&) const override {
    return index::SearchResult{};
  }
};

// Batch work: the query's k for terms named "w", none for others.
std::optional<uint64_t> Work(const index::PreparedQuery& prepared) {
  const index::Query& query = prepared.query();
  if (query.terms.empty() || query.terms[0].term != "w") return std::nullopt;
  return query.k;
}

index::Query Q(const std::string& term, uint32_t k) {
  index::Query q;
  q.terms.push_back({term, 1.0f});
  q.k = k;
  return q;
}

// Every sample of the scrape, by "name{labels}".
std::map<std::string, double> Samples(const BatchMetrics& metrics) {
  std::map<std::string, double> out;
  for (const prometheus::MetricFamily& family : metrics.Collect()) {
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string key = family.name;
      for (const auto& label : m.label) key += "{" + label.name + "=" + label.value + "}";
      out[key] = family.type == prometheus::MetricType::Gauge ? m.gauge.value : m.counter.value;
    }
  }
  return out;
}

TEST(BatchMetricsTest, CountsBatchesQueriesWorkAndTime) {
  FakeEngine engine;
  auto batching = scheduler::BatchingEngine::Create(engine, Work, {.threshold = 100, .runners = 1});
  ASSERT_TRUE(batching.ok()) << batching.status();
  BatchMetrics metrics({batching->get()});
  std::map<std::string, double> before = Samples(metrics);
  EXPECT_EQ(before["tandem_gpu_batches_total"], 0);
  EXPECT_EQ(before["tandem_gpu_batch_buffered"], 0);

  ASSERT_TRUE((*batching)->Search(Q("w", 7), {}).ok());
  ASSERT_TRUE((*batching)->Search(Q("w", 5), {}).ok());
  ASSERT_TRUE((*batching)->Search(Q("other", 3), {}).ok());
  std::map<std::string, double> after = Samples(metrics);
  EXPECT_EQ(after["tandem_gpu_batches_total"], 2);  // the device idled: each ran at once
  EXPECT_EQ(after["tandem_gpu_batch_queries_total{path=batch}"], 2);
  EXPECT_EQ(after["tandem_gpu_batch_queries_total{path=alone}"], 1);
  EXPECT_EQ(after["tandem_gpu_batch_postings_total"], 12);
  EXPECT_GE(after["tandem_gpu_batch_seconds_total"], 0);
  EXPECT_EQ(after["tandem_gpu_batch_buffered"], 0);

  // The families serialize as Prometheus text, each with its help and type.
  const std::string text = prometheus::TextSerializer().Serialize(metrics.Collect());
  EXPECT_NE(text.find("# TYPE tandem_gpu_batches_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("# TYPE tandem_gpu_batch_buffered gauge"), std::string::npos) << text;
  EXPECT_NE(text.find("tandem_gpu_batch_queries_total{path=\"alone\"} 1"), std::string::npos)
      << text;
}

// A node that loads a new index switches the metrics to its buffers: the counters go on from the
// old buffers' counts, read while the old index lives and kept after it is gone.
TEST(BatchMetricsTest, SwitchKeepsCountingFromTheOldBuffers) {
  FakeEngine engine;
  auto old_buffer =
      scheduler::BatchingEngine::Create(engine, Work, {.threshold = 100, .runners = 1});
  ASSERT_TRUE(old_buffer.ok()) << old_buffer.status();
  auto owner = std::make_shared<int>(1);  // stands for the old index
  BatchMetrics metrics({old_buffer->get()}, owner);
  ASSERT_TRUE((*old_buffer)->Search(Q("w", 7), {}).ok());

  auto new_buffer =
      scheduler::BatchingEngine::Create(engine, Work, {.threshold = 100, .runners = 1});
  ASSERT_TRUE(new_buffer.ok()) << new_buffer.status();
  metrics.Switch({new_buffer->get()}, std::make_shared<int>(2));
  // A query the old index still answers after the switch is counted while it lives.
  ASSERT_TRUE((*old_buffer)->Search(Q("w", 3), {}).ok());
  ASSERT_TRUE((*new_buffer)->Search(Q("w", 5), {}).ok());
  EXPECT_EQ(Samples(metrics)["tandem_gpu_batches_total"], 3);
  EXPECT_EQ(Samples(metrics)["tandem_gpu_batch_postings_total"], 15);

  owner.reset();  // the old index is released
  old_buffer->reset();
  ASSERT_TRUE((*new_buffer)->Search(Q("w", 1), {}).ok());
  std::map<std::string, double> after = Samples(metrics);
  EXPECT_EQ(after["tandem_gpu_batches_total"], 4);
  EXPECT_EQ(after["tandem_gpu_batch_postings_total"], 16);
  EXPECT_EQ(after["tandem_gpu_batch_buffered"], 0);
}

}  // namespace
}  // namespace tandem::server
