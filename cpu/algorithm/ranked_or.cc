// File: ranked_or.cc
//
// Exhaustive ranked OR: every posting scored; the reference the pruning algorithms are tested
// against.
#include <algorithm>
#include <numeric>
#include <vector>

#include "base/status_macros.h"
#include "cpu/algorithm/algorithms.h"

namespace tandem::cpu {

using index::QueryStats;
using index::SearchContext;

// Ranked exhaustive OR.
absl::Status RunOr(std::vector<TermScorer>& terms, const DocNorms& norm, const SearchContext& ctx,
                   TopK& top, QueryStats& stats) {
  auto min_docid = [&terms] {
    uint32_t m = Cursor::kEnd;
    for (const TermScorer& t : terms) m = std::min(m, t.cursor.docid());
    return m;
  };
  uint32_t since_check = 0;
  for (uint32_t doc = min_docid(); doc != Cursor::kEnd; doc = min_docid()) {
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    const float dn = norm(doc);
    float score = 0.0f;
    for (TermScorer& t : terms) {
      if (t.cursor.docid() == doc) {
        score += t.Score(t.cursor.freq(), dn);
        t.cursor.next();
        norm.Prefetch(t.cursor.docid_ahead(kNormPrefetchAhead));
      }
    }
    ++stats.documents_scored;
    top.Push(doc, score);
  }
  return absl::OkStatus();
}

}  // namespace tandem::cpu
