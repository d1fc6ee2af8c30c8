// File: shard_hash.cc
#include "broker/shard_hash.h"

namespace tandem::broker {

uint64_t Fnv1a64(absl::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

uint32_t ShardOfId(absl::string_view id, uint32_t shards) {
  return shards <= 1 ? 0 : static_cast<uint32_t>(Fnv1a64(id) % shards);
}

}  // namespace tandem::broker
