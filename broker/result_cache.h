// File: result_cache.h
//
// The broker's result cache (Ding et al. 2009, Figure 1): complete answers to recent queries,
// bounded in entries and in bytes, each valid for a time to live, evicted least recently used
// first. Keys are the query's canonical bytes without what does not change its answer
// (request_id, require_complete) behind the topology's generation, so an index that changes on any
// shard makes every older entry unreachable (and soon evicted).
//
//   ResultCache cache({.max_entries = 10000, .max_bytes = 64 << 20, .ttl = absl::Seconds(10)});
//   std::string key = ResultCache::Key(request, generation);
//   if (std::optional<SearchResponse> hit = cache.Lookup(key, absl::Now())) ...;
//   cache.Insert(key, response, absl::Now());
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "tandem/v1/search.pb.h"

namespace tandem::broker {

struct ResultCacheOptions {
  size_t max_entries = 10000;   // 0 turns the cache off
  size_t max_bytes = 64 << 20;  // keys and serialized answers together
  absl::Duration ttl = absl::Seconds(10);
};

class ResultCache {
 public:
  // INVALID_ARGUMENT for a ttl that is not positive while the cache is on.
  static absl::Status Validate(const ResultCacheOptions& options);
  explicit ResultCache(const ResultCacheOptions& options) : options_(options) {}

  bool enabled() const { return options_.max_entries > 0 && options_.max_bytes > 0; }

  static std::string Key(const tandem::v1::SearchRequest& request, uint64_t generation);

  // The answer stored under `key` if it is younger than the ttl at `now`.
  std::optional<tandem::v1::SearchResponse> Lookup(const std::string& key, absl::Time now);
  // Stores `response` (without its request_id), evicting the least recently used entries beyond
  // the bounds. An answer larger than max_bytes on its own is not stored.
  void Insert(const std::string& key, const tandem::v1::SearchResponse& response, absl::Time now);

  size_t entries() const;
  size_t bytes() const;

 private:
  struct Entry {
    std::string key;
    std::string response;  // serialized
    absl::Time stored;
  };
  using Lru = std::list<Entry>;  // most recently used first

  void EraseLocked(Lru::iterator it) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const ResultCacheOptions options_;
  mutable absl::Mutex mu_;
  Lru lru_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Lru::iterator> index_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace tandem::broker
