// File: engine.cc
#include "index/engine.h"

#include <utility>

namespace tandem::index {
absl::Status CheckBatchContexts(size_t queries, size_t contexts) {
  if (contexts == 1 || contexts == queries) return absl::OkStatus();
  return absl::InvalidArgumentError("SearchBatch needs one context, or one per query");
}

std::vector<absl::StatusOr<SearchResult>> Engine::SearchBatch(
    const std::vector<const PreparedQuery*>& queries,
    const std::vector<SearchContext>& contexts) const {
  if (absl::Status fit = CheckBatchContexts(queries.size(), contexts.size()); !fit.ok()) {
    return std::vector<absl::StatusOr<SearchResult>>(queries.size(), fit);
  }
  std::vector<absl::StatusOr<SearchResult>> results;
  results.reserve(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    results.push_back(Search(*queries[i], contexts.size() == 1 ? contexts[0] : contexts[i]));
  }
  return results;
}

absl::StatusOr<SearchResult> Engine::Search(const Query& query,
                                            const SearchContext& context) const {
  absl::StatusOr<PreparedQuery> prepared = PreparedQuery::Prepare(index(), query);
  if (!prepared.ok()) return prepared.status();
  return Search(*prepared, context);
}

std::vector<absl::StatusOr<SearchResult>> Engine::SearchBatch(
    const std::vector<Query>& queries, const std::vector<SearchContext>& contexts) const {
  if (absl::Status fit = CheckBatchContexts(queries.size(), contexts.size()); !fit.ok()) {
    return std::vector<absl::StatusOr<SearchResult>>(queries.size(), fit);
  }
  std::vector<absl::StatusOr<PreparedQuery>> prepared;
  prepared.reserve(queries.size());
  std::vector<const PreparedQuery*> valid;
  std::vector<SearchContext> valid_contexts;
  for (size_t i = 0; i < queries.size(); ++i) {
    prepared.push_back(PreparedQuery::Prepare(index(), queries[i]));
    if (!prepared.back().ok()) continue;
    valid.push_back(&*prepared.back());
    if (contexts.size() == queries.size()) valid_contexts.push_back(contexts[i]);
  }
  if (contexts.size() != queries.size()) valid_contexts = contexts;  // one for all
  std::vector<absl::StatusOr<SearchResult>> answers = SearchBatch(valid, valid_contexts);
  std::vector<absl::StatusOr<SearchResult>> results;
  results.reserve(queries.size());
  size_t next = 0;
  for (const absl::StatusOr<PreparedQuery>& p : prepared) {
    if (!p.ok()) {
      results.push_back(p.status());
    } else if (next < answers.size()) {
      results.push_back(std::move(answers[next++]));
    } else {
      results.push_back(absl::InternalError("the engine answered fewer queries than it got"));
    }
  }
  return results;
}

}  // namespace tandem::index
