// File: subscription_store.h
//
// Where SubscriptionRegistry keeps its subscriptions durable: a snapshot (PATH) and a log of the
// changes since it (PATH.log), both in subscription_file.h's formats. A change costs one append
// of its own bytes instead of a rewrite of every subscription:
//
// - Group commit. A change is encoded into the open batch under the registry's lock (so the log's
//   order is the order the changes were made in); its caller then waits until the batch is
//   durable. The first waiter to find no write in progress writes the open batch as one frame and
//   fdatasyncs once for every change in it; the others wait for it.
// - Compaction. Once the log is larger than both the snapshot and `compact_log_bytes`, a
//   background thread writes a new snapshot of the registry's state, then a new log holding the
//   frames appended since that state was taken, and renames each over the old (the directory
//   fsynced after each, so the new log is never seen without the new snapshot). Appends go on
//   meanwhile. Replay is idempotent, so a crash between the renames loses nothing.
// - A failed write (an I/O error, or the log file unlinked under the node) fails every change of
//   its batch and marks the log broken: the next change rewrites both files from the registry's
//   state first, and is refused if that fails too.
//
//   SubscriptionStore store(options);
//   TANDEM_ASSIGN_OR_RETURN(SubscriptionSnapshot loaded, store.Load());
//   ... apply `loaded` ...
//   TANDEM_RETURN_IF_ERROR(store.Start(capture));   // writes a fresh snapshot and an empty log
//   auto batch = store.Enqueue(bytes);              // under the registry's exclusive lock
//   TANDEM_RETURN_IF_ERROR(store.WaitDurable(batch));
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "match/subscription_file.h"

namespace tandem::match {

struct SubscriptionStoreOptions {
  std::string path;  // the snapshot; the log is path + ".log"
  // The log is compacted once it holds more bytes than both this and the last snapshot.
  int64_t compact_log_bytes = 1 << 20;
};

class SubscriptionStore {
 public:
  struct Batch;

  // Takes the registry's state for a snapshot: it must hold the registry's lock (shared) while it
  // copies the subscriptions and calls `while_locked` once, so that no change is made between.
  using Capture = std::function<SubscriptionSnapshot(const std::function<void()>& while_locked)>;

  explicit SubscriptionStore(SubscriptionStoreOptions options);
  ~SubscriptionStore();  // stops the compaction thread

  // The snapshot with the log replayed over it. A log whose last frame a crash cut short loses that
  // frame (none of its changes was acknowledged), with a line on standard error. DATA_LOSS for a
  // damaged snapshot or damage inside the log, FAILED_PRECONDITION for another version, each naming
  // its file; NOT_FOUND never (no files: no subscriptions).
  absl::StatusOr<SubscriptionSnapshot> Load();

  // Writes a snapshot (`capture`) and an empty log, and starts compacting in the background. The
  // write's error, naming the files, when the path is not writable.
  absl::Status Start(Capture capture);

  // Adds a change's bytes (EncodeChange) to the open batch. The caller holds the registry's lock
  // exclusively, which orders the log as the changes were made.
  std::shared_ptr<Batch> Enqueue(const std::string& change);

  // Returns once `batch` is durable, or with the error of the write that failed it.
  absl::Status WaitDurable(const std::shared_ptr<Batch>& batch);

  SubscriptionStoreStats stats() const;

 private:
  absl::Status Append(const std::string& frame);
  // A new snapshot and log. With `repair`, the open batch is taken into the snapshot and completed
  // by it (the log is broken and cannot take it).
  absl::Status Compact(bool repair);
  void CompactLoop();

  const SubscriptionStoreOptions options_;
  const std::string log_path_;
  Capture capture_;
  std::mutex compact_mu_;  // one compaction at a time

  mutable std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::shared_ptr<Batch> open_;  // changes not yet taken by a writer
  bool writing_ = false;         // a writer holds the log file
  bool repairing_ = false;       // a waiter is rewriting both files
  bool broken_ = false;          // a write failed: the next change rewrites both files
  int log_fd_ = -1;
  uint64_t log_bytes_ = 0;
  uint64_t snapshot_bytes_ = 0;
  bool rotating_ = false;      // a compaction is under way: frames are kept for its new log
  std::string since_capture_;  // the frames appended since its capture
  bool compact_wanted_ = false;
  bool stop_ = false;
  SubscriptionStoreStats stats_;
  std::thread compactor_;
};

}  // namespace tandem::match
