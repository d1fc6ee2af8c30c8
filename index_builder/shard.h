// File: shard.h
//
// Cuts an index into shards of consecutive docID ranges, balanced by document count (sizes differ
// by at most one), each a complete index directory OUT/shard-000, OUT/shard-001, ... that
// tandem-server serves alone. A shard keeps the source's codec, analyzer, BM25 parameters, external
// ids and stored fields, and stores the collection's BM25 statistics (document count, average
// length, each term's document frequency) with its place (index/FORMAT.md, "Shards"): its scores,
// and the list and block maxima its pruning uses, are those of the source index, so a broker's
// merge of the shards' top-k is the source's top-k bit for bit, as Elasticsearch's DFS
// query-then-fetch makes them with statistics gathered per query.
//
//   TANDEM_ASSIGN_OR_RETURN(ShardSummary s, ShardIndex(*source, "/srv/shards", {.shards = 4}));
//
// OUT is written under a temporary sibling name and put in place only when every shard is
// complete; an OUT that holds the shards of an earlier run is replaced, any other non-empty OUT is
// refused.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "index/index.h"

namespace tandem::index_builder {

struct ShardOptions {
  uint32_t shards = 0;
  int threads = 0;  // shards written at once (0: all cores)
};

// "shard-007": the directory of shard `i` under OUT.
std::string ShardDirectoryName(uint32_t shard);

// Shard i's first docID when `num_docs` documents are cut into `shards` (the first num_docs %
// shards shards get one document more); ShardFirstDocid(shards, shards, n) is n.
uint32_t ShardFirstDocid(uint32_t shard, uint32_t shards, uint32_t num_docs);

struct ShardSummary {
  std::vector<std::string> directories;  // one per shard
  std::vector<uint32_t> first_docids;    // one per shard, then the source's document count
  std::string Describe() const;
};

// Errors: INVALID_ARGUMENT for 0 shards or more shards than documents, FAILED_PRECONDITION when
// `source` is itself a shard, ALREADY_EXISTS for an `out` that is not empty and holds no shards.
absl::StatusOr<ShardSummary> ShardIndex(const index::Index& source, const std::string& out,
                                        const ShardOptions& options);

}  // namespace tandem::index_builder
