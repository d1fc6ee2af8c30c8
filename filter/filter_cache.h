// File: filter_cache.h
//
// The documents of recently used filters, each evaluated once on the index's attribute bitmaps
// and shared by every query that asks for it again: the same filter text or tree (by its
// canonical text, FilterToText) gets the same bitmap, which is also what lets the GPU
// engine keep the filter's bits on the device between queries. Least recently used out past a
// byte budget. Thread-safe.
//
//   FilterCache cache(index.attributes());
//   TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const Bitmap> docs, cache.Evaluate(filter));
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "filter/attribute_index.h"
#include "filter/bitmap.h"
#include "filter/filter.h"

namespace tandem::filter {

class FilterCache {
 public:
  // `attributes` null: the index stores none, and every filter is INVALID_ARGUMENT. `evaluate`
  // evaluates a filter not in the cache (EngineSet::filters: the CPU or the GPU); null:
  // EvaluateFilter on the CPU.
  explicit FilterCache(const AttributeIndex* attributes, FilterEvaluator evaluate = nullptr,
                       uint64_t budget_bytes = uint64_t{256} << 20)
      : attributes_(attributes), evaluate_(std::move(evaluate)), budget_bytes_(budget_bytes) {}

  // EvaluateFilter's answer and errors, from the cache when the filter was seen.
  absl::StatusOr<std::shared_ptr<const Bitmap>> Evaluate(const FilterNode& filter);

  uint64_t hits() const;
  uint64_t misses() const;

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Bitmap> docs;
    uint64_t bytes;
  };
  const AttributeIndex* attributes_;
  const FilterEvaluator evaluate_;
  const uint64_t budget_bytes_;
  mutable absl::Mutex mu_;
  std::list<Entry> entries_ ABSL_GUARDED_BY(mu_);  // most recently used first
  absl::flat_hash_map<std::string, std::list<Entry>::iterator> by_key_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tandem::filter
