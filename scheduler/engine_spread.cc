// File: engine_spread.cc
#include "scheduler/engine_spread.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem::scheduler {

absl::StatusOr<std::unique_ptr<EngineSpread>> EngineSpread::Create(
    std::vector<std::unique_ptr<const index::Engine>> engines) {
  if (engines.empty()) return absl::InvalidArgumentError("EngineSpread needs an engine");
  for (size_t i = 0; i < engines.size(); ++i) {
    if (engines[i] == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("EngineSpread: engine ", i, " is null"));
    }
    if (engines[i]->name() != engines[0]->name()) {
      return absl::InvalidArgumentError(absl::StrCat("EngineSpread: engine ", i, " is '",
                                                     engines[i]->name(), "', engine 0 is '",
                                                     engines[0]->name(), "'"));
    }
    if (&engines[i]->index() != &engines[0]->index()) {
      return absl::InvalidArgumentError(
          absl::StrCat("EngineSpread: engine ", i, " serves another index than engine 0"));
    }
  }
  return std::unique_ptr<EngineSpread>(new EngineSpread(std::move(engines)));
}

EngineSpread::EngineSpread(std::vector<std::unique_ptr<const index::Engine>> engines)
    : engines_(std::move(engines)), load_(new Load[engines_.size()]) {}

size_t EngineSpread::Acquire(size_t n) const {
  size_t best = 0;
  int64_t least = load_[0].in_flight.load(std::memory_order_relaxed);
  for (size_t i = 1; i < engines_.size(); ++i) {
    const int64_t load = load_[i].in_flight.load(std::memory_order_relaxed);
    if (load < least) {
      least = load;
      best = i;
    }
  }
  load_[best].in_flight.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  load_[best].given.fetch_add(n, std::memory_order_relaxed);
  return best;
}

absl::StatusOr<index::SearchResult> EngineSpread::Search(
    const index::PreparedQuery& query, const index::SearchContext& context) const {
  const size_t e = Acquire(1);
  absl::StatusOr<index::SearchResult> result = engines_[e]->Search(query, context);
  load_[e].in_flight.fetch_sub(1, std::memory_order_relaxed);
  return result;
}

std::vector<absl::StatusOr<index::SearchResult>> EngineSpread::SearchBatch(
    const std::vector<const index::PreparedQuery*>& queries,
    const std::vector<index::SearchContext>& contexts) const {
  const size_t e = Acquire(queries.size());
  std::vector<absl::StatusOr<index::SearchResult>> results =
      engines_[e]->SearchBatch(queries, contexts);
  load_[e].in_flight.fetch_sub(static_cast<int64_t>(queries.size()), std::memory_order_relaxed);
  return results;
}

std::vector<uint64_t> EngineSpread::queries_per_engine() const {
  std::vector<uint64_t> given;
  for (size_t i = 0; i < engines_.size(); ++i) {
    given.push_back(load_[i].given.load(std::memory_order_relaxed));
  }
  return given;
}

}  // namespace tandem::scheduler
