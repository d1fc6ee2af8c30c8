#include "index/resolved_query.h"

#include <algorithm>
#include <optional>

#include "index/bm25.h"

namespace tandem::index {

ResolvedQuery ResolveQuery(const Index& index, const Query& query) {
  Query merged = query;
  merged.terms = MergeRepeatedTerms(query.terms);
  return ResolveMergedQuery(index, merged);
}

ResolvedQuery ResolveMergedQuery(const Index& index, const Query& query) {
  ResolvedQuery resolved;
  resolved.mode = query.mode;
  resolved.k = query.k;
  resolved.bm25 = query.bm25;
  resolved.default_bm25 =
      query.bm25.k1 == index.manifest().bm25.k1 && query.bm25.b == index.manifest().bm25.b;
  resolved.num_distinct_terms = query.terms.size();
  resolved.terms.reserve(query.terms.size());
  for (const QueryTerm& t : query.terms) {
    std::optional<TermInfo> info = index.Lookup(t.term);
    if (!info) continue;
    ResolvedTerm& term = resolved.terms.emplace_back();
    term.info = *info;
    term.weight = t.weight;
    const float idf = index.Bm25TermIdf(*info);  // a shard's: the collection's N and df
    term.weighted_idf = t.weight * idf;
    // The stored maximum is idf * max(tf / (tf + norm)) for the index's parameters and weight 1;
    // a value from other statistics cannot widen the ratio past 1.
    term.has_stored_bound = resolved.default_bm25 && idf > 0.0f;
    term.bound_ratio = term.has_stored_bound ? std::clamp(info->max_score / idf, 0.0f, 1.0f) : 1.0f;
  }
  return resolved;
}

}  // namespace tandem::index
