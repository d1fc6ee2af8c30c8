// File: filter_cache.cc
#include "filter/filter_cache.h"

#include <utility>

#include "base/status_macros.h"

namespace tandem::filter {

absl::StatusOr<std::shared_ptr<const Bitmap>> FilterCache::Evaluate(const FilterNode& filter) {
  if (attributes_ == nullptr) {
    return absl::InvalidArgumentError(
        "filter: this index stores no attributes (build it with tandem-index build "
        "--attributes)");
  }
  std::string key = FilterToText(filter);
  {
    absl::MutexLock lock(&mu_);
    if (auto it = by_key_.find(key); it != by_key_.end()) {
      entries_.splice(entries_.begin(), entries_, it->second);
      ++hits_;
      return it->second->docs;
    }
    ++misses_;
  }
  // Evaluated outside the lock: concurrent first uses of one filter may both evaluate it.
  TANDEM_ASSIGN_OR_RETURN(Bitmap docs,
                          evaluate_ ? evaluate_(filter) : EvaluateFilter(filter, *attributes_));
  auto shared = std::make_shared<const Bitmap>(std::move(docs));
  shared->Count();  // counted once here, not by the cost model on the routing path
  const uint64_t bytes = shared->words().size() * sizeof(uint32_t) + key.size() + 64;
  absl::MutexLock lock(&mu_);
  if (auto it = by_key_.find(key); it != by_key_.end()) return it->second->docs;
  if (bytes > budget_bytes_) return shared;  // too large to keep
  entries_.push_front({key, shared, bytes});
  by_key_[std::move(key)] = entries_.begin();
  bytes_ += bytes;
  while (bytes_ > budget_bytes_) {
    bytes_ -= entries_.back().bytes;
    by_key_.erase(entries_.back().key);
    entries_.pop_back();
  }
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

}  // namespace tandem::filter
