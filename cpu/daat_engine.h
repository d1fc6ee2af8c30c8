// File: daat_engine.h
//
// The CPU engine: document-at-a-time query processing over compressed lists (Ding et al. 2009,
// section 2, "List Intersection and DAAT Query Processing"). All query-term cursors advance
// together in docID order; only the blocks a cursor lands in are decoded.
//   AND     intersection led by the shortest list, next_geq on the others. Once k hits are
//           kept, a candidate whose lists' block maxima sum to no more than the k-th score is
//           skipped with every docID up to the end of the first of those blocks, before anything
//           is decoded (block-max ranked AND).
//   OR      one of (OrAlgorithm):
//           - MaxScore (Turtle and Flood 1995, as in PISA's maxscore_query): the terms whose
//             summed score bounds cannot lift a document above the current k-th score are
//             non-essential; candidates come from the essential lists only, and a candidate is
//             dropped as soon as its partial score plus the remaining bounds cannot beat the k-th
//             score.
//           - Block-max MaxScore (Chakrabarti et al. 2011; PISA's block_max_maxscore_query):
//             MaxScore whose non-essential bounds are the maxima of the blocks holding the
//             candidate, read from the skip table before any of those blocks is decoded.
//           - WAND (Broder et al. 2003, section 3): cursors sorted by docID; the pivot is the first
//             list at which the summed list bounds exceed the k-th score, and a document is scored
//             only when every list before the pivot stands on it.
//           - Block-max WAND (Ding and Suel 2011, section 4; PISA's block_max_wand_query): WAND
//             whose pivot is checked against the block maxima at the pivot's docID; when they
//             cannot beat the k-th score, the cursors skip to the end of the nearest block.
//           - Exhaustive: every posting scored, the reference the others are tested against.
//           All are rank-safe: the same hits and the same float scores as the exhaustive union,
//           which the GPU engine computes.
//   AND+OR  AND; when it yields fewer than k hits, OR.
// BM25 as in index/bm25.h; per-document length norms precomputed for the index's default
// parameters. Top-k through index::TopK (ties: lower docID first). Search is const and thread-safe.
//
//   TANDEM_ASSIGN_OR_RETURN(auto engine, DaatEngine::Create(*index));
//   TANDEM_ASSIGN_OR_RETURN(SearchResult r, engine->Search(prepared, SearchContext{}));
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "filter/bitmap.h"
#include "index/engine.h"
#include "index/index.h"
#include "index/prepared_query.h"

namespace tandem::cpu {

enum class OrAlgorithm { kMaxScore, kBlockMaxMaxScore, kWand, kBlockMaxWand, kExhaustive };

// "maxscore", "block-max-maxscore", "wand", "block-max-wand", "exhaustive".
absl::string_view OrAlgorithmName(OrAlgorithm algorithm);
// The names above; INVALID_ARGUMENT naming the value and the choices otherwise.
absl::StatusOr<OrAlgorithm> ParseOrAlgorithm(absl::string_view name);
// Every algorithm, in the order above.
std::vector<OrAlgorithm> AllOrAlgorithms();
// For absl flags (tandem-server's --cpu-or).
bool AbslParseFlag(absl::string_view text, OrAlgorithm* algorithm, std::string* error);
std::string AbslUnparseFlag(OrAlgorithm algorithm);

struct DaatEngineOptions {
  // OR and the OR pass of AND+OR. MaxScore and block-max MaxScore are within 5% of each other on
  // the 25M-document workload and on Wikipedia, the others slower; MaxScore is the faster on
  // Wikipedia and, on the development machine, on the 25M workload
  // (bench/results/cpu_vs_pisa.json).
  OrAlgorithm or_algorithm = OrAlgorithm::kMaxScore;
  bool block_max_and = true;  // block-max skipping in ranked AND
  // Multiplies every score bound the pruning uses. 1 in production; tests set it below 1 to show
  // that an unsafe bound changes the answers.
  float bound_scale_for_testing = 1.0f;
};

class DaatEngine : public index::Engine {
 public:
  // `index` must outlive the engine.
  static absl::StatusOr<std::unique_ptr<DaatEngine>> Create(const index::Index& index,
                                                            const DaatEngineOptions& options = {});

  absl::string_view name() const override { return "cpu"; }
  const index::Index& index() const override { return index_; }
  using index::Engine::Search;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& query,
                                             const index::SearchContext& context) const override;

 private:
  // A query's filter as DenseRows (one bit per document: constant-time tests at every candidate),
  // kept for the next query with the same filter bitmap (the server hands out one per distinct
  // filter): least recently used out past kFilterRowsEntries, num_docs / 8 bytes each.
  static constexpr size_t kFilterRowsEntries = 16;
  std::shared_ptr<const filter::DenseRows> FilterRows(
      const std::shared_ptr<const filter::Bitmap>& filter) const;

  DaatEngine(const index::Index& index, const DaatEngineOptions& options)
      : index_(index), options_(options) {}

  const index::Index& index_;
  DaatEngineOptions options_;
  mutable std::mutex filter_rows_mu_;
  mutable std::list<
      std::pair<std::weak_ptr<const filter::Bitmap>, std::shared_ptr<const filter::DenseRows>>>
      filter_rows_;  // most recently used first
};

}  // namespace tandem::cpu
