#include "server/memory_metrics.h"

#include <map>
#include <string>
#include <vector>

#include "filter/filter.h"
#include "gtest/gtest.h"

namespace tandem::server {
namespace {

// Every sample of the scrape, by "name{label=value}".
std::map<std::string, double> Samples(const MemoryMetrics& metrics) {
  std::map<std::string, double> out;
  for (const prometheus::MetricFamily& family : metrics.Collect()) {
    for (const prometheus::ClientMetric& m : family.metric) {
      std::string key = family.name;
      for (const auto& label : m.label) key += "{" + label.name + "=" + label.value + "}";
      out[key] = family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
    }
  }
  return out;
}

// Ten documents; "label" is spam for the even ones.
std::unique_ptr<filter::AttributeIndex> Labels() {
  std::vector<uint32_t> label;
  for (uint32_t d = 0; d < 10; ++d) label.push_back(d % 2);
  filter::AttributeField field;
  field.name = "label";
  field.values = {"ham", "spam"};
  field.columns = *filter::BuildBitmaps(filter::BitmapCodec::kPlwah, 10, label);
  std::vector<filter::AttributeField> fields;
  fields.push_back(std::move(field));
  return *filter::AttributeIndex::Create(10, filter::BitmapCodec::kPlwah, std::move(fields));
}

TEST(MemoryMetricsTest, ExportsTheBreakerByHolderAndTheFilterCache) {
  base::MemoryBreaker breaker(1 << 20);
  base::MemoryBreaker::Account& responses = breaker.AddAccount("responses");
  base::MemoryBreaker::Account& cache_account = breaker.AddAccount("filter_cache");
  breaker.AddAccount("watch_queues");
  const auto attributes = Labels();
  filter::FilterCache cache(attributes.get(), nullptr,
                            {.budget_bytes = 4096, .breaker = &cache_account});
  MemoryMetrics metrics(
      breaker, [&] { return cache.stats(); }, 4096);

  std::map<std::string, double> empty = Samples(metrics);
  EXPECT_EQ(empty["tandem_filter_cache_bytes"], 0);
  EXPECT_EQ(empty["tandem_filter_cache_hits_total"], 0);
  EXPECT_EQ(empty["tandem_memory_breaker_bytes{holder=watch_queues}"], 0);

  ASSERT_TRUE(responses.TryReserve(1000));
  for (const char* text : {"label = spam", "label = ham", "label = spam", "label = spam"}) {
    ASSERT_TRUE(cache.Evaluate(*filter::ParseFilter(text)).ok());
  }
  std::map<std::string, double> s = Samples(metrics);
  EXPECT_EQ(s["tandem_memory_breaker_limit_bytes"], 1 << 20);
  EXPECT_EQ(s["tandem_memory_breaker_bytes{holder=responses}"], 1000);
  EXPECT_GT(s["tandem_filter_cache_bytes"], 0);
  EXPECT_EQ(s["tandem_memory_breaker_bytes{holder=filter_cache}"], s["tandem_filter_cache_bytes"]);
  EXPECT_EQ(s["tandem_filter_cache_budget_bytes"], 4096);
  EXPECT_EQ(s["tandem_filter_cache_entries"], 2);
  EXPECT_EQ(s["tandem_filter_cache_hits_total"], 2);
  EXPECT_EQ(s["tandem_filter_cache_misses_total"], 2);
}

}  // namespace
}  // namespace tandem::server
