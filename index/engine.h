// File: engine.h
//
// The one interface every query engine implements, as faiss::gpu::GpuIndex derives from
// faiss::Index: cpu::DaatEngine and gpu::GpuEngine both answer a PreparedQuery over the same
// Index. The scheduler and the server see only Engine. No CUDA types here.
//
//   std::unique_ptr<Engine> engine = ...;  // server::CreateEngines(index, options).cpu
//   TANDEM_ASSIGN_OR_RETURN(PreparedQuery q, PreparedQuery::Prepare(engine->index(), query));
//   absl::StatusOr<SearchResult> result = engine->Search(q, SearchContext{});
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "index/index.h"
#include "index/prepared_query.h"
#include "index/query.h"

namespace tandem::index {

// INVALID_ARGUMENT unless a batch of `queries` has one context for all, or one per query.
absl::Status CheckBatchContexts(size_t queries, size_t contexts);

class Engine {
 public:
  virtual ~Engine() = default;

  // "cpu" or "gpu"; reported in per-query stats and metrics labels.
  virtual absl::string_view name() const = 0;

  // The index this engine answers over: queries are prepared against it.
  virtual const Index& index() const = 0;

  // Answers one prepared query. Thread-safe: many threads call Search concurrently. Returns
  // INVALID_ARGUMENT for a query prepared against another index, DEADLINE_EXCEEDED / CANCELLED
  // when the context says stop, and DATA_LOSS / INTERNAL for damaged lists or engine faults.
  virtual absl::StatusOr<SearchResult> Search(const PreparedQuery& query,
                                              const SearchContext& context) const = 0;

  // Answers several queries at once, each under its own context (contexts: one for all, or one per
  // query; INVALID_ARGUMENT for every query otherwise). The answers are those Search gives, in
  // order. Engines that gain from batches (gpu::GpuEngine, Ao et al. 2011) override it; this one
  // answers each query in turn.
  virtual std::vector<absl::StatusOr<SearchResult>> SearchBatch(
      const std::vector<const PreparedQuery*>& queries,
      const std::vector<SearchContext>& contexts) const;

  // Prepares `query` against index() and answers it: for callers that hold a plain Query (tools,
  // tests). INVALID_ARGUMENT for a query PreparedQuery::Prepare refuses. An engine that overrides
  // the virtuals above declares `using index::Engine::Search;` (and SearchBatch) to keep these.
  absl::StatusOr<SearchResult> Search(const Query& query, const SearchContext& context) const;
  // Likewise for several; a query that cannot be prepared gets its error, the others their answer.
  std::vector<absl::StatusOr<SearchResult>> SearchBatch(
      const std::vector<Query>& queries, const std::vector<SearchContext>& contexts) const;
};

}  // namespace tandem::index
