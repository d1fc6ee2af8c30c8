// File: batching_engine.h
//
// PARA, the batching of Ao et al. 2011 (section 3.1), as an Engine around one that answers batches
// (gpu::GpuEngine): concurrent Search calls wait in a buffer, and a runner thread takes them as one
// SearchBatch call once the work they add up to reaches the computational threshold c (postings of
// their shortest lists: the engine's BatchWorkFn), once the oldest has waited max_wait, or at once
// when no batch is running (the device would idle: at low load a query goes alone and waits for
// nobody). A batch of one query runs on the engine's per-query path (Search). Queries the engine
// answers alone (its BatchWorkFn says none: too many terms, k too large, custom BM25) skip the
// buffer.
//
// Each caller blocks until its batch has run, so a scheduler keeps as many queries in flight as it
// has GPU workers: HybridQueryExecutor's gpu_threads. The engine's answers are unchanged; a batch
// that fails (a device fault) fails each of its queries with that status, which the executor
// answers on the CPU (scheduler/query_run.h).
//
//   auto batching = BatchingEngine::Create(
//       *gpu, [&](const PreparedQuery& q) { return gpu->BatchWork(q); },
//       {.threshold = 1 << 20, .max_wait = absl::Microseconds(500), .runners = 4});
//   (*batching)->Search(prepared, context);  // from many threads
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "index/engine.h"

namespace tandem::scheduler {

struct BatchingOptions {
  // The computational threshold c: a batch starts once its queries' work adds up to this many
  // postings (the engine's BatchWorkFn). 16M was the best threshold measured on the 25M-document
  // index (bench/results/gpu_batch.json).
  uint64_t threshold = uint64_t{16} << 20;
  // The longest a query waits for others while a batch runs (PARA's time-out); 0: never waits.
  absl::Duration max_wait = absl::Microseconds(500);
  // Batches that may run at once; the engine needs as many batch contexts.
  int runners = 4;
  // The most queries in one batch.
  size_t max_queries = 1024;
};

// INVALID_ARGUMENT naming the option when `options` cannot be used.
absl::Status ValidateBatchingOptions(const BatchingOptions& options);

// What the batching did so far.
struct BatchingStats {
  uint64_t batches = 0;          // batches run (a batch of one runs as Search)
  uint64_t batched_queries = 0;  // queries they answered
  uint64_t batched_work = 0;     // their work, in postings
  double run_seconds = 0;        // time spent running them, added over the runners
  uint64_t alone = 0;            // queries that skipped the buffer (the engine answers them alone)
  size_t buffered = 0;           // queries waiting in the buffer now
};

// What a query adds to a batch, in postings (Ao et al.'s computational threshold counts these), as
// the wrapped engine answers it about its own batch path (gpu::GpuEngine::BatchWork); nullopt for
// a query that engine answers alone.
using BatchWorkFn = std::function<std::optional<uint64_t>(const index::PreparedQuery&)>;

class BatchingEngine final : public index::Engine {
 public:
  // `engine` must outlive this. INVALID_ARGUMENT naming the option for unusable options, or
  // without `batch_work`.
  static absl::StatusOr<std::unique_ptr<BatchingEngine>> Create(const index::Engine& engine,
                                                                BatchWorkFn batch_work,
                                                                const BatchingOptions& options);
  // Likewise, owning `engine`.
  static absl::StatusOr<std::unique_ptr<BatchingEngine>> Create(
      std::unique_ptr<const index::Engine> engine, BatchWorkFn batch_work,
      const BatchingOptions& options);
  // Runs what is still buffered, then stops the runners.
  ~BatchingEngine() override;

  absl::string_view name() const override { return engine_.name(); }
  const index::Index& index() const override { return engine_.index(); }
  using index::Engine::Search;
  using index::Engine::SearchBatch;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& query,
                                             const index::SearchContext& context) const override;
  std::vector<absl::StatusOr<index::SearchResult>> SearchBatch(
      const std::vector<const index::PreparedQuery*>& queries,
      const std::vector<index::SearchContext>& contexts) const override {
    return engine_.SearchBatch(queries, contexts);
  }

  const BatchingOptions& options() const { return options_; }
  BatchingStats stats() const;

 private:
  struct Pending;
  BatchingEngine(const index::Engine& engine, BatchWorkFn batch_work,
                 const BatchingOptions& options, std::unique_ptr<const index::Engine> owned);
  void RunnerLoop();
  // Whether a runner should take a batch now; else until when it may wait (InfiniteFuture: until
  // signalled).
  bool Ready(absl::Time now, absl::Time* wake) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Run(const std::vector<Pending*>& batch) const;

  const std::unique_ptr<const index::Engine> owned_;  // when created owning the engine
  const index::Engine& engine_;
  const BatchWorkFn batch_work_;
  const BatchingOptions options_;
  mutable absl::Mutex mu_;
  mutable absl::CondVar work_;  // a query arrived, a batch ended, or closing
  mutable std::deque<Pending*> buffer_ ABSL_GUARDED_BY(mu_);
  mutable uint64_t buffered_work_ ABSL_GUARDED_BY(mu_) = 0;
  mutable int running_ ABSL_GUARDED_BY(mu_) = 0;  // batches in flight
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  mutable BatchingStats stats_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> runners_;
};

}  // namespace tandem::scheduler
