// File: query_split.h
//
// The fixed split of a query log into a training set (for the cost model) and a disjoint evaluation
// set, as the paper draws 3,000 and 1,000 random queries (Ding et al. 2009, section 6). The split
// is a function of (pool size, seed, sizes) only, so every tool that names the same seed gets the
// same queries:
//
//   1. The pool is a list of candidate queries in file order; Tandem's tools use the queries with
//   at
//      least one term in the index (tandem-query-profile, the cost-model trainer).
//   2. A Fisher-Yates shuffle of the positions 0..pool-1 driven by SplitMix64(seed): for i from
//      pool-1 down to 1, swap position i with j = (x * (i + 1)) >> 64, x the next 64-bit output.
//   3. The first `train` shuffled positions are the training set, the next `eval` the evaluation
//      set; each is returned in increasing order (file order).
//
//   TANDEM_ASSIGN_OR_RETURN(QuerySplit split, SplitQueries(pool.size(), /*seed=*/1, 3000, 1000));
//   for (size_t i : split.eval) Run(pool[i]);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::workload {

inline constexpr uint64_t kDefaultSplitSeed = 1;
inline constexpr size_t kDefaultTrainQueries = 3000;
inline constexpr size_t kDefaultEvalQueries = 1000;

struct QuerySplit {
  std::vector<size_t> train;  // positions in the pool, increasing
  std::vector<size_t> eval;   // disjoint from train, increasing
};

// INVALID_ARGUMENT when train + eval exceeds the pool.
absl::StatusOr<QuerySplit> SplitQueries(size_t pool_size, uint64_t seed, size_t train, size_t eval);

enum class SplitPart { kAll, kTrain, kEval };

// "all", "train", "eval".
absl::StatusOr<SplitPart> ParseSplitPart(absl::string_view name);

}  // namespace tandem::workload
