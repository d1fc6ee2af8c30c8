// File: wand.cc
//
// WAND and block-max WAND (Broder et al. 2003; Ding and Suel 2011; PISA's wand_query and
// block_max_wand_query).
#include <algorithm>
#include <numeric>
#include <vector>

#include "base/status_macros.h"
#include "cpu/algorithm/algorithms.h"

namespace tandem::cpu {

using index::QueryStats;
using index::SearchContext;

// Ranked OR by WAND (Broder et al. 2003) and, with kBlockMax, by block-max WAND (Ding and Suel
// 2011, Algorithm 2 with PISA's choice of the list to move). `sorted` orders the lists by current
// docID. The pivot is the first list at which the summed list bounds exceed the k-th score, widened
// to every list on the pivot's docID; no document below the pivot's docID can enter the top k, as
// the lists holding it have bounds summing to at most the k-th score, and that sum only shrinks
// as they move on while the k-th score only grows.
template <bool kBlockMax>
absl::Status RunWand(std::vector<TermScorer>& terms, const DocNorms& norm, const SearchContext& ctx,
                     TopK& top, QueryStats& stats) {
  const size_t n = terms.size();
  PerTerm<TermScorer*> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = &terms[i];
  auto by_docid = [](const TermScorer* a, const TermScorer* b) {
    return a->cursor.docid() < b->cursor.docid();
  };
  std::sort(sorted.begin(), sorted.end(), by_docid);
  // Restores the order after sorted[i] moved forward.
  auto sink = [&](size_t i) {
    for (; i + 1 < n && sorted[i + 1]->cursor.docid() < sorted[i]->cursor.docid(); ++i) {
      std::swap(sorted[i], sorted[i + 1]);
    }
  };
  float threshold = top.threshold();
  uint32_t since_check = 0;
  while (true) {
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    float bound = 0.0f;
    size_t pivot = n;
    for (size_t i = 0; i < n && sorted[i]->cursor.docid() != Cursor::kEnd; ++i) {
      bound += sorted[i]->max_score;
      if (bound * kBoundMargin > threshold) {
        pivot = i;
        break;
      }
    }
    if (pivot == n) break;  // no document left can enter the top k
    const uint32_t pivot_doc = sorted[pivot]->cursor.docid();
    while (pivot + 1 < n && sorted[pivot + 1]->cursor.docid() == pivot_doc) ++pivot;

    if constexpr (kBlockMax) {
      float block = 0.0f;
      for (size_t i = 0; i <= pivot; ++i) {
        sorted[i]->cursor.block_max_next_geq(pivot_doc);
        block += sorted[i]->block_bound();
      }
      if (block * kBoundMargin <= threshold) {
        // Every document from the pivot's docID to the end of the first of these blocks to end
        // (and before the next list's docID) holds only these lists, each within its block.
        uint32_t next = Cursor::kEnd;
        size_t move = pivot;  // the list with the highest bound moves: it skips the most
        for (size_t i = 0; i <= pivot; ++i) {
          next = std::min(next, sorted[i]->cursor.block_max_docid());
          if (sorted[i]->max_score > sorted[move]->max_score) move = i;
        }
        next = next == Cursor::kEnd ? Cursor::kEnd : next + 1;
        if (pivot + 1 < n) next = std::min(next, sorted[pivot + 1]->cursor.docid());
        next = std::max(next, pivot_doc + 1);
        ++stats.block_max_skips;
        sorted[move]->cursor.next_geq(next);
        sink(move);
        continue;
      }
    }
    // Scored now or, after a list moves up to it, soon. Block-max WAND has skipped most pivots on
    // their blocks' bounds alone by here, without loading their norms.
    norm.Prefetch(pivot_doc);

    if (sorted[0]->cursor.docid() == pivot_doc) {
      // Every list holding pivot_doc stands on it; sum in query-term order as RunOr does.
      const float dn = norm(pivot_doc);
      float score = 0.0f;
      for (TermScorer& t : terms) {
        if (t.cursor.docid() == pivot_doc) {
          score += t.Score(t.cursor.freq(), dn);
        }
      }
      ++stats.documents_scored;
      top.Push(pivot_doc, score);
      threshold = top.threshold();
      for (size_t i = 0; i <= pivot; ++i) {
        sorted[i]->cursor.next();
        // The pivot's own prefetch comes too late when it is scored at once; these lists' coming
        // postings are where the next pivots are most likely to stand.
        norm.Prefetch(sorted[i]->cursor.docid_ahead(kNormPrefetchAhead));
      }
      std::sort(sorted.begin(), sorted.end(), by_docid);
    } else {
      // Move the last list before those on pivot_doc up to it.
      size_t i = pivot;
      while (sorted[i]->cursor.docid() == pivot_doc) --i;
      sorted[i]->cursor.next_geq(pivot_doc);
      sink(i);
    }
  }
  return absl::OkStatus();
}

template absl::Status RunWand<false>(std::vector<TermScorer>& terms, const DocNorms& norm,
                                     const SearchContext& ctx, TopK& top, QueryStats& stats);
template absl::Status RunWand<true>(std::vector<TermScorer>& terms, const DocNorms& norm,
                                    const SearchContext& ctx, TopK& top, QueryStats& stats);

}  // namespace tandem::cpu
