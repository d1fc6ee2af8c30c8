// File: filter_cache.cc
#include "filter/filter_cache.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "base/status_macros.h"

namespace tandem::filter {
namespace {

// What glibc's malloc takes for an allocation of `bytes`: its 8-byte chunk header, rounded up to
// 16 bytes, at least 32.
uint64_t Allocated(uint64_t bytes) {
  return bytes == 0 ? 0 : std::max<uint64_t>(32, (bytes + 8 + 15) / 16 * 16);
}

}  // namespace

uint64_t FilterCache::EntryBytes(const std::string& key, const Bitmap& docs) {
  // The list node (Entry and two links); the key's characters when they do not fit in the string
  // itself; the shared Bitmap with its control block (one allocation, make_shared); its words as
  // allocated; the map's slot with its control byte, at the load of a table that just grew (7/16).
  constexpr uint64_t kSmallString = 15;
  const uint64_t node = Allocated(sizeof(Entry) + 2 * sizeof(void*));
  const uint64_t key_bytes = key.capacity() > kSmallString ? Allocated(key.capacity() + 1) : 0;
  const uint64_t bitmap = Allocated(sizeof(Bitmap) + 2 * sizeof(void*) + 2 * sizeof(int));
  const uint64_t words = Allocated(docs.words().capacity() * sizeof(uint32_t));
  const uint64_t slot =
      (sizeof(std::string_view) + sizeof(std::list<Entry>::iterator) + 1) * 16 / 7 + 1;
  return node + key_bytes + bitmap + words + slot;
}

FilterCache::FilterCache(const AttributeIndex* attributes, FilterEvaluator evaluate,
                         FilterCacheOptions options)
    : attributes_(attributes), evaluate_(std::move(evaluate)), options_(options) {
  if (options_.breaker != nullptr) {
    reclaimer_id_ = options_.breaker->AddReclaimer([this](uint64_t bytes) { Reclaim(bytes); });
  }
}

FilterCache::~FilterCache() {
  if (options_.breaker == nullptr) return;
  options_.breaker->RemoveReclaimer(reclaimer_id_);
  absl::MutexLock lock(&mu_);
  options_.breaker->Release(bytes_);
}

void FilterCache::Reclaim(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  uint64_t freed = 0;
  while (!entries_.empty() && freed < bytes) {
    freed += entries_.back().bytes;
    EvictLeastRecentlyUsed();
  }
}

void FilterCache::EvictLeastRecentlyUsed() {
  const Entry& last = entries_.back();
  bytes_ -= last.bytes;
  if (options_.breaker != nullptr) options_.breaker->Release(last.bytes);
  by_key_.erase(std::string_view(last.key));
  entries_.pop_back();
}

absl::StatusOr<std::shared_ptr<const Bitmap>> FilterCache::Evaluate(const FilterNode& filter) {
  if (attributes_ == nullptr) {
    return absl::InvalidArgumentError(
        "filter: this index stores no attributes (build it with tandem-index build "
        "--attributes)");
  }
  std::string key = FilterToText(filter);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = by_key_.find(std::string_view(key)); it != by_key_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      ++hits_;
      return it->second->docs;
    }
    ++misses_;
  }
  // Evaluated outside the lock: concurrent first uses of one filter may both evaluate it.
  TANDEM_ASSIGN_OR_RETURN(Bitmap docs,
                          evaluate_ ? evaluate_(filter) : EvaluateFilter(filter, *attributes_));
  // A builder's vector grows by doubling: a kept bitmap keeps only its words.
  if (docs.words().capacity() > docs.words().size() + docs.words().size() / 8) {
    docs = Bitmap(docs.codec(), docs.num_rows(), std::vector<uint32_t>(docs.words()));
  }
  key.shrink_to_fit();
  auto shared = std::make_shared<const Bitmap>(std::move(docs));
  shared->Count();  // counted once here, not by the cost model on the routing path
  const uint64_t bytes = EntryBytes(key, *shared);
  absl::MutexLock lock(&mu_);
  if (auto it = by_key_.find(std::string_view(key)); it != by_key_.end()) return it->second->docs;
  if (bytes > options_.budget_bytes) return shared;  // too large to keep
  while (!entries_.empty() && bytes_ + bytes > options_.budget_bytes) EvictLeastRecentlyUsed();
  if (options_.breaker != nullptr) {
    // The node is short of memory: the cache gives way before queries are refused.
    while (!options_.breaker->TryReserve(bytes)) {
      if (entries_.empty()) return shared;
      EvictLeastRecentlyUsed();
    }
  }
  entries_.push_front({std::move(key), shared, bytes});
  by_key_[std::string_view(entries_.front().key)] = entries_.begin();
  bytes_ += bytes;
  return shared;
}

uint64_t FilterCache::hits() const {
  absl::MutexLock lock(&mu_);
  return hits_;
}

uint64_t FilterCache::misses() const {
  absl::MutexLock lock(&mu_);
  return misses_;
}

FilterCacheStats FilterCache::stats() const {
  absl::MutexLock lock(&mu_);
  return {.entries = entries_.size(), .bytes = bytes_, .hits = hits_, .misses = misses_};
}

}  // namespace tandem::filter
