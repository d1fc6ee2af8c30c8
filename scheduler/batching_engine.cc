#include "scheduler/batching_engine.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "base/thread_name.h"

namespace tandem::scheduler {

// One buffered call, on its caller's stack until `done`.
struct BatchingEngine::Pending {
  const index::PreparedQuery* query;
  const index::SearchContext* context;
  uint64_t work;
  absl::Time arrival;
  absl::StatusOr<index::SearchResult> result = index::SearchResult{};
  absl::Notification done{};
};

absl::Status ValidateBatchingOptions(const BatchingOptions& options) {
  if (options.threshold < 1) {
    return absl::InvalidArgumentError("the batch threshold must be at least 1 posting");
  }
  if (options.max_wait < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(absl::StrCat("the batch wait must not be negative, got ",
                                                   absl::FormatDuration(options.max_wait)));
  }
  if (options.runners < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("batch runners must be at least 1, got ", options.runners));
  }
  if (options.max_queries < 1) {
    return absl::InvalidArgumentError("a batch must hold at least 1 query");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<BatchingEngine>> BatchingEngine::Create(
    const index::Engine& engine, BatchWorkFn batch_work, const BatchingOptions& options) {
  if (!batch_work) return absl::InvalidArgumentError("batching needs the engine's batch work");
  if (absl::Status valid = ValidateBatchingOptions(options); !valid.ok()) return valid;
  return std::unique_ptr<BatchingEngine>(
      new BatchingEngine(engine, std::move(batch_work), options, nullptr));
}

absl::StatusOr<std::unique_ptr<BatchingEngine>> BatchingEngine::Create(
    std::unique_ptr<const index::Engine> engine, BatchWorkFn batch_work,
    const BatchingOptions& options) {
  if (engine == nullptr) return absl::InvalidArgumentError("batching needs an engine");
  if (!batch_work) return absl::InvalidArgumentError("batching needs the engine's batch work");
  if (absl::Status valid = ValidateBatchingOptions(options); !valid.ok()) return valid;
  const index::Engine& inner = *engine;
  return std::unique_ptr<BatchingEngine>(
      new BatchingEngine(inner, std::move(batch_work), options, std::move(engine)));
}

BatchingEngine::BatchingEngine(const index::Engine& engine, BatchWorkFn batch_work,
                               const BatchingOptions& options,
                               std::unique_ptr<const index::Engine> owned)
    : owned_(std::move(owned)),
      engine_(engine),
      batch_work_(std::move(batch_work)),
      options_(options) {
  for (int i = 0; i < options_.runners; ++i) {
    runners_.emplace_back([this] {
      base::NameThread("tandem-batch");
      RunnerLoop();
    });
  }
}

BatchingEngine::~BatchingEngine() {
  {
    absl::MutexLock lock(&mu_);
    closing_ = true;
    work_.SignalAll();
  }
  for (std::thread& t : runners_) t.join();
}

BatchingStats BatchingEngine::stats() const {
  absl::MutexLock lock(&mu_);
  BatchingStats stats = stats_;
  stats.buffered = buffer_.size();
  return stats;
}

absl::StatusOr<index::SearchResult> BatchingEngine::Search(
    const index::PreparedQuery& query, const index::SearchContext& context) const {
  const std::optional<uint64_t> work = batch_work_(query);
  if (!work.has_value()) {
    {
      absl::MutexLock lock(&mu_);
      ++stats_.alone;
    }
    return engine_.Search(query, context);
  }
  Pending pending{.query = &query, .context = &context, .work = *work, .arrival = absl::Now()};
  {
    absl::MutexLock lock(&mu_);
    buffer_.push_back(&pending);
    buffered_work_ += pending.work;
    work_.Signal();
  }
  pending.done.WaitForNotification();
  return std::move(pending.result);
}

bool BatchingEngine::Ready(absl::Time now, absl::Time* wake) const {
  *wake = absl::InfiniteFuture();
  if (buffer_.empty()) return false;
  if (closing_ || running_ == 0 || buffered_work_ >= options_.threshold ||
      buffer_.size() >= options_.max_queries) {
    return true;
  }
  const absl::Time due = buffer_.front()->arrival + options_.max_wait;
  if (now >= due) return true;
  *wake = due;
  return false;
}

void BatchingEngine::RunnerLoop() {
  std::vector<Pending*> batch;
  mu_.Lock();
  while (true) {
    absl::Time wake;
    while (!Ready(absl::Now(), &wake)) {
      if (closing_ && buffer_.empty()) {
        mu_.Unlock();
        return;
      }
      if (wake == absl::InfiniteFuture()) {
        work_.Wait(&mu_);
      } else {
        work_.WaitWithDeadline(&mu_, wake);
      }
    }
    // The oldest queries, up to the threshold (at least one).
    uint64_t work = 0;
    batch.clear();
    while (!buffer_.empty() &&
           (batch.empty() || (work < options_.threshold && batch.size() < options_.max_queries))) {
      Pending* p = buffer_.front();
      buffer_.pop_front();
      buffered_work_ -= p->work;
      work += p->work;
      batch.push_back(p);
    }
    ++running_;
    ++stats_.batches;
    stats_.batched_queries += batch.size();
    stats_.batched_work += work;
    mu_.Unlock();
    const absl::Time start = absl::Now();
    Run(batch);
    const absl::Duration ran = absl::Now() - start;
    mu_.Lock();
    stats_.run_seconds += absl::ToDoubleSeconds(ran);
    --running_;
    // Another runner may be waiting for the device to idle, or for a threshold this batch hid.
    if (!buffer_.empty()) work_.Signal();
  }
}

void BatchingEngine::Run(const std::vector<Pending*>& batch) const {
  if (batch.size() == 1) {
    Pending& p = *batch.front();
    p.result = engine_.Search(*p.query, *p.context);
    p.done.Notify();
    return;
  }
  std::vector<const index::PreparedQuery*> queries;
  std::vector<index::SearchContext> contexts;
  queries.reserve(batch.size());
  contexts.reserve(batch.size());
  for (const Pending* p : batch) {
    queries.push_back(p->query);
    contexts.push_back(*p->context);
  }
  std::vector<absl::StatusOr<index::SearchResult>> results = engine_.SearchBatch(queries, contexts);
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i]->result = i < results.size()
                           ? std::move(results[i])
                           : absl::InternalError("the engine answered fewer queries than it got");
    batch[i]->done.Notify();
  }
}

}  // namespace tandem::scheduler
