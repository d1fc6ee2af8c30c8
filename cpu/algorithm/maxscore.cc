// File: maxscore.cc
//
// MaxScore and block-max MaxScore (Turtle and Flood 1995; Chakrabarti et al. 2011; PISA's
// maxscore_query and block_max_maxscore_query).
#include <algorithm>
#include <numeric>
#include <vector>

#include "base/status_macros.h"
#include "cpu/algorithm/algorithms.h"

namespace tandem::cpu {

using index::QueryStats;
using index::SearchContext;

// Ranked OR by MaxScore. Terms are ordered by increasing bound; bound_sum[i] is the sum of the
// bounds of the i + 1 lowest. The lowest terms whose bound_sum stays at or below the k-th score
// are non-essential: a document in none of the other lists cannot enter the top k (a document
// scoring exactly the k-th score loses the docID tie, as it comes later). Every document that
// is kept is scored in query-term order, so its float score equals RunOr's. kBlockMax: the
// non-essential bounds of a candidate are those of the blocks that would hold it (block-max
// MaxScore), read before any of them is decoded.
template <bool kBlockMax>
absl::Status RunMaxScore(std::vector<TermScorer>& terms, const DocNorms& norm,
                         const SearchContext& ctx, TopK& top, QueryStats& stats) {
  const size_t n = terms.size();
  PerTerm<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return terms[a].max_score < terms[b].max_score; });
  PerTerm<float> bound_sum(n);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    sum += terms[order[i]].max_score;
    bound_sum[i] = sum * kBoundMargin;
  }
  PerTerm<float> block_sum(n);           // kBlockMax: bound_sum over the candidate's blocks
  PerTerm<float> contribution(n, 0.0f);  // by query-term position
  PerTerm<TermScorer*> by_bound(n);
  for (size_t i = 0; i < n; ++i) by_bound[i] = &terms[order[i]];
  size_t first_essential = 0;
  float threshold = top.threshold();
  uint32_t since_check = 0;
  // The next candidate: the lowest docID of the essential lists. The scoring pass below finds the
  // one after it; a change of the essential set recomputes it.
  auto lowest_essential = [&] {
    uint32_t d = Cursor::kEnd;
    for (size_t i = first_essential; i < n; ++i) d = std::min(d, by_bound[i]->cursor.docid());
    return d;
  };
  uint32_t doc = lowest_essential();
  while (true) {
    if (first_essential < n && bound_sum[first_essential] <= threshold) {
      while (first_essential < n && bound_sum[first_essential] <= threshold) ++first_essential;
      if (first_essential == n) break;  // no document left can enter the top k
      doc = lowest_essential();
    }
    if (doc == Cursor::kEnd) break;
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    const float dn = norm(doc);
    float partial = 0.0f;
    uint32_t next_doc = Cursor::kEnd;
    for (size_t i = first_essential; i < n; ++i) {
      TermScorer& t = *by_bound[i];
      float c = 0.0f;
      if (t.cursor.docid() == doc) {
        c = t.Score(t.cursor.freq(), dn);
        t.cursor.next();
        norm.Prefetch(t.cursor.docid_ahead(kNormPrefetchAhead));
      }
      next_doc = std::min(next_doc, t.cursor.docid());
      contribution[order[i]] = c;
      partial += c;
    }
    const uint32_t candidate = doc;
    doc = next_doc;
    const PerTerm<float>* bounds = &bound_sum;
    if constexpr (kBlockMax) {
      float block = 0.0f;
      for (size_t i = 0; i < first_essential; ++i) {
        TermScorer& t = *by_bound[i];
        t.cursor.block_max_next_geq(candidate);
        block += t.block_bound();
        block_sum[i] = block * kBoundMargin;
      }
      bounds = &block_sum;
    }
    // Non-essential terms from the highest bound down, while the document can still enter.
    bool pruned = false;
    for (size_t i = first_essential; i-- > 0;) {
      if ((partial + (*bounds)[i]) * kBoundMargin <= threshold) {
        pruned = true;
        break;
      }
      TermScorer& t = *by_bound[i];
      t.cursor.next_geq(candidate);
      float c = 0.0f;
      if (t.cursor.docid() == candidate) c = t.Score(t.cursor.freq(), dn);
      contribution[order[i]] = c;
      partial += c;
    }
    if (pruned) continue;
    // Adding a 0 for an absent term leaves a float sum unchanged, so this is RunOr's sum.
    float score = 0.0f;
    for (size_t q = 0; q < n; ++q) score += contribution[q];
    ++stats.documents_scored;
    top.Push(candidate, score);
    threshold = top.threshold();
  }
  return absl::OkStatus();
}

template absl::Status RunMaxScore<false>(std::vector<TermScorer>& terms, const DocNorms& norm,
                                         const SearchContext& ctx, TopK& top, QueryStats& stats);
template absl::Status RunMaxScore<true>(std::vector<TermScorer>& terms, const DocNorms& norm,
                                        const SearchContext& ctx, TopK& top, QueryStats& stats);

}  // namespace tandem::cpu
