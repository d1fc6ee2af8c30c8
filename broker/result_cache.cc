// File: result_cache.cc
#include "broker/result_cache.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"

namespace tandem::broker {

absl::Status ResultCache::Validate(const ResultCacheOptions& options) {
  if (options.max_entries > 0 && options.max_bytes > 0 && options.ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cache_ttl must be positive, got ", absl::FormatDuration(options.ttl)));
  }
  return absl::OkStatus();
}

std::string ResultCache::Key(const tandem::v1::SearchRequest& request, uint64_t generation) {
  tandem::v1::SearchRequest canonical = request;
  canonical.clear_request_id();
  canonical.clear_require_complete();
  std::string key = absl::StrCat(generation, ":");
  {
    // Deterministic: the same request gives the same bytes within this process.
    google::protobuf::io::StringOutputStream out(&key);
    google::protobuf::io::CodedOutputStream coded(&out);
    coded.SetSerializationDeterministic(true);
    canonical.SerializeToCodedStream(&coded);
  }
  return key;
}

std::optional<tandem::v1::SearchResponse> ResultCache::Lookup(const std::string& key,
                                                              absl::Time now) {
  if (!enabled()) return std::nullopt;
  std::string bytes;
  {
    absl::MutexLock lock(&mu_);
    auto it = index_.find(key);
    if (it == index_.end()) return std::nullopt;
    if (now - it->second->stored >= options_.ttl) {
      EraseLocked(it->second);
      return std::nullopt;
    }
    lru_.splice(lru_.begin(), lru_, it->second);
    bytes = it->second->response;
  }
  tandem::v1::SearchResponse response;
  if (!response.ParseFromString(bytes)) return std::nullopt;
  return response;
}

void ResultCache::Insert(const std::string& key, const tandem::v1::SearchResponse& response,
                         absl::Time now) {
  if (!enabled()) return;
  tandem::v1::SearchResponse stored = response;
  stored.clear_request_id();
  std::string bytes = stored.SerializeAsString();
  const size_t size = key.size() + bytes.size();
  if (size > options_.max_bytes) return;
  absl::MutexLock lock(&mu_);
  if (auto it = index_.find(key); it != index_.end()) EraseLocked(it->second);
  lru_.push_front(Entry{key, std::move(bytes), now});
  index_.emplace(key, lru_.begin());
  bytes_ += size;
  while (lru_.size() > options_.max_entries || bytes_ > options_.max_bytes) {
    EraseLocked(std::prev(lru_.end()));
  }
}

void ResultCache::EraseLocked(Lru::iterator it) {
  bytes_ -= it->key.size() + it->response.size();
  index_.erase(it->key);
  lru_.erase(it);
}

size_t ResultCache::entries() const {
  absl::MutexLock lock(&mu_);
  return lru_.size();
}

size_t ResultCache::bytes() const {
  absl::MutexLock lock(&mu_);
  return bytes_;
}

}  // namespace tandem::broker
