// File: batch_metrics.h
//
// The GPU batch buffer's metrics (scheduler::BatchingEngine), read from its counters at each
// scrape:
// clang-format off
//   tandem_gpu_batches_total                  batches run (a batch of one runs on the per-query path)
//   tandem_gpu_batch_queries_total{path}      queries answered in batches (path="batch") or that
//                                             skipped the buffer (path="alone": the engine answers
//                                             them alone)
//   tandem_gpu_batch_postings_total           the batches' work, in postings (Ao et al.'s
//                                             computational threshold counts the same)
//   tandem_gpu_batch_seconds_total            time spent running batches, added over the runners
//   tandem_gpu_batch_buffered                 queries waiting in the buffer now
// clang-format on
// Queries per batch and seconds per batch are ratios of these over any window.
//
// With several GPUs (one buffer each) the counters are their sums.
//
//   auto metrics = std::make_shared<BatchMetrics>(engines.gpu_batching);
//   collectables.push_back(metrics);
#pragma once

#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "scheduler/batching_engine.h"

namespace tandem::server {

class BatchMetrics final : public prometheus::Collectable {
 public:
  // The engines must outlive every scrape (unregister, or destroy the exposer, first).
  explicit BatchMetrics(std::vector<const scheduler::BatchingEngine*> engines)
      : engines_(std::move(engines)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  const std::vector<const scheduler::BatchingEngine*> engines_;
};

}  // namespace tandem::server
