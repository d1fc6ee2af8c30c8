// File: subscription_file.h
//
// The files that keep a node's subscriptions across restarts. The snapshot is framed and
// checksummed like every index file (index/file_format.h, kind `SUBSCRIB`), written whole to a
// process-tagged temporary name, fsynced, renamed over the old file, and the directory fsynced, so
// a crash leaves either the old snapshot or the new one. Changes since the snapshot are appended to
// a log beside it (PATH.log). Layout in index/FORMAT.md ("Subscriptions").
//
//   TANDEM_RETURN_IF_ERROR(WriteSubscriptionFile(path, snapshot));
//   TANDEM_ASSIGN_OR_RETURN(SubscriptionSnapshot loaded, ReadSubscriptionFile(path));
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "match/subscription_registry.h"

namespace tandem::match {

struct SubscriptionSnapshot {
  SubscriptionId next_id = 1;  // the id the next Subscribe gets: ids are never reused
  std::vector<SubscriptionRecord> records;
};

absl::Status WriteSubscriptionFile(const std::string& path, const SubscriptionSnapshot& snapshot);

// NOT_FOUND when the file does not exist; DATA_LOSS naming the file and the problem when it is
// truncated, damaged or malformed (a bad operator, type, count or id); FAILED_PRECONDITION for
// another format version.
absl::StatusOr<SubscriptionSnapshot> ReadSubscriptionFile(const std::string& path);

// Fsyncs the directory that holds `path`, so a rename into it is durable.
absl::Status FsyncDirectoryOf(const std::string& path);

// The change log beside the snapshot (PATH.log; layout in index/FORMAT.md): each group commit
// appends one checksummed frame of changes, fsynced before any of them is acknowledged. Replaying
// it over the snapshot, each change setting its subscription present (add) or absent (remove),
// gives the node's subscriptions; a change already in the snapshot replays to the same state, so
// a crash between a compaction's two renames loses nothing.
struct SubscriptionChange {
  bool remove = false;
  SubscriptionRecord record;  // a removal's only field is the id
};

// Appends one change's bytes to `out` (a frame's body).
void EncodeChange(const SubscriptionChange& change, std::string* out);
// The frame that holds `changes` (EncodeChange's bytes, one or more).
std::string FrameLogBatch(absl::string_view changes);
// The log's header, the bytes of an empty log.
std::string LogHeader();

struct SubscriptionLogContents {
  std::vector<SubscriptionChange> changes;
  uint64_t valid_bytes = 0;  // header and whole frames
  // Why the bytes past valid_bytes were dropped (a final frame a crash cut short); empty if none.
  std::string torn;
};

// DATA_LOSS for a bad header or a damaged frame with more of the log after it (a torn final frame
// is not an error: see `torn`); FAILED_PRECONDITION for another log version.
absl::StatusOr<SubscriptionLogContents> DecodeSubscriptionLog(absl::string_view bytes);
// As DecodeSubscriptionLog, the message naming the file; NOT_FOUND when it does not exist.
absl::StatusOr<SubscriptionLogContents> ReadSubscriptionLog(const std::string& path);

// The payload alone, for the fuzzer: DATA_LOSS as above.
absl::StatusOr<SubscriptionSnapshot> DecodeSubscriptions(absl::string_view payload);
std::string EncodeSubscriptions(const SubscriptionSnapshot& snapshot);

}  // namespace tandem::match
