// File: prepared_query.h
//
// A query made ready once, at admission, for every stage after it, as Triton's
// InferenceRequest::PrepareForInference normalizes a request once: validated (ValidateQuery and,
// against the index, ValidateQueryFilter), its repeated terms merged, and its terms looked up in
// the index it will run on (ResolvedQuery). The cost model, the scheduler, the batch buffer and
// the engines read this one object; none of them validates, merges or looks up a term again.
// It also answers what the scheduler asks of a query's size, from its resolved lists alone.
//
//   TANDEM_ASSIGN_OR_RETURN(PreparedQuery prepared, PreparedQuery::Prepare(index, query));
//   engine.Search(prepared, context);  // an engine over `index`
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "index/index.h"
#include "index/query.h"
#include "index/resolved_query.h"

namespace tandem::index {

class PreparedQuery {
 public:
  // INVALID_ARGUMENT naming the field for what ValidateQuery or ValidateQueryFilter (against
  // `index`'s documents) rejects. `index` must outlive the prepared query. `collection`, when
  // given, holds the statistics to score with (ResolveMergedQuery): one df per term of the query
  // after MergeRepeatedTerms.
  static absl::StatusOr<PreparedQuery> Prepare(const Index& index, Query query,
                                               const CollectionStatistics* collection = nullptr);

  // The query, its repeated terms merged (first-occurrence order, summed weights).
  const Query& query() const { return query_; }
  // Its terms as `index()` holds them.
  const ResolvedQuery& resolved() const { return resolved_; }
  const Index& index() const { return *index_; }
  // INVALID_ARGUMENT unless it was prepared against `index`: an engine answers only queries
  // prepared against its own index.
  absl::Status CheckPreparedFor(const Index& index) const;

  // The postings its lists hold (the terms `index()` has).
  uint64_t postings() const { return postings_; }
  // The postings its first pass reads, Ao et al.'s measure of a query's work (2011, section 3.1):
  // its shortest list when an AND pass runs (the intersection reads no more of the others), else
  // all of its lists. 0 when no pass runs.
  uint64_t pass_postings() const { return pass_postings_; }

 private:
  PreparedQuery(const Index& index, Query query, ResolvedQuery resolved);

  const Index* index_;
  Query query_;
  ResolvedQuery resolved_;
  uint64_t postings_ = 0;
  uint64_t pass_postings_ = 0;
};

}  // namespace tandem::index
