// File: memory_metrics.h
//
// The node's memory bounds, read at each scrape: the memory breaker (base/memory_breaker.h) and
// the filter cache (filter/filter_cache.h).
// clang-format off
//   tandem_memory_breaker_limit_bytes             the breaker's limit (--memory-breaker-bytes)
//   tandem_memory_breaker_bytes{holder}           bytes each holder has reserved: responses,
//                                                 filter_cache, watch_queues
//   tandem_filter_cache_bytes                     bytes the filter cache holds (all it allocates)
//   tandem_filter_cache_budget_bytes              its budget (--filter-cache-bytes)
//   tandem_filter_cache_entries                   filters it holds
//   tandem_filter_cache_hits_total                filters answered from the cache
//   tandem_filter_cache_misses_total              filters evaluated (then cached, if they fit)
// clang-format on
// The hit rate over a window is rate(hits) / (rate(hits) + rate(misses)).
//
//   auto metrics = std::make_shared<MemoryMetrics>(
//       breaker, [&] { return dispatcher.target()->filters.stats(); }, budget);
//   collectables.push_back(metrics);
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "base/memory_breaker.h"
#include "filter/filter_cache.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace tandem::server {

class MemoryMetrics final : public prometheus::Collectable {
 public:
  // `breaker` must outlive every scrape; `filter_cache` reads the stats of the filter cache of
  // the index served now.
  MemoryMetrics(const base::MemoryBreaker& breaker,
                std::function<filter::FilterCacheStats()> filter_cache,
                uint64_t filter_cache_budget)
      : breaker_(breaker),
        filter_cache_(std::move(filter_cache)),
        filter_cache_budget_(filter_cache_budget) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const base::MemoryBreaker& breaker_;
  const std::function<filter::FilterCacheStats()> filter_cache_;
  const uint64_t filter_cache_budget_;
};

}  // namespace tandem::server
