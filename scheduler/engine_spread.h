// File: engine_spread.h
//
// One engine over several equal engines: the same index on several GPUs of one node, each with its
// own device index cache and batch buffer (`tandem-server --gpus 0,1`). The scheduler sees one GPU
// engine with the devices' capacity together; each query (or batch) goes to the engine with the
// fewest queries in flight, so a device that answers faster gets more (Mitzenmacher's least-loaded
// choice, exact here: the counts are local). Answers are each engine's own, so they equal what one
// device gives.
//
//   std::vector<std::unique_ptr<const index::Engine>> per_device = ...;  // BatchingEngine each
//   TANDEM_ASSIGN_OR_RETURN(auto gpu, EngineSpread::Create(std::move(per_device)));
//   gpu->Search(query, context);  // on the least loaded device
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "index/engine.h"

namespace tandem::scheduler {

class EngineSpread final : public index::Engine {
 public:
  // INVALID_ARGUMENT for no engine, a null one, or engines of different names or indexes.
  static absl::StatusOr<std::unique_ptr<EngineSpread>> Create(
      std::vector<std::unique_ptr<const index::Engine>> engines);

  absl::string_view name() const override { return engines_[0]->name(); }
  const index::Index& index() const override { return engines_[0]->index(); }
  using index::Engine::Search;
  using index::Engine::SearchBatch;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& query,
                                             const index::SearchContext& context) const override;
  std::vector<absl::StatusOr<index::SearchResult>> SearchBatch(
      const std::vector<const index::PreparedQuery*>& queries,
      const std::vector<index::SearchContext>& contexts) const override;

  size_t size() const { return engines_.size(); }
  const index::Engine& engine(size_t i) const { return *engines_[i]; }
  // Queries each engine was given so far.
  std::vector<uint64_t> queries_per_engine() const;

 private:
  explicit EngineSpread(std::vector<std::unique_ptr<const index::Engine>> engines);
  // The engine with the fewest queries in flight (the lowest index among equals), its count
  // raised by `n`.
  size_t Acquire(size_t n) const;

  std::vector<std::unique_ptr<const index::Engine>> engines_;
  struct Load {
    std::atomic<int64_t> in_flight{0};
    std::atomic<uint64_t> given{0};
  };
  std::unique_ptr<Load[]> load_;
};

}  // namespace tandem::scheduler
