// File: run_merge.h
//
// The last step of a build: the spilled runs (spill_run.h) merged term by term and their lists
// encoded and written in term order. Ranges of terms are merged and encoded in parallel and
// written in order, within the build's memory budget.
//
//   TANDEM_RETURN_IF_ERROR(MergeRuns(runs, {}, writer, threads, budget, 0, postings, progress,
//                                    summary));
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "index/index_writer.h"
#include "index_builder/inverter.h"
#include "index_builder/progress.h"
#include "index_builder/spill_run.h"

namespace tandem::index_builder {

// A new_docid entry for a document whose postings the merge drops: one replaced by a later
// document with the same external id.
inline constexpr uint32_t kDroppedDocument = UINT32_MAX;

// Merges the spilled runs and writes the lists in term order. The terms are cut into ranges
// (SplitTermRanges) that `threads` threads merge and encode while this thread writes the finished
// ones in order; at most 2 x threads ranges are in memory at once, each sized so that together
// they stay within `memory_budget`.
absl::Status MergeRuns(const std::vector<SpilledRun>& runs, const std::vector<uint32_t>& new_docid,
                       index::IndexWriter& writer, int threads, uint64_t memory_budget,
                       uint64_t range_bytes, uint64_t total_postings, Progress& progress,
                       BuildSummary& summary);

}  // namespace tandem::index_builder
