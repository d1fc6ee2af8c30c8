// File: shard_merge.h
//
// The broker's exact merge of per-shard answers (Ding et al. 2009, Figure 1: the query broker
// gathers each shard's top-k and keeps the k best). Shards hold consecutive docID ranges of one
// collection and score with the collection's BM25 statistics (`tandem-index shard`), so a shard's
// hit is the collection's hit first_docid + docid with the same float score; ranking the union by
// score, then lower collection docID, gives exactly what one index over the whole collection
// answers.
//
//   std::vector<ShardAnswer> answers = ...;  // one per shard that answered
//   tandem::v1::SearchResponse merged = MergeShardAnswers(/*k=*/10, answers);
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "tandem/v1/search.pb.h"

namespace tandem::broker {

struct ShardAnswer {
  uint32_t shard = 0;
  uint32_t first_docid = 0;  // the collection's docID of the shard's docID 0
  tandem::v1::SearchResponse response;
};

// The k best hits of all answers, in rank order (score descending, then collection docID
// ascending), with docIDs shifted into the collection's range; hits and their fields are moved out
// of `answers`. The stats sum the postings decoded, take the longest queue wait and execution, and
// name every engine that answered ("cpu", "gpu" or "cpu+gpu"). INTERNAL when a hit's collection
// docID would overflow 32 bits (an answer that is not from the collection its shard claims).
absl::StatusOr<tandem::v1::SearchResponse> MergeShardAnswers(uint32_t k,
                                                             std::vector<ShardAnswer>& answers);

// Hits of all answers together (AND+OR's first pass runs AND on every shard: the collection's AND
// found at least k exactly when the shards' counts sum to k or more).
uint64_t TotalHits(const std::vector<ShardAnswer>& answers);

}  // namespace tandem::broker
