#include "server/memory_metrics.h"

#include <string>
#include <utility>

#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace tandem::server {
namespace {

using prometheus::MetricType;

prometheus::MetricFamily Family(std::string name, std::string help, MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

prometheus::ClientMetric Value(MetricType type, uint64_t value,
                               std::vector<prometheus::ClientMetric::Label> labels = {}) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  if (type == MetricType::Counter) {
    metric.counter.value = static_cast<double>(value);
  } else {
    metric.gauge.value = static_cast<double>(value);
  }
  return metric;
}

void Add(std::vector<prometheus::MetricFamily>& families, std::string name, std::string help,
         MetricType type, uint64_t value) {
  families.push_back(Family(std::move(name), std::move(help), type));
  families.back().metric.push_back(Value(type, value));
}

}  // namespace

std::vector<prometheus::MetricFamily> MemoryMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> families;
  Add(families, "tandem_memory_breaker_limit_bytes",
      "The memory breaker's limit: what responses in flight, the filter cache and the Watch "
      "queues may hold together.",
      MetricType::Gauge, breaker_.limit());
  families.push_back(Family("tandem_memory_breaker_bytes",
                            "Bytes each holder has reserved from the memory breaker.",
                            MetricType::Gauge));
  for (const auto& [holder, bytes] : breaker_.Usage()) {
    families.back().metric.push_back(Value(MetricType::Gauge, bytes, {{"holder", holder}}));
  }

  const filter::FilterCacheStats cache = filter_cache_();
  Add(families, "tandem_filter_cache_bytes",
      "Bytes the filter cache holds: keys, bitmaps and their bookkeeping.", MetricType::Gauge,
      cache.bytes);
  Add(families, "tandem_filter_cache_budget_bytes", "The filter cache's budget in bytes.",
      MetricType::Gauge, filter_cache_budget_);
  Add(families, "tandem_filter_cache_entries", "Filters the filter cache holds.", MetricType::Gauge,
      cache.entries);
  Add(families, "tandem_filter_cache_hits_total", "Filters answered from the filter cache.",
      MetricType::Counter, cache.hits);
  Add(families, "tandem_filter_cache_misses_total",
      "Filters evaluated because the filter cache did not hold them.", MetricType::Counter,
      cache.misses);
  return families;
}

}  // namespace tandem::server
