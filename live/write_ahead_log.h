// File: write_ahead_log.h
//
// The live index's write-ahead log: every change is appended here, as an opaque payload with a
// sequence number, before it is acknowledged, and replayed after a crash on top of the last durable
// commit point. Once a commit point covers a prefix of the log, DropThrough deletes its files.
//
// Durability contract. With `sync_on_append` (the default) Append and AppendBatch return a
// sequence number only after the records are written and fdatasync'ed: an acknowledged record
// survives a crash of the process or of the machine. Appenders that arrive while a write is in
// flight queue up and are written and synced together by the next one of them, the leader (group
// commit: IMS Fast Path's, and PostgreSQL's XLogFlush, where one backend flushes the WAL for every
// commit queued behind it; the log force of ARIES): N concurrent appenders cost one write and one
// fdatasync per group, not one per record.
//
// With `sync_on_append = false` a record is acknowledged once it is in the operating system's page
// cache, and a background thread syncs every `sync_interval`. The risk: an acknowledged record
// survives a crash of the process, but a crash of the machine (power, kernel) may lose every record
// of the last interval, and the caller has already answered for them. Use it only where losing that
// interval is acceptable; Sync() makes every acknowledged record durable in either mode, and
// durable_sequence() says how far they are.
//
// Files. A directory of files named `log-<first sequence number, 20 decimal digits>`; the last is
// the one appended to, and a new one is started before a write when the current one has reached
// `max_file_bytes`. Sequence numbers start at 1, go up by one per record and are never reused, not
// even after DropThrough: an empty last file's name gives the next one. Each file is records back
// to back, with no file header; each record is, integers little-endian:
//
//   bytes 0..3    payload length L (uint32)
//   bytes 4..11   XXH3-64 of bytes 12..19+L (the sequence number and the payload)
//   bytes 12..19  sequence number (uint64)
//   bytes 20..    the payload, L bytes
//
// Recovery. Open reads and checks every record of every file. What a crash mid-write leaves at the
// end of the last file (an incomplete record, or a record whose checksum fails with no valid record
// after it) is cut off, the file truncated and fsynced, and reported by torn_tail_bytes() and
// torn_tail_message() for the caller to log; those records were never acknowledged as durable.
// Every other damage fails Open with DATA_LOSS naming the file and the byte offset: a bad record
// followed by a valid one, a bad record in a file that is not the last, a gap or a repeat in the
// sequence numbers, a file whose name disagrees with its first record. Nothing is skipped silently.
// (A machine crash that wrote a torn write's pages out of order can leave a valid record after a
// torn one; that too is DATA_LOSS, for the operator to judge, since the file cannot tell it from
// damage to acknowledged records.)
//
// Errors. A full disk (ENOSPC, EDQUOT, EFBIG) on a write or a sync gives RESOURCE_EXHAUSTED: the
// group's records are not acknowledged, their sequence numbers are not used, and the file is cut
// back to its last good record, so that appends succeed again once there is space. A failed
// fdatasync for any other reason (EIO), or any failed background sync, leaves the log failed: the
// kernel may have dropped the unsynced pages while reporting the error once (PostgreSQL's
// "fsyncgate", 2018), so no later call can be trusted and every one returns the error until the log
// is reopened, which checks what reached the disk. Other I/O errors are INTERNAL with the errno's
// text; a payload over `max_payload_bytes` is INVALID_ARGUMENT. All methods are thread-safe; one
// process at a time may open a directory (flock on it).
//
//   WriteAheadLogOptions options;
//   TANDEM_ASSIGN_OR_RETURN(auto log, WriteAheadLog::Open("/srv/live/wal", options));
//   if (log->torn_tail_bytes() > 0) LOG(WARNING) << log->torn_tail_message();
//   TANDEM_RETURN_IF_ERROR(log->Replay(commit.log_seqno, [&](uint64_t seqno, absl::string_view p) {
//     return buffer.Apply(seqno, p);
//   }));
//   TANDEM_ASSIGN_OR_RETURN(uint64_t seqno, log->Append(EncodeDocument(doc)));  // durable now
//   // A commit point covering `covered` is written only after the log is durable through it:
//   if (log->durable_sequence() < covered) TANDEM_RETURN_IF_ERROR(log->Sync());
//   ...  // write the commit point and make it durable, then:
//   TANDEM_RETURN_IF_ERROR(log->DropThrough(covered));
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "absl/types/span.h"

namespace tandem::live {

struct WriteAheadLogOptions {
  // Acknowledge a record only once it is fdatasync'ed (see the durability contract above).
  bool sync_on_append = true;
  // Without sync_on_append, how often the background thread syncs what was written.
  absl::Duration sync_interval = absl::Milliseconds(100);
  // A new file is started before a write once the current one holds this many bytes (a group is
  // never split, so a file may pass it by one group).
  uint64_t max_file_bytes = uint64_t{64} << 20;
  // Larger payloads are refused with INVALID_ARGUMENT; at most 4 GiB - 1 (the length is 32 bits).
  uint64_t max_payload_bytes = uint64_t{64} << 20;
};

// Counters since Open, for metrics.
struct WriteAheadLogStats {
  uint64_t records = 0;  // records appended
  uint64_t bytes = 0;    // bytes appended, record headers included
  uint64_t groups = 0;   // group writes: one write(2) each, one fdatasync each with sync_on_append
  uint64_t syncs = 0;    // fdatasync calls on log files
  uint64_t files = 0;    // log files in the directory now
};

class WriteAheadLog {
 public:
  // Opens the log in `dir`, creating the directory (and a first file) when missing, and checks
  // every file (see Recovery above). INVALID_ARGUMENT for bad options, FAILED_PRECONDITION when
  // another WriteAheadLog holds the directory, DATA_LOSS for damage, the I/O error otherwise.
  static absl::StatusOr<std::unique_ptr<WriteAheadLog>> Open(const std::string& dir,
                                                             const WriteAheadLogOptions& options);
  // Syncs what was written (a failure goes to standard error). No call may be in flight.
  ~WriteAheadLog();
  WriteAheadLog(const WriteAheadLog&) = delete;
  WriteAheadLog& operator=(const WriteAheadLog&) = delete;

  // Appends one record and returns its sequence number once acknowledged (durable with
  // sync_on_append). INVALID_ARGUMENT over max_payload_bytes; RESOURCE_EXHAUSTED on a full disk
  // (nothing kept: retry later); after a failed sync, that failure (see Errors above).
  absl::StatusOr<uint64_t> Append(absl::string_view payload);
  // Appends the records in one write, with consecutive sequence numbers, and returns the first:
  // all are acknowledged, or none. INVALID_ARGUMENT for an empty batch.
  absl::StatusOr<uint64_t> AppendBatch(absl::Span<const std::string> payloads);

  // Makes every acknowledged record durable (a no-op when nothing is unsynced).
  absl::Status Sync();

  // Deletes the files all of whose records have sequence numbers <= `seqno`, oldest first (a crash
  // midway leaves a suffix of the log). The file being appended to is kept. The write-ahead rule
  // is the caller's: a commit point covering `seqno` may be made durable only once
  // durable_sequence() >= `seqno` (Sync() first without sync_on_append).
  absl::Status DropThrough(uint64_t seqno);

  // Calls `fn` on every record with sequence number > `after_seqno`, in order, up to the last
  // acknowledged when Replay started; stops at and returns `fn`'s first error. DATA_LOSS when
  // records after `after_seqno` were already dropped, when `after_seqno` is past the log's end (a
  // commit point the log never reached: records it acknowledged are gone, or the directory was
  // replaced), or when a file was damaged since Open. Appends may go on meanwhile; `fn` may not
  // call Replay or DropThrough (they wait for each other).
  absl::Status Replay(
      uint64_t after_seqno,
      const std::function<absl::Status(uint64_t seqno, absl::string_view payload)>& fn) const;

  // The last sequence number acknowledged (or found by Open); 0 for an empty new log.
  uint64_t last_sequence() const { return last_seq_.load(std::memory_order_acquire); }
  // The last sequence number known durable (== last_sequence() with sync_on_append).
  uint64_t durable_sequence() const { return durable_seq_.load(std::memory_order_acquire); }
  // The first sequence number the retained files hold (last_sequence() + 1 when they hold none).
  uint64_t first_sequence() const;
  // What Open cut off the last file, and a line saying so (empty when nothing was cut).
  uint64_t torn_tail_bytes() const { return torn_tail_bytes_; }
  const std::string& torn_tail_message() const { return torn_tail_message_; }
  WriteAheadLogStats stats() const;
  const std::string& dir() const { return dir_; }

 private:
  struct Writer;
  struct LogFile {
    uint64_t first_seq = 0;
    std::string path;
  };

  WriteAheadLog(std::string dir, const WriteAheadLogOptions& options);
  absl::StatusOr<uint64_t> Commit(Writer* writer);
  void WriteGroup(const std::vector<Writer*>& group);
  absl::Status WriteLocked(absl::string_view bytes);
  absl::Status SyncLocked();
  absl::Status CutBackLocked();
  absl::Status RollLocked(uint64_t next_seq);
  void SyncLoop();

  const std::string dir_;
  const WriteAheadLogOptions options_;
  int dir_fd_ = -1;  // held open for the flock and for fsyncs of the directory

  // The queue of appenders waiting for a leader (group commit).
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Writer*> pending_;  // guarded by mu_
  bool leading_ = false;          // guarded by mu_: a leader is writing a group

  // The file being appended to; held by the leader for its write and sync, by Sync() and by a roll.
  mutable std::mutex io_mu_;
  int active_fd_ = -1;
  std::string active_path_;
  uint64_t active_bytes_ = 0;  // end of the last good record in the active file
  bool cut_pending_ = false;   // the file holds bytes past active_bytes_ that a cut-back left
  bool dirty_ = false;         // written since the last fdatasync
  uint64_t next_seq_ = 1;
  absl::Status broken_;  // set once a sync failed: every later call returns it
  std::string buffer_;   // the group being written

  mutable std::mutex files_mu_;
  std::vector<LogFile> files_;  // guarded by files_mu_; by first sequence; the last is active
  // DropThrough and Replay one at a time, so a replay never loses a file under it.
  mutable std::mutex maintenance_mu_;

  std::atomic<uint64_t> last_seq_{0};
  std::atomic<uint64_t> durable_seq_{0};
  std::atomic<uint64_t> records_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> groups_{0};
  std::atomic<uint64_t> syncs_{0};
  uint64_t torn_tail_bytes_ = 0;
  std::string torn_tail_message_;

  // The background syncer without sync_on_append.
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
  bool stop_ = false;  // guarded by stop_mu_
  std::thread syncer_;
};

}  // namespace tandem::live
