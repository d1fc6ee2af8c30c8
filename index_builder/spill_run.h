// File: spill_run.h
//
// The file format of a spilled run. When an inverting thread's in-memory run (term -> postings)
// outgrows its share of the memory budget, the inverter writes it to a temporary file sorted by
// term and starts a new one; at the end RunMerger reads every run back and merges them term by term
// (k-way), so the lists come out in term order whatever the memory budget.
//
// A run file is a sequence of terms in increasing byte order, each written as
//   varint term length, term bytes, varint posting count n, n times (varint docID gap, varint tf)
// with gaps taken from the previous posting of the same term (the first from 0). There is no
// header or trailer: the file ends after its last term. Varints are LEB128 (7 bits a byte, low
// bits first).
//
//   TANDEM_RETURN_IF_ERROR(WriteRun(run, "/tmp/spill/run-0.bin"));
//   RunMerger merger(paths);
//   while (merger.Next()) Encode(merger.term(), merger.postings());
//   TANDEM_RETURN_IF_ERROR(merger.status());
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace tandem::index_builder {

// One term's postings in a run: interleaved (docid, tf) pairs, docids increasing.
using RunPostings = std::vector<uint32_t>;

// A run as an inverting thread builds it: term -> postings, terms in no particular order.
using MemoryRun = absl::flat_hash_map<std::string, RunPostings>;

// Writes `run` to `path` (created or truncated) in the run format, terms sorted. INTERNAL when the
// file cannot be created or written.
absl::Status WriteRun(const MemoryRun& run, const std::string& path);

// Reads one run file term by term. A file that cannot be opened sets status() to DATA_LOSS.
class RunReader {
 public:
  explicit RunReader(const std::string& path);

  // Reads the next term; false at the end. A file that ends inside a term sets status() to
  // DATA_LOSS.
  bool Next();
  const std::string& term() const { return term_; }
  const RunPostings& postings() const { return postings_; }
  const absl::Status& status() const { return status_; }

 private:
  std::string path_;
  char buffer_[1 << 16];
  std::ifstream in_;
  std::string term_;
  RunPostings postings_;
  absl::Status status_;
};

// K-way merge of run files: every term once, in increasing order, with the postings of all the runs
// that hold it.
class RunMerger {
 public:
  // Opens the runs and reads their first terms. After an error there, the first Next() returns
  // false with status() set.
  explicit RunMerger(const std::vector<std::string>& paths);

  // Moves to the next term; false at the end or on an error (check status()).
  bool Next();
  const std::string& term() const { return term_; }
  // (docid, tf) pairs of term(), docids increasing.
  const std::vector<std::pair<uint32_t, uint32_t>>& postings() const { return postings_; }
  const absl::Status& status() const { return status_; }

 private:
  using Head = std::pair<std::string, size_t>;  // (term, reader)

  std::vector<std::unique_ptr<RunReader>> readers_;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads_;
  std::string term_;
  std::vector<std::pair<uint32_t, uint32_t>> postings_;
  absl::Status status_;
};

}  // namespace tandem::index_builder
