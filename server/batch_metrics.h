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
// With several GPUs (one buffer each) the counters are their sums. A node that loads a new index
// switches the metrics to its buffers; the counters go on from the old ones' (as read at their last
// scrape, or at the switch), so they never go back.
//
//   auto metrics = std::make_shared<BatchMetrics>(engines.gpu_batching, owner);
//   collectables.push_back(metrics);
#pragma once

#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"
#include "scheduler/batching_engine.h"

namespace tandem::server {

class BatchMetrics final : public prometheus::Collectable {
 public:
  // `owner` keeps the engines alive (null: they outlive every scrape).
  BatchMetrics(std::vector<const scheduler::BatchingEngine*> engines,
               std::shared_ptr<const void> owner = nullptr);

  // From now on the metrics read `engines` (a new index's), owned by `owner`; the old engines are
  // read while their owner lives (this holds it weakly), their last counts kept after.
  void Switch(std::vector<const scheduler::BatchingEngine*> engines,
              std::shared_ptr<const void> owner);

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  struct Source {
    std::vector<const scheduler::BatchingEngine*> engines;
    std::weak_ptr<const void> owner;
    bool owned = false;             // read only while `owner` lives
    scheduler::BatchingStats last;  // the counts at the last read
  };
  // Reads what is alive; the sum over every source, current and old.
  scheduler::BatchingStats Read() const;

  mutable absl::Mutex mu_;
  mutable std::vector<Source> sources_ ABSL_GUARDED_BY(mu_);  // the current one last
  std::shared_ptr<const void> owner_ ABSL_GUARDED_BY(mu_);    // the current engines' owner
};

}  // namespace tandem::server
