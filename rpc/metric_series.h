// File: metric_series.h
//
// What the metric classes of the node and the broker share: bucket bounds, family registration
// in one line, and a cache of the series an event updates. prometheus-cpp's Family::Add copies and
// hashes the label set under the family's mutex (and, for a histogram, first builds a throwaway
// histogram), and the scheduler reports some series under its own lock, so series whose label
// values are known up front are resolved once.
#pragma once

#include <atomic>
#include <string>
#include <utility>

#include "absl/strings/string_view.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace tandem::rpc::metrics {

// 50 us to 10 s, about three buckets per decade: a cached term lookup lands in the first buckets, a
// long OR over a big index in the last ones.
const prometheus::Histogram::BucketBoundaries& LatencyBuckets();
// Measured / predicted time: a factor of 8 either way, finer near 1.
const prometheus::Histogram::BucketBoundaries& RatioBuckets();

inline std::string Str(absl::string_view s) { return std::string(s.data(), s.size()); }

inline prometheus::Family<prometheus::Counter>& Counters(prometheus::Registry& registry,
                                                         const char* name, const char* help) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(registry);
}
inline prometheus::Family<prometheus::Gauge>& Gauges(prometheus::Registry& registry,
                                                     const char* name, const char* help) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(registry);
}
inline prometheus::Family<prometheus::Histogram>& Histograms(prometheus::Registry& registry,
                                                             const char* name, const char* help) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(registry);
}

// The index of `name` in `names`, or -1.
template <size_t N>
int NameSlot(const char* const (&names)[N], absl::string_view name) {
  for (size_t i = 0; i < N; ++i) {
    if (name == names[i]) return static_cast<int>(i);
  }
  return -1;
}

// The series of `family` labelled make_labels(): cached in `slot` (filled at first use), or, for
// label values without a slot (null), looked up each time. Two threads may both miss: Family::Add
// hands both the same series, so either store is right.
template <typename T, typename MakeLabels, typename... Args>
T& Series(std::atomic<T*>* slot, prometheus::Family<T>& family, MakeLabels make_labels,
          Args&&... args) {
  if (slot == nullptr) return family.Add(make_labels(), std::forward<Args>(args)...);
  T* series = slot->load(std::memory_order_acquire);
  if (series == nullptr) {
    series = &family.Add(make_labels(), std::forward<Args>(args)...);
    slot->store(series, std::memory_order_release);
  }
  return *series;
}

}  // namespace tandem::rpc::metrics
