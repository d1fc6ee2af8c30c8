// File: engine.h
//
// The one interface every query engine implements, as faiss::gpu::GpuIndex derives from
// faiss::Index: cpu::DaatEngine and gpu::GpuEngine both answer a Query over the same Index. The
// scheduler and the server see only Engine. No CUDA types here.
//
//   std::unique_ptr<Engine> engine = ...;  // server::CreateEngines(index, options).cpu
//   absl::StatusOr<SearchResult> result = engine->Search(query, SearchContext{});
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "index/query.h"

namespace tandem::index {

class Engine {
 public:
  virtual ~Engine() = default;

  // "cpu" or "gpu"; reported in per-query stats and metrics labels.
  virtual absl::string_view name() const = 0;

  // Answers one query. Thread-safe: many threads call Search concurrently. Returns
  // INVALID_ARGUMENT for a query ValidateQuery rejects, DEADLINE_EXCEEDED / CANCELLED when the
  // context says stop, and DATA_LOSS / INTERNAL for damaged lists or engine faults.
  virtual absl::StatusOr<SearchResult> Search(const Query& query,
                                              const SearchContext& context) const = 0;

  // Answers several queries at once, each under its own context (contexts: one for all, or one per
  // query; INVALID_ARGUMENT for every query otherwise). The answers are those Search gives, in
  // order. Engines that gain from batches (gpu::GpuEngine, Ao et al. 2011) override it; this one
  // answers each query in turn.
  virtual std::vector<absl::StatusOr<SearchResult>> SearchBatch(
      const std::vector<Query>& queries, const std::vector<SearchContext>& contexts) const {
    std::vector<absl::StatusOr<SearchResult>> results;
    results.reserve(queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      if (contexts.size() != 1 && contexts.size() != queries.size()) {
        results.push_back(
            absl::InvalidArgumentError("SearchBatch needs one context, or one per query"));
      } else {
        results.push_back(Search(queries[i], contexts.size() == 1 ? contexts[0] : contexts[i]));
      }
    }
    return results;
  }

  // The work `query` adds to a batch, in postings (Ao et al.'s computational threshold: its
  // shortest list for an AND, all its lists for an OR), when SearchBatch answers it better together
  // with others; nothing when it runs alone (this engine: always).
  virtual std::optional<uint64_t> BatchWork(const Query& query) const {
    (void)query;
    return std::nullopt;
  }

  // Fraction (0..1) of the bytes of `query`'s posting lists already in this engine's working
  // memory: the GPU engine's device cache; 1 for engines that read the mapped index directly. A
  // feature of the scheduler's cost model (a cold list costs a host-to-device copy).
  virtual double ResidentFraction(const Query& query) const {
    (void)query;
    return 1.0;
  }
};

}  // namespace tandem::index
