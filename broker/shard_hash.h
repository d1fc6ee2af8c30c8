// File: shard_hash.h
//
// Which shard owns a document id when documents are written through tandem-broker: FNV-1a 64 of
// the id's bytes (offset basis 0xcbf29ce484222325, prime 0x100000001b3) modulo the shard count.
// The hash is fixed so that every broker, of any build, sends an id to the same shard; changing
// the shard count reassigns ids (a collection is then rewritten, not resharded in place).
//
//   uint32_t shard = ShardOfId("doc-17", topology.shards);
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"

namespace tandem::broker {

// FNV-1a 64 (Fowler, Noll and Vo) of `bytes`.
uint64_t Fnv1a64(absl::string_view bytes);

// The shard of `id` among `shards` (at least 1).
uint32_t ShardOfId(absl::string_view id, uint32_t shards);

}  // namespace tandem::broker
