#include "cpu/reference_engine.h"

#include <algorithm>
#include <map>
#include <vector>

#include "index/bm25.h"
#include "base/status_macros.h"

namespace tandem::cpu {

absl::StatusOr<index::SearchResult> ReferenceEngine::Search(
    const index::Query& query, const index::SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(index::ValidateQuery(query));
  std::vector<index::QueryTerm> terms = index::MergeRepeatedTerms(query.terms);
  // docid -> per-term contribution (NaN-free: absent terms contribute nothing).
  std::map<uint32_t, std::vector<std::pair<size_t, uint32_t>>> matches;
  std::vector<float> widf(terms.size(), 0.0f);
  size_t present = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    std::optional<index::TermInfo> info = index_.Lookup(terms[i].term);
    if (!info) continue;
    ++present;
    widf[i] = terms[i].weight * index::Bm25Idf(index_.num_docs(), info->df);
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView list, index_.postings(*info));
    std::vector<uint32_t> docs(index::kBlockSize), freqs(index::kBlockSize);
    for (uint32_t b = 0; b < list.num_blocks(); ++b) {
      TANDEM_RETURN_IF_ERROR(list.DecodeDocids(index_.codec(), b, docs.data()));
      TANDEM_RETURN_IF_ERROR(list.DecodeFreqs(index_.codec(), b, freqs.data()));
      for (uint32_t j = 0; j < list.block_postings(b); ++j) matches[docs[j]].push_back({i, freqs[j]});
    }
  }
  auto run = [&](bool conjunctive) {
    std::vector<index::Hit> hits;
    if (conjunctive && present < terms.size()) return hits;
    for (const auto& [doc, contributions] : matches) {
      if (conjunctive && contributions.size() != terms.size()) continue;
      const float norm = index::Bm25DocNorm(query.bm25, index_.doc_length(doc), index_.avg_doc_length());
      float score = 0.0f;
      for (const auto& [term, tf] : contributions) score += index::Bm25Score(widf[term], tf, norm);
      hits.push_back({doc, score});
    }
    std::sort(hits.begin(), hits.end(), index::RanksBefore);
    if (hits.size() > query.k) hits.resize(query.k);
    return hits;
  };
  index::SearchResult result;
  if (query.mode != index::QueryMode::kOr) {
    result.hits = run(true);
    result.stats.executed_mode = index::QueryMode::kAnd;
  }
  if (query.mode == index::QueryMode::kOr ||
      (query.mode == index::QueryMode::kAndOr && result.hits.size() < query.k)) {
    result.hits = run(false);
    result.stats.executed_mode = index::QueryMode::kOr;
  }
  return result;
}

}  // namespace tandem::cpu
