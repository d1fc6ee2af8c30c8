// File: run_merge.cc
#include "index_builder/run_merge.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "index/posting_list.h"

namespace tandem::index_builder {
namespace {

// The merge: bytes of memory a merged and encoded range takes per byte of run data (a posting is
// 2-4 bytes in a run; decoded, sorted and encoded, about 30), and the least run data a range holds.
constexpr uint64_t kMergeMemoryPerRunByte = 10;
constexpr uint64_t kMinRangeBytes = 64 << 10;

// A merged list, encoded, waiting to be written in term order.
struct EncodedList {
  std::string term;
  uint32_t df = 0;
  uint64_t cf = 0;
  float max_score = 0;
  std::string encoded;
};

// The lists of one range of terms, merged and encoded by one thread.
struct MergedRange {
  std::vector<EncodedList> lists;
  absl::Status status;
  bool done = false;
};

// Merges the terms of `range` from every run and encodes their lists. `new_docid`, when not empty,
// renumbers the documents: kDroppedDocument drops a posting, and a term left without postings is
// left out.
absl::Status MergeRange(const std::vector<SpilledRun>& runs, const TermRange& range,
                        const std::vector<uint32_t>& new_docid, const index::IndexWriter& writer,
                        std::vector<EncodedList>* lists) {
  RunMerger merger(runs, range);
  std::vector<uint32_t> docids, freqs;
  while (merger.Next()) {
    docids.clear();
    freqs.clear();
    uint64_t cf = 0;
    for (auto [d, f] : merger.postings()) {
      if (!new_docid.empty()) {
        d = new_docid[d];
        if (d == kDroppedDocument) continue;
      }
      docids.push_back(d);
      freqs.push_back(f);
      cf += f;
    }
    if (docids.empty()) continue;
    EncodedList& l = lists->emplace_back();
    l.term = merger.term();
    l.df = static_cast<uint32_t>(docids.size());
    l.cf = cf;
    const float idf = index::Bm25Idf(writer.num_docs(), docids.size());
    absl::StatusOr<float> m = index::EncodePostingList(writer.codec(), docids, freqs,
                                                       writer.doc_norms(), idf, &l.encoded);
    if (!m.ok()) {
      return absl::InternalError(absl::StrCat("term '", l.term, "': ", m.status().message()));
    }
    l.max_score = *m;
  }
  return merger.status();
}

}  // namespace

// Merges the spilled runs and writes the lists in term order. The terms are cut into ranges
// (SplitTermRanges) that `threads` threads merge and encode while this thread writes the finished
// ones in order; at most 2 x threads ranges are in memory at once, each sized so that together
// they stay within `memory_budget`.
absl::Status MergeRuns(const std::vector<SpilledRun>& runs, const std::vector<uint32_t>& new_docid,
                       index::IndexWriter& writer, int threads, uint64_t memory_budget,
                       uint64_t range_bytes, uint64_t total_postings, Progress& progress,
                       BuildSummary& summary) {
  uint64_t run_bytes = 0;
  for (const SpilledRun& r : runs) run_bytes += r.bytes;
  const size_t window = 2 * static_cast<size_t>(threads);
  // A few ranges a thread, for balance, each within its share of the memory budget. Each range
  // reads up to kRunMarkBytes of every run before its first term, so ranges stay well above
  // runs x kRunMarkBytes.
  const uint64_t target = std::max({kMinRangeBytes, 4 * runs.size() * kRunMarkBytes,
                                    std::min(run_bytes / (4 * static_cast<uint64_t>(threads)) + 1,
                                             memory_budget / (kMergeMemoryPerRunByte * window))});
  const std::vector<TermRange> ranges =
      SplitTermRanges(runs, range_bytes > 0 ? range_bytes : target);
  std::vector<MergedRange> merged(ranges.size());
  std::mutex mu;
  std::condition_variable changed;
  size_t next = 0, written = 0;
  bool stop = false;
  auto work = [&] {
    while (true) {
      size_t i;
      {
        std::unique_lock<std::mutex> lock(mu);
        changed.wait(lock,
                     [&] { return stop || next == ranges.size() || next < written + window; });
        if (stop || next == ranges.size()) return;
        i = next++;
      }
      std::vector<EncodedList> lists;
      absl::Status s = MergeRange(runs, ranges[i], new_docid, writer, &lists);
      {
        std::lock_guard<std::mutex> lock(mu);
        merged[i].lists = std::move(lists);
        merged[i].status = std::move(s);
        merged[i].done = true;
      }
      changed.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads && static_cast<size_t>(t) < ranges.size(); ++t)
    pool.emplace_back(work);
  struct JoinPool {
    std::vector<std::thread>& pool;
    std::mutex& mu;
    std::condition_variable& changed;
    bool& stop;
    ~JoinPool() {
      {
        std::lock_guard<std::mutex> lock(mu);
        stop = true;
      }
      changed.notify_all();
      for (std::thread& t : pool) t.join();
    }
  } join_pool{pool, mu, changed, stop};

  for (size_t i = 0; i < ranges.size(); ++i) {
    MergedRange range;
    {
      std::unique_lock<std::mutex> lock(mu);
      changed.wait(lock, [&] { return merged[i].done; });
      range = std::move(merged[i]);
    }
    TANDEM_RETURN_IF_ERROR(range.status);
    for (const EncodedList& l : range.lists) {
      TANDEM_RETURN_IF_ERROR(writer.AddEncodedList(l.term, l.df, l.cf, l.max_score, l.encoded));
      summary.postings += l.df;
      ++summary.terms;
    }
    {
      std::lock_guard<std::mutex> lock(mu);
      written = i + 1;
    }
    changed.notify_all();
    if (progress.Due()) {
      progress.Report("writing", static_cast<double>(summary.postings),
                      static_cast<double>(total_postings),
                      absl::StrFormat("%d terms, %d postings merged from %d runs", summary.terms,
                                      summary.postings, runs.size()));
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::index_builder
