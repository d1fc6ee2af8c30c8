// File: prepared_query.cc
#include "index/prepared_query.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace tandem::index {

absl::StatusOr<PreparedQuery> PreparedQuery::Prepare(const Index& index, Query query,
                                                     const CollectionStatistics* collection) {
  // Merged first, so that the checks see the weights the engines score with.
  query.terms = MergeRepeatedTerms(query.terms);
  TANDEM_RETURN_IF_ERROR(ValidateQuery(query));
  TANDEM_RETURN_IF_ERROR(ValidateQueryFilter(query, index.num_docs()));
  if (collection != nullptr && collection->dfs.size() != query.terms.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("collection statistics give ", collection->dfs.size(),
                     " document frequencies for a query of ", query.terms.size(), " terms"));
  }
  ResolvedQuery resolved = ResolveMergedQuery(index, query, collection);
  return PreparedQuery(index, std::move(query), std::move(resolved));
}

absl::Status PreparedQuery::CheckPreparedFor(const Index& index) const {
  if (index_ == &index) return absl::OkStatus();
  return absl::InvalidArgumentError(
      "the query was prepared against another index than the engine's");
}

PreparedQuery::PreparedQuery(const Index& index, Query query, ResolvedQuery resolved)
    : index_(&index), query_(std::move(query)), resolved_(std::move(resolved)) {
  uint64_t shortest = UINT64_MAX;
  for (const ResolvedTerm& t : resolved_.terms) {
    postings_ += t.info.df;
    shortest = std::min<uint64_t>(shortest, t.info.df);
  }
  if (resolved_.runs_and()) {
    pass_postings_ = shortest;
  } else if (resolved_.runs_or(0)) {
    pass_postings_ = postings_;
  }
}

}  // namespace tandem::index
