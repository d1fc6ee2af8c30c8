// File: segment_merge.h
//
// Merges adjacent segments of a live index into one, dropping their deleted documents. Each
// segment is an ordinary index directory (index/index.h); the merge writes another through
// IndexWriter, so the output appears at `output_dir` only once it is complete, and a merge that
// fails or is cancelled leaves nothing behind.
//
// The output is the index `tandem-index build` (index_builder/inverter.h) writes over the same live
// documents in the same order, file for file: the documents of the first input (less its deleted
// ones) take docIDs 0, 1, ..., then those of the second, and so on; every term's lists are merged
// k-way over the inputs' lexicons in term byte order, renumbered, and re-encoded with the merged
// index's own norms and idf, so its block maxima, list maxima and scores are those of a fresh
// build. This is Lucene's SegmentMerger: a merge policy merges only adjacent segments, which keeps
// the documents in the order they were added, and that order is what breaks ties between equal
// scores (the lower docID first) in a fresh build too.
//
//   std::vector<uint32_t> deleted = {3, 17};  // sorted local docIDs of segment a
//   MergeOptions options;
//   options.check = [&] { return stopping ? absl::CancelledError("shutdown") : absl::OkStatus(); };
//   options.max_bytes_per_second = 50 << 20;  // a bounded share of the disk
//   TANDEM_ASSIGN_OR_RETURN(MergeSummary s,
//                           MergeSegments({{a.get(), deleted}, {b.get(), {}}}, dir, options));
//
// External ids are copied as they are: a document replaced in a later segment must be deleted in
// the earlier one by the caller (a fresh build refuses a repeated id; the merge does not look).
//
// Attributes (filter/attribute_index.h) are rebuilt from the inputs' bitmaps through the builder's
// own AttributeCollector: keyword values and integer buckets of one value each are exact, and an
// integer field "length" is the documents' lengths. An integer field of any other name whose
// buckets span several values no longer holds its documents' values, so it cannot be rebuilt as a
// fresh build would: UNIMPLEMENTED. (A document that repeats one integer value in a field counts
// it twice in a fresh build's equal-frequency buckets but once in a bitmap; the merge counts it
// once. Only the buckets of a field of more than 256 distinct values can differ.)
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "index/index.h"

namespace tandem::live {

struct MergeInput {
  const index::Index* segment = nullptr;
  // The segment's deleted documents: local docIDs, strictly increasing, each below its num_docs.
  absl::Span<const uint32_t> deleted;
};

struct MergeOptions {
  // Called as the merge starts, every check_interval_bytes of bytes read and written, and while it
  // waits for the throttle; a non-OK status (shutdown, cancellation) stops the merge with that
  // status and leaves no output.
  std::function<absl::Status()> check;
  uint64_t check_interval_bytes = uint64_t{4} << 20;
  // 0: unthrottled. Otherwise the bytes written are paced to this rate, so that a background merge
  // takes a bounded share of the disk's bandwidth (Lucene's MergeRateLimiter): the merge takes at
  // least bytes_written / max_bytes_per_second seconds.
  uint64_t max_bytes_per_second = 0;
  // Threads that decode, renumber and re-encode lists (this thread writes them, in term order).
  int threads = 1;
};

struct MergeSummary {
  uint64_t documents = 0;        // in the output
  uint64_t deleted_dropped = 0;  // deleted documents of the inputs left out
  uint64_t terms = 0;            // in the output (terms whose postings were all deleted are gone)
  uint64_t postings = 0;         // in the output
  uint64_t bytes_read = 0;       // of the inputs' lists and document tables
  uint64_t bytes_written = 0;    // the output's files together
  double seconds = 0;
  double throttled_seconds = 0;  // of `seconds`, waiting for the throttle
};

// Merges `inputs`, in order, into a new index at `output_dir`. INVALID_ARGUMENT when there is no
// input or no live document in them all (drop such segments instead), for a shard, for deletes
// that are not sorted local docIDs, and when two inputs differ in codec, analyzer, BM25 parameters
// or attribute fields (the message names both); ALREADY_EXISTS when `output_dir` holds an index
// or anything else; UNIMPLEMENTED for attributes that cannot be rebuilt exactly (above); DATA_LOSS
// when an input's list does not decode; the status of options.check when it stops the merge.
absl::StatusOr<MergeSummary> MergeSegments(absl::Span<const MergeInput> inputs,
                                           const std::string& output_dir,
                                           const MergeOptions& options = {});

}  // namespace tandem::live
