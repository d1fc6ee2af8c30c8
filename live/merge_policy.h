// File: merge_policy.h
//
// Which segments of a live index to merge next. Merges take adjacent segments only, as Lucene's
// LogMergePolicy does: a merged segment then holds its inputs' documents in their order, so the
// index keeps the order of the documents' latest writes, by which ties rank (snapshot.h). Lucene's
// TieredMergePolicy may merge segments that are not adjacent, which a Tandem index cannot.
//
// Segments fall into levels by size (live documents, each counted at least floor_documents):
// level L holds sizes below floor * per_level^(L+1). A run of `per_level` adjacent segments of one
// level, after every segment of a higher level, merges into one of the next level, so each
// document is rewritten about log_per_level(N / floor) times (the write amplification). A segment
// whose deleted share passes max_deleted_share is rewritten alone, dropping them.
//
//   std::optional<MergeRange> next = FindMerge(sizes, MergePolicyOptions{});
//   if (next) merge segments [next->begin, next->end);
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

namespace tandem::live {

struct MergePolicyOptions {
  uint64_t floor_documents = 1000;
  size_t per_level = 10;  // segments merged at once, at least 2
  double max_deleted_share = 0.25;
  // Segments before this index never merge in the background (the index built offline, whose
  // rewrite a ForceMerge asks for).
  size_t first_mergeable = 0;
};

struct SegmentSize {
  uint64_t documents = 0;  // all, deleted included
  uint64_t deleted = 0;
};

struct MergeRange {
  size_t begin = 0;
  size_t end = 0;  // exclusive; end - begin >= 1
};

// The next merge of `segments` (in index order), or nullopt when the index is in shape.
std::optional<MergeRange> FindMerge(const std::vector<SegmentSize>& segments,
                                    const MergePolicyOptions& options);

// The ranges that merge `n` segments into at most `max_segments` (>= 1) adjacent groups of
// nearly equal counts, each of more than one segment; empty when n <= max_segments.
std::vector<MergeRange> ForcedMerges(size_t n, size_t max_segments);

}  // namespace tandem::live
