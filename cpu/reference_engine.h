// File: reference_engine.h
//
// The brute-force reference engine, the oracle of the engine tests and of the CPU benchmark's
// checks: decodes every posting of every query term, scores with index/bm25.h (terms summed in
// query order, as the engines do), and sorts all candidates. No skipping, no heap: obviously right,
// deliberately slow.
#pragma once

#include "index/engine.h"
#include "index/index.h"

namespace tandem::cpu {

class ReferenceEngine : public index::Engine {
 public:
  explicit ReferenceEngine(const index::Index& index) : index_(index) {}
  absl::string_view name() const override { return "reference"; }
  const index::Index& index() const override { return index_; }
  using index::Engine::Search;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& prepared,
                                             const index::SearchContext& context) const override;

 private:
  const index::Index& index_;
};

}  // namespace tandem::cpu
