// File: filter_cache.h
//
// The documents of recently used filters, each evaluated once on the index's attribute bitmaps
// and shared by every query that asks for it again: the same filter text or tree (by its
// canonical text, FilterToText) gets the same bitmap, which is also what lets the GPU
// engine keep the filter's bits on the device between queries. Least recently used out past a
// byte budget (--filter-cache-bytes). Thread-safe.
//
// The bytes counted for an entry are what it holds in memory: its key (kept once), its bitmap's
// words as allocated, and the bookkeeping of the list, the map and the allocator around them, so
// that the budget bounds the cache's resident size. With a memory breaker, every entry's bytes are
// also reserved from it, and the cache gives way first when the node's breaker is full: it evicts
// its least recently used entries for a new one (or keeps the new one out), and for a query that
// needs the room (its reclaimer); a query still gets its bitmap.
//
//   FilterCache cache(index.attributes(), nullptr, {.budget_bytes = 64 << 20, .breaker =
//   &account}); TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const Bitmap> docs,
//   cache.Evaluate(filter));
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "base/memory_breaker.h"
#include "filter/attribute_index.h"
#include "filter/bitmap.h"
#include "filter/filter.h"

namespace tandem::filter {

struct FilterCacheOptions {
  uint64_t budget_bytes = uint64_t{256} << 20;
  // The node's memory breaker, charged with every entry; null: none. Must outlive the cache.
  base::MemoryBreaker::Account* breaker = nullptr;
};

// What the cache holds now and how often it answered (tandem_filter_cache_*).
struct FilterCacheStats {
  uint64_t entries = 0;
  uint64_t bytes = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
};

class FilterCache {
 public:
  // `attributes` null: the index stores none, and every filter is INVALID_ARGUMENT. `evaluate`
  // evaluates a filter not in the cache (EngineSet::filters: the CPU or the GPU); null:
  // EvaluateFilter on the CPU.
  explicit FilterCache(const AttributeIndex* attributes, FilterEvaluator evaluate = nullptr,
                       FilterCacheOptions options = {});
  ~FilterCache();
  FilterCache(const FilterCache&) = delete;
  FilterCache& operator=(const FilterCache&) = delete;

  // EvaluateFilter's answer and errors, from the cache when the filter was seen.
  absl::StatusOr<std::shared_ptr<const Bitmap>> Evaluate(const FilterNode& filter);

  uint64_t hits() const;
  uint64_t misses() const;
  FilterCacheStats stats() const;

  // The bytes an entry of `key` holding `docs` takes in memory, as counted against the budget.
  static uint64_t EntryBytes(const std::string& key, const Bitmap& docs);

 private:
  struct Entry {
    std::string key;
    std::shared_ptr<const Bitmap> docs;
    uint64_t bytes;
  };
  void EvictLeastRecentlyUsed() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Reclaim(uint64_t bytes);
  uint64_t reclaimer_id_ = 0;  // its reclaimer in the breaker's account

  const AttributeIndex* attributes_;
  const FilterEvaluator evaluate_;
  const FilterCacheOptions options_;
  mutable absl::Mutex mu_;
  std::list<Entry> entries_ ABSL_GUARDED_BY(mu_);  // most recently used first
  // Keyed by a view of its entry's key (list nodes never move): each key is held once.
  absl::flat_hash_map<std::string_view, std::list<Entry>::iterator> by_key_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t hits_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t misses_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tandem::filter
