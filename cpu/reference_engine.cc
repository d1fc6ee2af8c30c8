#include "cpu/reference_engine.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "base/status_macros.h"
#include "index/bm25.h"

namespace tandem::cpu {

absl::StatusOr<index::SearchResult> ReferenceEngine::Search(
    const index::PreparedQuery& prepared, const index::SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(prepared.CheckPreparedFor(index_));
  const index::Query& query = prepared.query();
  const index::ResolvedQuery& resolved = prepared.resolved();
  std::set<uint32_t> allowed;  // the filter's documents, when there is one
  if (query.filter != nullptr) {
    for (uint32_t d : query.filter->Rows()) allowed.insert(d);
  }
  // docid -> (term position in resolved.terms, tf) for every term whose list holds it.
  std::map<uint32_t, std::vector<std::pair<size_t, uint32_t>>> matches;
  for (size_t i = 0; i < resolved.terms.size(); ++i) {
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView list, index_.postings(resolved.terms[i].info));
    std::vector<uint32_t> docs(index::kBlockSize), freqs(index::kBlockSize);
    for (uint32_t b = 0; b < list.num_blocks(); ++b) {
      TANDEM_RETURN_IF_ERROR(list.DecodeDocids(index_.codec(), b, docs.data()));
      TANDEM_RETURN_IF_ERROR(list.DecodeFreqs(index_.codec(), b, freqs.data()));
      for (uint32_t j = 0; j < list.block_postings(b); ++j)
        matches[docs[j]].push_back({i, freqs[j]});
    }
  }
  auto run = [&](bool conjunctive) {
    std::vector<index::Hit> hits;
    for (const auto& [doc, contributions] : matches) {
      if (conjunctive && contributions.size() != resolved.num_distinct_terms) continue;
      if (query.filter != nullptr && !allowed.contains(doc)) continue;
      const float norm =
          index::Bm25DocNorm(query.bm25, index_.doc_length(doc), index_.avg_doc_length());
      float score = 0.0f;
      for (const auto& [term, tf] : contributions) {
        score += index::Bm25Score(resolved.terms[term].weighted_idf, tf, norm);
      }
      hits.push_back({doc, score});
    }
    std::sort(hits.begin(), hits.end(), index::RanksBefore);
    if (hits.size() > query.k) hits.resize(query.k);
    return hits;
  };
  index::SearchResult result;
  result.stats.executed_mode = resolved.initial_executed_mode();
  if (resolved.runs_and()) {
    result.hits = run(true);
    result.stats.executed_mode = index::QueryMode::kAnd;
  }
  if (resolved.runs_or(result.hits.size())) {
    result.hits = run(false);
    result.stats.executed_mode = index::QueryMode::kOr;
  }
  return result;
}

}  // namespace tandem::cpu
