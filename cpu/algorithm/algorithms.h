// File: algorithms.h
//
// The CPU engine's query algorithms, one file each as PISA's query/algorithm/: ranked AND
// (ranked_and.cc), exhaustive OR (ranked_or.cc), MaxScore (maxscore.cc) and WAND (wand.cc), the
// last two with their block-max variants. Each runs over the query's TermScorers, pushes the
// documents it scores into `top` and counts its work in `stats`; every one sums a document's
// score in query-term order, so all return the same floats. DaatEngine picks one (daat_engine.h
// says which does what); nothing else calls them.
#pragma once

#include <vector>

#include "absl/status/status.h"
#include "cpu/algorithm/term_scorer.h"
#include "cpu/top_k.h"
#include "filter/bitmap.h"
#include "index/query.h"

namespace tandem::cpu {

// Ranked AND; with `block_max`, block-max ranked AND. `filter` (null: none) is one more conjunct.
absl::Status RunAnd(std::vector<TermScorer>& terms, const DocNorms& norm, bool block_max,
                    const filter::DenseRows* filter, const index::SearchContext& ctx, TopK& top,
                    index::QueryStats& stats);

// Exhaustive ranked OR: every posting of every list scored.
absl::Status RunOr(std::vector<TermScorer>& terms, const DocNorms& norm,
                   const index::SearchContext& ctx, TopK& top, index::QueryStats& stats);

// MaxScore; kBlockMax: block-max MaxScore.
template <bool kBlockMax>
absl::Status RunMaxScore(std::vector<TermScorer>& terms, const DocNorms& norm,
                         const index::SearchContext& ctx, TopK& top, index::QueryStats& stats);

// WAND; kBlockMax: block-max WAND.
template <bool kBlockMax>
absl::Status RunWand(std::vector<TermScorer>& terms, const DocNorms& norm,
                     const index::SearchContext& ctx, TopK& top, index::QueryStats& stats);

}  // namespace tandem::cpu
