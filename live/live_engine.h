// File: live_engine.h
//
// The CPU engine of a node whose index takes writes: each query runs on the live index's snapshot
// of the moment (LiveIndex::snapshot) and its result names that snapshot as its document table,
// so that the node resolves the hits' docIDs there. Queries are prepared against the index the
// node opened (its analyzer and lexicon); the snapshot resolves them again per segment.
//
//   auto engine = std::make_unique<LiveEngine>(live, base_index);
//   engine->Search(prepared, context);
#pragma once

#include <memory>

#include "index/engine.h"
#include "live/live_index.h"

namespace tandem::live {

class LiveEngine : public index::Engine {
 public:
  // `base` (the index the node opened, whose analyzer the segments share) must outlive the engine.
  LiveEngine(std::shared_ptr<LiveIndex> live, const index::Index& base)
      : live_(std::move(live)), base_(base) {}

  absl::string_view name() const override { return "cpu"; }
  const index::Index& index() const override { return base_; }
  using index::Engine::Search;
  using index::Engine::SearchBatch;
  // Once the index has taken writes a filter is evaluated per segment from its expression
  // (Query::filter_expression); a bare bitmap is FAILED_PRECONDITION.
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& query,
                                             const index::SearchContext& context) const override;

  const std::shared_ptr<LiveIndex>& live() const { return live_; }

 private:
  std::shared_ptr<LiveIndex> live_;
  const index::Index& base_;
};

}  // namespace tandem::live
