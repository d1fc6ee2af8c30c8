// File: live_index.h
//
// An index that takes writes while it serves, as Lucene's IndexWriter with near-real-time readers:
// documents are added, replaced and deleted by external id; a refresh makes every acknowledged
// operation searchable (new documents sealed into a segment, deletes applied to the older ones)
// and publishes a new Snapshot; a flush writes a commit point. Every answer of a snapshot is the
// answer of `tandem-index build` over its live documents in the order of their latest write
// (snapshot.h).
//
// On disk (FORMAT.md, "Live index"): the directory DIR holds the commit point `segments_G` (the
// segments, each one's deleted docIDs and the ids' versions, written whole and renamed into place),
// one index directory per segment (`_1`, `_2`, ...), and the write-ahead log `wal/`. An index
// built by `tandem-index build` is a live index of one segment, "." (DIR itself), and opens as
// such. At Open, segment directories that no commit point names (a refresh or merge the process
// did not commit before it stopped) are removed and the log after the commit point is replayed.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<LiveIndex> live, LiveIndex::Open(dir, {}));
//   TANDEM_ASSIGN_OR_RETURN(auto outcomes, live->Write({Operation::Index(doc)}));
//   TANDEM_RETURN_IF_ERROR(live->Refresh());  // searchable
//   live->snapshot()->Search(query, context);
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "cpu/daat_engine.h"
#include "index/index_writer.h"
#include "index_builder/attribute_collector.h"
#include "live/merge_policy.h"
#include "live/operation.h"
#include "live/snapshot.h"
#include "live/write_ahead_log.h"

namespace tandem::live {

struct LiveIndexOptions {
  cpu::DaatEngineOptions engine;
  // The index at DIR, already open (the node's): segment "." uses it instead of opening it again.
  std::shared_ptr<const index::Index> opened;
  // The device that searches the larger segments, if any (snapshot.h).
  DeviceEngines device;
  // Acknowledge a write once its log record is on disk (fdatasync, shared by the writes of the
  // moment: group commit); false: once the OS has it, synced within 100 ms (a crash of the
  // machine, not of the process, may lose the last writes).
  bool sync_writes = true;
  // The most time from a write's acknowledgement to its visibility that the background refresh
  // aims at: it refreshes this often, each refresh begun early by the last one's duration; zero:
  // only Refresh().
  absl::Duration refresh_interval = absl::Seconds(1);
  // Threads that invert a refresh's documents into a segment.
  int build_threads = 1;
  // Buffered text past which the writer that fills the buffer refreshes before it returns.
  uint64_t max_buffered_bytes = uint64_t{64} << 20;
  // Nice levels the background refresh and merges run below the thread that opens the index (a
  // node's query workers' priority): sealing and merging yield to queries.
  int background_nice = 10;
  // Merges in the background after refreshes (merge_policy.h), one at a time, on one thread, its
  // writes paced to merge_bytes_per_second (0: unpaced).
  bool background_merges = true;
  MergePolicyOptions merge_policy;
  uint64_t merge_bytes_per_second = uint64_t{64} << 20;
};

// What became of one operation of a Write.
enum class WriteOutcome {
  kApplied,
  kStale,     // its version is not newer than the one the index holds for the id: skipped
  kNotFound,  // a delete of an id the index does not hold (its version is kept as a tombstone)
};

// Counts for IndexService.GetIndexStats and the node's metrics.
struct LiveIndexStats {
  uint64_t generation = 0;           // of the last commit point
  uint64_t refreshes = 0;            // snapshots published since Open
  uint64_t segments = 0;             // in the current snapshot
  uint64_t documents = 0;            // live documents searchable now
  uint64_t deleted_documents = 0;    // held by segments until a merge drops them
  uint64_t buffered_operations = 0;  // acknowledged, searchable at the next refresh
  uint64_t last_sequence = 0;        // of the log
  bool log_open = false;       // the log is open (and its directory locked): the index took writes
  uint64_t bytes_indexed = 0;  // documents' text taken by writes since Open
  // Index bytes written since Open by refreshes (new segments) and by merges: the write
  // amplification of merging is (sealed + merged) / sealed.
  uint64_t bytes_sealed = 0;
  uint64_t bytes_merged = 0;
  uint64_t merges = 0;
};

class LiveIndex {
 public:
  static absl::StatusOr<std::unique_ptr<LiveIndex>> Open(const std::string& dir,
                                                         const LiveIndexOptions& options);
  // Stops the background refresh; what is buffered stays in the log for the next Open.
  ~LiveIndex();

  // Logs and applies `ops` in order. An invalid operation gets its INVALID_ARGUMENT and the others
  // still apply. When it returns, every applied operation is durable (LiveIndexOptions) and is
  // searchable after the next Refresh. The whole call fails (nothing applied) when the log cannot
  // take the records: RESOURCE_EXHAUSTED for a full disk, INTERNAL for other I/O errors.
  absl::StatusOr<std::vector<absl::StatusOr<WriteOutcome>>> Write(absl::Span<const Operation> ops);

  // Seals the buffered documents into a segment, applies the buffered deletes and publishes the
  // snapshot that shows them. A no-op when nothing is buffered.
  absl::Status Refresh();
  // Refresh, then a durable commit point; the log before it is dropped.
  absl::Status Flush();
  // Merges the segments into at most `max_segments`, dropping deleted documents, and waits for
  // it. The index built offline merges too (its files stay in DIR until it is rebuilt).
  absl::Status ForceMerge(size_t max_segments);
  // Runs the merge the policy picks now, if any; false when there was none.
  absl::StatusOr<bool> MaybeMerge();

  std::shared_ptr<const Snapshot> snapshot() const;
  LiveIndexStats stats() const;
  const std::string& directory() const { return dir_; }

 private:
  struct Buffered;
  LiveIndex(std::string dir, LiveIndexOptions options);

  absl::Status Load();
  // Opens the log (creating DIR/wal at the first write of an index built offline). Holds mu_.
  absl::Status OpenLog() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Names the calling thread and lowers it background_nice levels.
  void BecomeBackground(const char* name) const;
  void RefreshLoop();
  void MergeLoop();
  bool MergeOrStop() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(stop_mu_) {
    return stopping_ || merge_wanted_;
  }
  // Publishes a snapshot of `views`, one generation on. Holds mu_.
  void Publish(std::vector<SegmentView> views) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Merges the current snapshot's segments [range) into one and swaps it in, carrying the deletes
  // made meanwhile. Holds merge_mu_.
  absl::Status Merge(MergeRange range) ABSL_EXCLUSIVE_LOCKS_REQUIRED(merge_mu_);
  // Applies one operation (logged, or replayed from the log) to the buffer. Holds mu_.
  WriteOutcome Apply(const Operation& op) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `id` is searchable now or buffered, without a buffered delete.
  bool Holds(const std::string& id) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status RefreshLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A refresh's first step: syncs the log (a failure breaks the index) and names the segment the
  // buffered documents go to ("" when only deletes are buffered).
  absl::Status StartRefresh(std::string& name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `b`'s documents as segment `name` and opens it; null for "".
  absl::StatusOr<std::shared_ptr<Segment>> Seal(const Buffered& b, const std::string& name);
  // Applies `b`'s deletes to the segments, appends `sealed` and publishes the snapshot.
  absl::Status PublishRefresh(const Buffered& b, std::shared_ptr<Segment> sealed)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Puts `later`'s operations after `earlier`'s, as if they had been buffered together.
  static void Prepend(Buffered& earlier, const Buffered& later);
  absl::Status WriteCommitPoint() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes segment directories and commit points that the commit point does not name.
  void RemoveUnreferenced() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string dir_;
  const LiveIndexOptions options_;
  std::unique_ptr<WriteAheadLog> log_;
  // The writers' state: the buffer of the next refresh and the ids' versions.
  mutable absl::Mutex mu_;
  std::unique_ptr<Buffered> buffer_ ABSL_GUARDED_BY(mu_);
  // The buffer a refresh is sealing, outside mu_, while writes go to buffer_.
  const Buffered* sealing_ ABSL_GUARDED_BY(mu_) = nullptr;
  // Why the index takes no more writes or refreshes: a sync of the log failed, so what it held
  // may not be on disk (PostgreSQL's lesson of 2018: a failed fsync is not retried).
  absl::Status broken_ ABSL_GUARDED_BY(mu_);
  absl::Mutex refresh_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // one refresh or flush at a time
  std::atomic<uint64_t> sealed_bytes_{0};
  struct Version {
    uint64_t version = 0;
    bool deleted = false;  // a tombstone
  };
  absl::flat_hash_map<std::string, Version> versions_ ABSL_GUARDED_BY(mu_);
  uint64_t next_segment_ ABSL_GUARDED_BY(mu_) = 1;
  uint64_t commit_generation_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t refreshes_ ABSL_GUARDED_BY(mu_) = 0;
  // The log's last record that the snapshot's segments and deletes hold.
  uint64_t refreshed_through_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_indexed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t bytes_merged_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t merges_ ABSL_GUARDED_BY(mu_) = 0;
  absl::flat_hash_set<uint64_t> merging_ ABSL_GUARDED_BY(mu_);  // segment numbers being written
  absl::Mutex merge_mu_;                                        // one merge at a time
  bool live_directory_ ABSL_GUARDED_BY(mu_) = false;            // a commit point or a log exists
  // How segments are written, as the index the live index started from was (set by Load).
  index::IndexWriterOptions segment_options_;
  std::vector<index_builder::AttributeSpec> attribute_specs_;
  filter::BitmapCodec bitmap_codec_ = filter::BitmapCodec::kPlwah;
  bool store_text_ = false;
  mutable std::mutex snapshot_mu_;
  std::shared_ptr<const Snapshot> snapshot_;
  // The background refresh.
  mutable absl::Mutex stop_mu_;
  bool stopping_ ABSL_GUARDED_BY(stop_mu_) = false;
  bool merge_wanted_ ABSL_GUARDED_BY(stop_mu_) = true;
  std::thread refresher_;
  std::thread merger_;
};

}  // namespace tandem::live
