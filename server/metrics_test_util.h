// File: metrics_test_util.h
//
// Reading a prometheus-cpp registry back in tests, as Prometheus reads /metrics: by family name and
// exact label set.
//
//   Scrape scrape(registry);
//   EXPECT_EQ(scrape.Value("tandem_queries_total", {{"mode", "or"}, {"engine", "cpu"}, {"code",
//   "OK"}}), 1);
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"

namespace tandem::server::metrics_testing {

using prometheus::Labels;
using prometheus::MetricType;

inline std::string Describe(const Labels& labels) {
  return absl::StrCat("{", absl::StrJoin(labels, ",", absl::PairFormatter("=")), "}");
}

// One scrape of a registry, read as Prometheus reads /metrics: by family name and exact label set.
// prometheus-cpp leaves a family without series out of the scrape, so an absent family and a family
// without series read the same.
class Scrape {
 public:
  explicit Scrape(const prometheus::Registry& registry) : families_(registry.Collect()) {}

  const prometheus::MetricFamily* Family(const std::string& name) const {
    for (const prometheus::MetricFamily& family : families_) {
      if (family.name == name) return &family;
    }
    return nullptr;
  }

  // Every series of `name`, by its label set.
  std::map<Labels, const prometheus::ClientMetric*> Series(const std::string& name) const {
    std::map<Labels, const prometheus::ClientMetric*> out;
    if (const prometheus::MetricFamily* family = Family(name)) {
      for (const prometheus::ClientMetric& metric : family->metric) {
        Labels labels;
        for (const prometheus::ClientMetric::Label& label : metric.label) {
          labels[label.name] = label.value;
        }
        out[labels] = &metric;
      }
    }
    return out;
  }

  std::set<Labels> LabelSets(const std::string& name) const {
    std::set<Labels> out;
    for (const auto& [labels, metric] : Series(name)) out.insert(labels);
    return out;
  }

  const prometheus::ClientMetric* Find(const std::string& name, const Labels& labels) const {
    const auto series = Series(name);
    auto it = series.find(labels);
    return it == series.end() ? nullptr : it->second;
  }

  // The value of a counter or gauge series; NaN, and a test failure, when it is absent.
  double Value(const std::string& name, const Labels& labels = {}) const {
    const prometheus::MetricFamily* family = Family(name);
    const prometheus::ClientMetric* metric = Find(name, labels);
    if (family == nullptr || metric == nullptr) {
      ADD_FAILURE() << "no series " << name << Describe(labels);
      return std::numeric_limits<double>::quiet_NaN();
    }
    if (family->type == MetricType::Counter) return metric->counter.value;
    EXPECT_EQ(family->type, MetricType::Gauge) << name;
    return metric->gauge.value;
  }

  // A histogram series; an empty one, and a test failure, when it is absent.
  prometheus::ClientMetric::Histogram Histogram(const std::string& name,
                                                const Labels& labels) const {
    const prometheus::ClientMetric* metric = Find(name, labels);
    if (metric == nullptr) {
      ADD_FAILURE() << "no series " << name << Describe(labels);
      return {};
    }
    return metric->histogram;
  }

 private:
  std::vector<prometheus::MetricFamily> families_;
};

// The label set of tandem_queries_total.
inline Labels Query(const char* mode, const char* engine, const char* code) {
  return {{"mode", mode}, {"engine", engine}, {"code", code}};
}

// The label set of the per-mode, per-engine query histograms.
inline Labels ModeEngine(const char* mode, const char* engine) {
  return {{"mode", mode}, {"engine", engine}};
}

// The upper bounds of a histogram series' buckets.
inline std::vector<double> UpperBounds(const prometheus::ClientMetric::Histogram& histogram) {
  std::vector<double> bounds;
  for (const auto& bucket : histogram.bucket) bounds.push_back(bucket.upper_bound);
  return bounds;
}

// The cumulative count of the bucket whose upper bound is `le`.
inline uint64_t CountAtMost(const prometheus::ClientMetric::Histogram& histogram, double le) {
  for (const auto& bucket : histogram.bucket) {
    if (bucket.upper_bound == le) return bucket.cumulative_count;
  }
  ADD_FAILURE() << "no bucket le=" << le;
  return 0;
}

}  // namespace tandem::server::metrics_testing
