#include "server/batch_metrics.h"

#include <memory>
#include <string>
#include <utility>

#include "prometheus/client_metric.h"
#include "prometheus/metric_type.h"

namespace tandem::server {
namespace {

prometheus::MetricFamily Family(std::string name, std::string help, prometheus::MetricType type) {
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  return family;
}

prometheus::ClientMetric Counter(double value,
                                 std::vector<prometheus::ClientMetric::Label> labels) {
  prometheus::ClientMetric metric;
  metric.label = std::move(labels);
  metric.counter.value = value;
  return metric;
}

void Add(const scheduler::BatchingStats& one, scheduler::BatchingStats& sum) {
  sum.batches += one.batches;
  sum.batched_queries += one.batched_queries;
  sum.batched_work += one.batched_work;
  sum.run_seconds += one.run_seconds;
  sum.alone += one.alone;
  sum.buffered += one.buffered;
}

}  // namespace

BatchMetrics::BatchMetrics(std::vector<const scheduler::BatchingEngine*> engines,
                           std::shared_ptr<const void> owner) {
  Switch(std::move(engines), std::move(owner));
}

void BatchMetrics::Switch(std::vector<const scheduler::BatchingEngine*> engines,
                          std::shared_ptr<const void> owner) {
  Read();  // the old engines' counts as of now, kept if they are gone by the next scrape
  absl::MutexLock lock(&mu_);
  const bool owned = owner != nullptr;
  sources_.push_back({.engines = std::move(engines), .owner = owner, .owned = owned});
  owner_ = std::move(owner);
}

scheduler::BatchingStats BatchMetrics::Read() const {
  absl::MutexLock lock(&mu_);
  scheduler::BatchingStats sum;
  for (Source& source : sources_) {
    const std::shared_ptr<const void> alive = source.owner.lock();
    if (!source.owned || alive != nullptr) {
      scheduler::BatchingStats now;
      for (const scheduler::BatchingEngine* engine : source.engines) Add(engine->stats(), now);
      source.last = now;
    } else {
      source.engines.clear();  // gone: its last counts stand, with nothing buffered
      source.last.buffered = 0;
    }
    Add(source.last, sum);
  }
  return sum;
}

std::vector<prometheus::MetricFamily> BatchMetrics::Collect() const {
  const scheduler::BatchingStats stats = Read();
  using prometheus::MetricType;
  std::vector<prometheus::MetricFamily> families;

  families.push_back(Family("tandem_gpu_batches_total",
                            "GPU batches run (a batch of one runs on the per-query path).",
                            MetricType::Counter));
  families.back().metric.push_back(Counter(static_cast<double>(stats.batches), {}));

  families.push_back(Family("tandem_gpu_batch_queries_total",
                            "GPU queries answered in batches (path=batch) or that skipped the "
                            "batch buffer (path=alone).",
                            MetricType::Counter));
  families.back().metric.push_back(
      Counter(static_cast<double>(stats.batched_queries), {{"path", "batch"}}));
  families.back().metric.push_back(Counter(static_cast<double>(stats.alone), {{"path", "alone"}}));

  families.push_back(Family("tandem_gpu_batch_postings_total",
                            "Work of the GPU batches, in postings (shortest lists of AND queries, "
                            "all lists of OR queries).",
                            MetricType::Counter));
  families.back().metric.push_back(Counter(static_cast<double>(stats.batched_work), {}));

  families.push_back(Family("tandem_gpu_batch_seconds_total",
                            "Time spent running GPU batches, added over the batch runners.",
                            MetricType::Counter));
  families.back().metric.push_back(Counter(stats.run_seconds, {}));

  families.push_back(Family("tandem_gpu_batch_buffered", "GPU queries waiting in the batch buffer.",
                            MetricType::Gauge));
  prometheus::ClientMetric buffered;
  buffered.gauge.value = static_cast<double>(stats.buffered);
  families.back().metric.push_back(std::move(buffered));
  return families;
}

}  // namespace tandem::server
