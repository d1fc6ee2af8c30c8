// File: live_engine.h
//
// The engines of a node whose index takes writes: each query runs on the live index's snapshot of
// the moment (LiveIndex::snapshot) and its result names that snapshot as its document table, so
// that the node resolves the hits' docIDs there. Queries are prepared against the index the node
// opened (its analyzer and lexicon); the snapshot resolves them again per segment. The CPU engine
// searches every segment on the CPU; the device engine searches the segments that have a device
// engine there (the opened index's own, the node's GPU engine with its batch buffer, and those of
// merged segments large enough: DeviceEngines) and the small fresh ones on the CPU.
//
//   auto cpu = std::make_unique<LiveEngine>(live, base_index);
//   auto gpu = std::make_unique<LiveEngine>(live, base_index, LiveEngine::Where::kDevice);
//   gpu->Search(prepared, context);
#pragma once

#include <memory>
#include <vector>

#include "index/engine.h"
#include "live/live_index.h"

namespace tandem::live {

class LiveEngine : public index::Engine {
 public:
  enum class Where { kCpu, kDevice };
  // `base` (the index the node opened, whose analyzer the segments share) must outlive the engine.
  LiveEngine(std::shared_ptr<LiveIndex> live, const index::Index& base, Where where = Where::kCpu)
      : live_(std::move(live)), base_(base), where_(where) {}

  absl::string_view name() const override { return where_ == Where::kCpu ? "cpu" : "gpu"; }
  const index::Index& index() const override { return base_; }
  using index::Engine::Search;
  using index::Engine::SearchBatch;
  // Once the index has taken writes a filter is evaluated per segment from its expression
  // (Query::filter_expression); a bare bitmap is FAILED_PRECONDITION.
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& query,
                                             const index::SearchContext& context) const override;
  // The queries on one snapshot, each segment answering them together (Snapshot::SearchBatch).
  std::vector<absl::StatusOr<index::SearchResult>> SearchBatch(
      const std::vector<const index::PreparedQuery*>& queries,
      const std::vector<index::SearchContext>& contexts) const override;

  const std::shared_ptr<LiveIndex>& live() const { return live_; }

 private:
  std::shared_ptr<LiveIndex> live_;
  const index::Index& base_;
  Where where_;
};

}  // namespace tandem::live
