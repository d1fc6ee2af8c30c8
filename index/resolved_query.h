// File: resolved_query.h
//
// A query bound to one index: the step between a Query (terms and weights, as the caller wrote
// them) and an engine's scorers, as Tantivy's Query -> Weight -> Scorer. Every engine and the cost
// model start from it, so they agree on what a query means:
//   - repeated terms are one term with the summed weight (MergeRepeatedTerms), in first-occurrence
//     order, which is the order every engine sums a document's score in;
//   - each term is looked up once; a term the index lacks empties an AND and is ignored by an OR;
//   - each present term carries weight * idf and the bound of its tf / (tf + norm) ratio over its
//     list (the index's stored maximum for its own BM25 parameters, else 1) for dynamic pruning;
//   - an index that is one part of a larger collection (a live index's segment) may score with the
//     collection's statistics (CollectionStatistics): its scores are then those of one index over
//     the collection, and its stored bounds are widened to stay rank-safe under them.
//
//   const ResolvedQuery& q = prepared.resolved();  // index/prepared_query.h
//   if (q.runs_and()) ... AND over q.terms ...;
//   if (q.runs_or(and_hits)) ... OR over q.terms ...;
#pragma once

#include <cstddef>
#include <vector>

#include "index/index.h"
#include "index/query.h"

namespace tandem::index {

// The BM25 statistics of a collection of which the index is one part: N, the average document
// length and each query term's document frequency in the whole collection. A live index gives its
// segments the statistics of its live documents (live/snapshot.h).
struct CollectionStatistics {
  uint64_t num_docs = 0;
  float avg_doc_length = 1.0f;
  // One per term of the query, after MergeRepeatedTerms, in its order.
  std::vector<uint64_t> dfs;
};

struct ResolvedTerm {
  TermInfo info;              // the lexicon entry: document frequency, list location, stored bound
  float weight = 1.0f;        // the merged query weight
  float weighted_idf = 0.0f;  // weight * Index::Bm25TermIdf (a shard's: the collection's idf)
  // Upper bound of tf / (tf + norm) over the list when has_stored_bound: the index's stored maximum
  // contribution divided by idf, clamped to [0, 1]. Without a stored bound (the query's BM25
  // parameters are not the index's) the ratio is at most 1.
  float bound_ratio = 1.0f;
  bool has_stored_bound = false;
  // Turns the stored block maximum (the index's idf times its ratio bound, weight 1) into a bound
  // of idf times the ratio under the scoring statistics: 1 under the index's own; under a
  // collection's, idf_collection / idf_index times max(1, avgdl_collection / avgdl_index). The
  // ratio tf / (tf + k1 (1 - b + b dl / avgdl)) grows with avgdl by at most that factor (each norm
  // shrinks by at most avgdl_index / avgdl_collection), so the bound stays rank-safe.
  float block_bound_scale = 1.0f;
};

struct ResolvedQuery {
  QueryMode mode = QueryMode::kOr;
  uint32_t k = 10;
  Bm25Params bm25;
  std::vector<ResolvedTerm> terms;  // the terms the index holds, in query-term order
  size_t num_distinct_terms = 0;    // after merging repeats, absent terms included
  // The query's BM25 parameters are the index's: its precomputed document norms and the stored
  // score bounds apply.
  bool default_bm25 = true;
  // The average document length the norms use: the index's, or the collection's.
  float avg_doc_length = 1.0f;
  // The index's precomputed norms apply: its parameters and its own average length.
  bool stored_norms = true;

  size_t num_absent() const { return num_distinct_terms - terms.size(); }
  bool empty() const { return terms.empty(); }
  // Whether an AND pass runs: AND and AND+OR queries, unless a term is absent (nothing matches).
  bool runs_and() const { return mode != QueryMode::kOr && num_absent() == 0 && !empty(); }
  // Whether an OR pass runs after an AND pass that found `and_hits`: OR queries, and AND+OR ones
  // whose AND found fewer than k (Ding et al. 2009, section 8).
  bool runs_or(size_t and_hits) const {
    return !empty() && (mode == QueryMode::kOr || (mode == QueryMode::kAndOr && and_hits < k));
  }
  // The mode reported when no pass runs or before one does: kAnd for AND queries, else kOr.
  QueryMode initial_executed_mode() const {
    return mode == QueryMode::kAnd ? QueryMode::kAnd : QueryMode::kOr;
  }
};

// Merges repeated terms and looks each up in `index`. Does not validate `query` (ValidateQuery) and
// touches no posting list, so it cannot fail. PreparedQuery::Prepare is the one caller on the
// query path; tools and tests that want the lexicon lookups alone call it directly.
ResolvedQuery ResolveQuery(const Index& index, const Query& query);
// The same for a query whose repeated terms are already merged (MergeRepeatedTerms).
// `collection`, when given, holds the statistics to score with (one df per term of `query`).
ResolvedQuery ResolveMergedQuery(const Index& index, const Query& query,
                                 const CollectionStatistics* collection = nullptr);

}  // namespace tandem::index
