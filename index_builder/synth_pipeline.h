// File: synth_pipeline.h
//
// The parallel part of the synthetic generator (synth.h): worker threads take the planned lists in
// term order, generate each one from its own random stream (synth_lists.h) and encode it with the
// index's codec; the calling thread appends the encoded lists to the IndexWriter in term order. At
// most kInFlightPostings postings are claimed but not yet written, so memory stays bounded (a few
// hundred MB) whatever the collection size, and a slow writer stalls the workers instead of piling
// up lists.
//
//   ListGenerator generator(options, writer, /*threads=*/16);
//   TANDEM_RETURN_IF_ERROR(generator.Run(plan, progress));
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "index/index_writer.h"
#include "index_builder/progress.h"
#include "index_builder/synth.h"

namespace tandem::index_builder {

struct PlannedList {
  std::string term;
  uint32_t df = 0;       // the list's exact length
  double mean_tf = 1.0;  // cf / df of the source statistics
};

class ListGenerator {
 public:
  static constexpr uint64_t kInFlightPostings = uint64_t{1} << 27;

  // `writer` must have finished its documents.
  ListGenerator(const SynthOptions& options, index::IndexWriter& writer, int threads)
      : options_(options), writer_(writer), threads_(threads) {}

  // Generates, encodes and adds every list of `plan` (sorted by term, no repeats).
  absl::Status Run(const std::vector<PlannedList>& plan, Progress& progress);
  uint64_t postings() const { return postings_; }

 private:
  const SynthOptions& options_;
  index::IndexWriter& writer_;
  int threads_;
  uint64_t postings_ = 0;
};

}  // namespace tandem::index_builder
