// File: ranked_and.cc
//
// Ranked AND and block-max ranked AND (PISA's ranked_and_query and block_max_ranked_and_query).
#include <algorithm>
#include <numeric>
#include <vector>

#include "base/status_macros.h"
#include "cpu/algorithm/algorithms.h"

namespace tandem::cpu {

using index::QueryStats;
using index::SearchContext;

// Ranked AND. `order` lists the terms by increasing df; scores are summed in query-term order so
// every engine adds the same floats in the same order.
// With `block_max`, once k hits are kept, a candidate whose lists' block maxima sum to at most the
// k-th score is skipped along with every docID up to the end of the first of those blocks to end
// (each such document is bounded by the same blocks), and so on from there: the skip tables alone
// decide, and the lists are decoded only where the blocks could hold a hit.
// A filter is one more conjunct: a matching candidate the filter does not allow moves the lead
// to the filter's next document.
// Matches wait to be scored kAndScoreBatch at a time, with their frequencies read while the
// cursors stand on them and their norms prefetched: a match's norm is a cache miss, and scoring
// it at once would stall on it. The k-th score then lags by at most a batch, which only makes
// block-max skipping more cautious.
absl::Status RunAnd(std::vector<TermScorer>& terms, const DocNorms& norm, bool block_max,
                    const filter::DenseRows* filter, const SearchContext& ctx, TopK& top,
                    QueryStats& stats) {
  const size_t n = terms.size();
  uint32_t pending[kAndScoreBatch];  // matched docIDs, not yet scored
  size_t num_pending = 0;
  PerTerm<uint32_t, kAndScoreBatch * 4> pending_freqs(kAndScoreBatch * n);  // n per match
  // The decoded blocks' bounds as the cursors stood on each match (TermScorer::Checked).
  PerTerm<float, kAndScoreBatch * 4> pending_bounds(kAndScoreBatch * n);
  auto score_pending = [&] {
    for (size_t m = 0; m < num_pending; ++m) {
      const float dn = norm(pending[m]);
      const uint32_t* freqs = &pending_freqs[m * n];
      const float* bounds = &pending_bounds[m * n];
      float score = 0.0f;
      for (size_t i = 0; i < n; ++i) score += terms[i].Checked(freqs[i], dn, bounds[i]);
      top.Push(pending[m], score);
    }
    stats.documents_scored += num_pending;
    num_pending = 0;
  };
  PerTerm<size_t> order(terms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return terms[a].cursor.size() < terms[b].cursor.size();
  });
  Cursor& lead = terms[order[0]].cursor;
  uint32_t since_check = 0;
  // Candidates up to here lie in blocks whose summed maxima last passed the check. Checking them
  // again could only skip more as the k-th score grows; once per run of blocks keeps the cost low.
  int64_t checked_until = -1;
  uint32_t candidate = lead.docid();
  while (candidate != Cursor::kEnd) {
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    if (block_max && static_cast<int64_t>(candidate) > checked_until && top.full()) {
      // Walk the skip tables while the blocks at `target` cannot reach the k-th score.
      const float threshold = top.threshold();
      uint32_t target = candidate;
      while (target != Cursor::kEnd) {
        float bound = 0.0f;
        uint32_t blocks_end = Cursor::kEnd;
        for (TermScorer& t : terms) {
          t.cursor.block_max_next_geq(target);
          bound += t.block_bound();
          blocks_end = std::min(blocks_end, t.cursor.block_max_docid());
        }
        if (bound * kBoundMargin > threshold) {
          // These blocks may hold hits: candidates up to their end are not checked again.
          checked_until = blocks_end;
          break;
        }
        ++stats.block_max_skips;
        target = blocks_end == Cursor::kEnd ? Cursor::kEnd : blocks_end + 1;
      }
      if (target != candidate) {
        if (target == Cursor::kEnd) break;
        lead.next_geq(target);
        candidate = lead.docid();
        continue;
      }
    }
    bool match = true;
    for (size_t i = 1; i < n; ++i) {
      Cursor& c = terms[order[i]].cursor;
      c.next_geq(candidate);
      if (c.docid() != candidate) {
        match = false;
        candidate = c.docid();  // kEnd ends the loop
        break;
      }
    }
    if (match && filter != nullptr) {
      const uint32_t allowed = filter->NextGeq(candidate);
      if (allowed != candidate) {
        match = false;
        candidate = allowed == filter::DenseRows::kEnd ? Cursor::kEnd : allowed;
      }
    }
    if (!match) {
      if (candidate == Cursor::kEnd) break;
      lead.next_geq(candidate);
      candidate = lead.docid();
      continue;
    }
    norm.Prefetch(candidate);
    uint32_t* freqs = &pending_freqs[num_pending * n];
    float* bounds = &pending_bounds[num_pending * n];
    for (size_t i = 0; i < n; ++i) {
      freqs[i] = terms[i].cursor.freq();
      bounds[i] = terms[i].cursor.decoded_block_bound();
    }
    pending[num_pending++] = candidate;
    if (num_pending == kAndScoreBatch) score_pending();
    lead.next();
    candidate = lead.docid();
  }
  score_pending();
  return absl::OkStatus();
}

}  // namespace tandem::cpu
