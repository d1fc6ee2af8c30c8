// File: daat_engine.h
//
// The CPU engine: document-at-a-time query processing over compressed lists (Ding et al. 2009,
// section 2, "List Intersection and DAAT Query Processing"). All query-term cursors advance together in
// docID order; only the blocks a cursor lands in are decoded.
//   AND     intersection led by the shortest list, next_geq on the others.
//   OR      exhaustive union (every posting of every term is scored).
//   AND+OR  AND; when it yields fewer than k hits, OR.
// BM25 as in index/bm25.h; per-document length norms precomputed for the index's default parameters.
// Top-k through index::TopK (ties: lower docID first). Search is const and thread-safe.
//
//   TANDEM_ASSIGN_OR_RETURN(auto engine, DaatEngine::Create(*index));
//   TANDEM_ASSIGN_OR_RETURN(SearchResult r, engine->Search(query, SearchContext{}));
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "index/engine.h"
#include "index/index.h"

namespace tandem::cpu {

class DaatEngine : public index::Engine {
 public:
  // `index` must outlive the engine.
  static absl::StatusOr<std::unique_ptr<DaatEngine>> Create(const index::Index& index);

  absl::string_view name() const override { return "cpu"; }
  absl::StatusOr<index::SearchResult> Search(const index::Query& query,
                                             const index::SearchContext& context) const override;

 private:
  explicit DaatEngine(const index::Index& index) : index_(index) {}

  const index::Index& index_;
};

}  // namespace tandem::cpu
