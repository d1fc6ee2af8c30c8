// File: daat_engine.h
//
// The CPU engine: document-at-a-time query processing over compressed lists (Ding et al. 2009,
// section 2, "List Intersection and DAAT Query Processing"). All query-term cursors advance
// together in docID order; only the blocks a cursor lands in are decoded.
//   AND     intersection led by the shortest list, next_geq on the others.
//   OR      MaxScore (Turtle and Flood 1995, as in PISA's maxscore_query): the terms whose summed
//           score bounds cannot lift a document above the current k-th score are non-essential;
//           candidates come from the essential lists only, and a candidate is dropped as soon as
//           its partial score plus the remaining bounds cannot beat the k-th score. Rank-safe:
//           the same hits and the same float scores as the exhaustive union (kExhaustive, every
//           posting scored), which the GPU engine computes.
//   AND+OR  AND; when it yields fewer than k hits, OR.
// BM25 as in index/bm25.h; per-document length norms precomputed for the index's default
// parameters. Top-k through index::TopK (ties: lower docID first). Search is const and thread-safe.
//
//   TANDEM_ASSIGN_OR_RETURN(auto engine, DaatEngine::Create(*index));
//   TANDEM_ASSIGN_OR_RETURN(SearchResult r, engine->Search(query, SearchContext{}));
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "index/engine.h"
#include "index/index.h"

namespace tandem::cpu {

enum class OrAlgorithm { kMaxScore, kExhaustive };

absl::string_view OrAlgorithmName(OrAlgorithm algorithm);  // "maxscore", "exhaustive"
// "maxscore" or "exhaustive"; INVALID_ARGUMENT naming the value otherwise.
absl::StatusOr<OrAlgorithm> ParseOrAlgorithm(absl::string_view name);

struct DaatEngineOptions {
  OrAlgorithm or_algorithm = OrAlgorithm::kMaxScore;  // OR and the OR pass of AND+OR
};

class DaatEngine : public index::Engine {
 public:
  // `index` must outlive the engine.
  static absl::StatusOr<std::unique_ptr<DaatEngine>> Create(const index::Index& index,
                                                            const DaatEngineOptions& options = {});

  absl::string_view name() const override { return "cpu"; }
  absl::StatusOr<index::SearchResult> Search(const index::Query& query,
                                             const index::SearchContext& context) const override;

 private:
  DaatEngine(const index::Index& index, const DaatEngineOptions& options)
      : index_(index), options_(options) {}

  const index::Index& index_;
  DaatEngineOptions options_;
};

}  // namespace tandem::cpu
