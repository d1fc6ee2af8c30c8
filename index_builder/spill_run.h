// File: spill_run.h
//
// The file format of a spilled run. When an inverting thread's in-memory run (term -> postings)
// outgrows its share of the memory budget, the inverter writes it to a temporary file sorted by
// term and starts a new one; at the end RunMerger reads the runs back and merges them term by term
// (k-way), so the lists come out in term order whatever the memory budget. The merge runs in
// parallel over ranges of terms (SplitTermRanges): each range's merger starts every run at the
// mark nearest below its first term, so the ranges can be merged and encoded on their own.
//
// A run file is a sequence of terms in increasing byte order, each written as
//   varint term length, term bytes, varint posting count n, n times (varint docID gap, varint tf)
// with gaps taken from the previous posting of the same term (the first from 0). There is no
// header or trailer: the file ends after its last term. Varints are LEB128 (7 bits a byte, low
// bits first). The marks are kept in memory, not in the file.
//
//   TANDEM_ASSIGN_OR_RETURN(SpilledRun run, WriteRun(memory_run, "/tmp/spill/run-0.bin"));
//   for (const TermRange& range : SplitTermRanges(runs, 4 << 20)) {  // on any thread
//     RunMerger merger(runs, range);
//     while (merger.Next()) Encode(merger.term(), merger.postings());
//     TANDEM_RETURN_IF_ERROR(merger.status());
//   }
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tandem::index_builder {

// One term's postings in a run: interleaved (docid, tf) pairs, docids increasing.
using RunPostings = std::vector<uint32_t>;

// A run as an inverting thread builds it: term -> postings, terms in no particular order.
using MemoryRun = absl::flat_hash_map<std::string, RunPostings>;

// Where a run file holds a term. WriteRun marks the first term and then the first term after every
// kRunMarkBytes of file.
struct RunMark {
  std::string term;
  uint64_t offset = 0;
};
inline constexpr uint64_t kRunMarkBytes = 4 << 10;

// A run written to disk: its file, its size, and its marks in term order.
struct SpilledRun {
  std::string path;
  uint64_t bytes = 0;
  std::vector<RunMark> marks;
};

// Writes `run` to `path` (created or truncated) in the run format, terms sorted. INTERNAL when the
// file cannot be created or written.
absl::StatusOr<SpilledRun> WriteRun(const MemoryRun& run, const std::string& path);

// The terms t with first <= t < *end (no end: every term from `first` on).
struct TermRange {
  std::string first;
  std::optional<std::string> end;
};

// Cuts the terms of `runs` into consecutive ranges, in term order, of about `target_bytes` of run
// data each (judged by the marks), which together hold every term: at least one range, the first
// starting at "" and the last without an end.
std::vector<TermRange> SplitTermRanges(const std::vector<SpilledRun>& runs, uint64_t target_bytes);

// Reads one run file term by term. A file that cannot be opened sets status() to DATA_LOSS.
class RunReader {
 public:
  // Reads from byte `offset` on, which must be where a term starts (0 or a mark's offset).
  explicit RunReader(const std::string& path, uint64_t offset = 0);

  // Reads the next term; false at the end. A file that ends inside a term sets status() to
  // DATA_LOSS.
  bool Next();
  const std::string& term() const { return term_; }
  const RunPostings& postings() const { return postings_; }
  const absl::Status& status() const { return status_; }

 private:
  // The next byte of the file, or -1 at its end.
  int Byte() {
    if (pos_ == end_ && !Fill()) return -1;
    return static_cast<unsigned char>(buffer_[pos_++]);
  }
  bool Fill();
  bool GetVarint(uint64_t* v);

  std::string path_;
  std::ifstream in_;
  char buffer_[1 << 16];
  size_t pos_ = 0, end_ = 0;
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
  // Merges the terms of `range` alone, each run read from its last mark at or below range.first.
  RunMerger(const std::vector<SpilledRun>& runs, const TermRange& range);

  // Moves to the next term; false at the end or on an error (check status()).
  bool Next();
  const std::string& term() const { return term_; }
  // (docid, tf) pairs of term(), docids increasing.
  const std::vector<std::pair<uint32_t, uint32_t>>& postings() const { return postings_; }
  const absl::Status& status() const { return status_; }

 private:
  using Head = std::pair<std::string, size_t>;  // (term, reader)

  // Opens a reader at `offset` and queues its first term in the range; false on an error.
  bool Open(const std::string& path, uint64_t offset);
  // Queues reader `which`'s current term unless it is at or past the range's end.
  void Push(size_t which);

  std::string first_;
  std::optional<std::string> end_;
  std::vector<std::unique_ptr<RunReader>> readers_;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads_;
  std::string term_;
  std::vector<std::pair<uint32_t, uint32_t>> postings_;
  absl::Status status_;
};

}  // namespace tandem::index_builder
