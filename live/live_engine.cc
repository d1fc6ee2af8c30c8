#include "live/live_engine.h"

#include "base/status_macros.h"
#include "index/prepared_query.h"

namespace tandem::live {

namespace {

// The engine that answers a query as prepared when the snapshot is the opened index itself, with
// its stored norms and no second lookup; null once the index took writes.
const index::Engine* AsBuiltEngine(const Snapshot& snapshot, const index::Index& base,
                                   LiveEngine::Where where) {
  if (!snapshot.as_built()) return nullptr;
  const Segment& segment = *snapshot.segments()[0].segment;
  if (&segment.index() != &base) return nullptr;
  if (where == LiveEngine::Where::kDevice && segment.device_engine() != nullptr) {
    return segment.device_engine();
  }
  return &segment.engine();
}

absl::Status CheckFilterNumbering(const index::Query& query) {
  if (query.filter != nullptr && query.filter_expression == nullptr) {
    return absl::FailedPreconditionError(
        "a filter bitmap numbers the documents as the index was built, which an index that took "
        "writes no longer does: give the filter as an expression");
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<index::SearchResult> LiveEngine::Search(const index::PreparedQuery& query,
                                                       const index::SearchContext& context) const {
  return std::move(SearchBatch({&query}, {context})[0]);
}

std::vector<absl::StatusOr<index::SearchResult>> LiveEngine::SearchBatch(
    const std::vector<const index::PreparedQuery*>& queries,
    const std::vector<index::SearchContext>& contexts) const {
  const size_t n = queries.size();
  std::vector<absl::StatusOr<index::SearchResult>> results(n, index::SearchResult{});
  if (absl::Status fit = index::CheckBatchContexts(n, contexts.size()); !fit.ok()) {
    for (auto& r : results) r = fit;
    return results;
  }
  std::shared_ptr<const Snapshot> snapshot = live_->snapshot();
  std::vector<size_t> ready;
  for (size_t i = 0; i < n; ++i) {
    absl::Status status = queries[i]->CheckPreparedFor(base_);
    if (status.ok() && !snapshot->as_built()) status = CheckFilterNumbering(queries[i]->query());
    if (status.ok()) {
      ready.push_back(i);
    } else {
      results[i] = status;
    }
  }
  if (ready.empty()) return results;
  auto context_of = [&](size_t i) { return contexts.size() == 1 ? contexts[0] : contexts[i]; };
  std::vector<index::SearchContext> ready_contexts;
  for (size_t i : ready) ready_contexts.push_back(context_of(i));
  std::vector<absl::StatusOr<index::SearchResult>> answers;
  if (const index::Engine* engine = AsBuiltEngine(*snapshot, base_, where_); engine != nullptr) {
    std::vector<const index::PreparedQuery*> prepared;
    for (size_t i : ready) prepared.push_back(queries[i]);
    if (prepared.size() == 1) {  // through Search, as Snapshot::SearchBatch does
      answers.push_back(engine->Search(*prepared[0], ready_contexts[0]));
    } else {
      answers = engine->SearchBatch(prepared, ready_contexts);
    }
    for (size_t j = 0; j < ready.size(); ++j) results[ready[j]] = std::move(answers[j]);
    return results;
  }
  std::vector<const index::Query*> raw;
  for (size_t i : ready) raw.push_back(&queries[i]->query());
  answers = snapshot->SearchBatch(raw, ready_contexts, where_ == Where::kDevice);
  for (size_t j = 0; j < ready.size(); ++j) {
    if (answers[j].ok()) answers[j]->documents = snapshot;
    results[ready[j]] = std::move(answers[j]);
  }
  return results;
}

}  // namespace tandem::live
