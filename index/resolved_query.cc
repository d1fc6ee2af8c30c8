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

ResolvedQuery ResolveMergedQuery(const Index& index, const Query& query,
                                 const CollectionStatistics* collection) {
  ResolvedQuery resolved;
  resolved.mode = query.mode;
  resolved.k = query.k;
  resolved.bm25 = query.bm25;
  resolved.default_bm25 =
      query.bm25.k1 == index.manifest().bm25.k1 && query.bm25.b == index.manifest().bm25.b;
  resolved.avg_doc_length =
      collection != nullptr ? collection->avg_doc_length : index.avg_doc_length();
  resolved.stored_norms = resolved.default_bm25 && collection == nullptr;
  // Under a collection's statistics a stored ratio bound widens by at most this factor.
  const float length_factor =
      collection != nullptr ? std::max(1.0f, collection->avg_doc_length / index.avg_doc_length())
                            : 1.0f;
  resolved.num_distinct_terms = query.terms.size();
  resolved.terms.reserve(query.terms.size());
  for (size_t i = 0; i < query.terms.size(); ++i) {
    const QueryTerm& t = query.terms[i];
    std::optional<TermInfo> info = index.Lookup(t.term);
    if (!info) continue;
    ResolvedTerm& term = resolved.terms.emplace_back();
    term.info = *info;
    term.weight = t.weight;
    const float own_idf = index.Bm25TermIdf(*info);  // a shard's: the collection's N and df
    const float idf = collection != nullptr
                          ? Bm25Idf(collection->num_docs, std::max<uint64_t>(collection->dfs[i], 1))
                          : own_idf;
    term.weighted_idf = t.weight * idf;
    // The stored maximum is idf * max(tf / (tf + norm)) for the index's parameters and weight 1;
    // a value from other statistics cannot widen the ratio past 1.
    term.has_stored_bound = resolved.default_bm25 && own_idf > 0.0f;
    term.bound_ratio =
        term.has_stored_bound
            ? std::min(1.0f, std::clamp(info->max_score / own_idf, 0.0f, 1.0f) * length_factor)
            : 1.0f;
    term.block_bound_scale = term.has_stored_bound ? idf / own_idf * length_factor : 1.0f;
  }
  return resolved;
}

}  // namespace tandem::index
