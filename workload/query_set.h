// File: query_set.h
//
// A query log read for running against an index: LoadQueryFile (index/query_file.h) gives the
// records, the index's Analyzer turns each text into the terms an engine receives. Works for every
// log under ../shared/data/queries/ (TREC 2005 and 2006 efficiency, MS MARCO dev small, Million
// Query 2007-2009) and for the same files from their official homes.
//
//   TANDEM_ASSIGN_OR_RETURN(std::vector<AnalyzedQuery> queries,
//                           LoadQuerySet("trec05-efficiency.txt", index->analyzer()));
//   for (const AnalyzedQuery& q : queries) Run(q.id, DistinctTerms(q.terms));
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "index/analyzer.h"
#include "index/index.h"
#include "workload/query_file.h"
#include "workload/query_split.h"

namespace tandem::workload {

struct AnalyzedQuery {
  std::string id;
  std::string text;                // UTF-8, as in the file
  std::vector<std::string> terms;  // analyzed, in text order, repeats kept (they weigh in BM25)
};

// Reads `path` with LoadQueryFile and analyzes every query; queries whose text has no term left
// (empty, or stop words only) are kept with empty `terms`, so positions match the file.
absl::StatusOr<std::vector<AnalyzedQuery>> LoadQuerySet(
    const std::string& path, const index::Analyzer& analyzer,
    QueryFileFormat format = QueryFileFormat::kAuto);

// What the benchmarks run: the pool (the queries with at least one term `index` holds, in file
// order), then `part` of its seeded split (SplitQueries(pool, seed, train, eval); kAll: the whole
// pool), then the first `limit` of those (0: all). INVALID_ARGUMENT when the split does not fit.
struct QuerySelection {
  SplitPart part = SplitPart::kEval;
  uint64_t seed = kDefaultSplitSeed;
  size_t train = kDefaultTrainQueries;
  size_t eval = kDefaultEvalQueries;
  size_t limit = 0;
};
absl::StatusOr<std::vector<AnalyzedQuery>> SelectQueries(std::vector<AnalyzedQuery> queries,
                                                         const index::Index& index,
                                                         const QuerySelection& selection);
// The same from the query log at `path`, analyzed with the index's analyzer (LoadQuerySet).
absl::StatusOr<std::vector<AnalyzedQuery>> SelectQueries(const std::string& path,
                                                         const index::Index& index,
                                                         const QuerySelection& selection);

// The distinct terms of `terms`, in first-occurrence order.
std::vector<std::string> DistinctTerms(const std::vector<std::string>& terms);

}  // namespace tandem::workload
