// File: commit_point.h
//
// A live index's commit point, as Lucene's segments_N: which segments make the index, the docIDs
// deleted from each, the versions the index holds per id (tombstones of deleted ids included), and
// the last log record they hold. It is one framed file (index/file_format.h, kind "SEGMENTS")
// whose payload is JSON (FORMAT.md, "Live index"), written whole under a temporary name, fsynced
// and renamed to `segments_G`, so a reader finds the old commit point or the new one, never a
// mixture. The newest generation is the index.
//
//   TANDEM_ASSIGN_OR_RETURN(std::optional<CommitPoint> commit, ReadLatestCommitPoint(dir));
//   commit->generation += 1;  ...
//   TANDEM_RETURN_IF_ERROR(WriteCommitPointFile(dir, *commit));
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::live {

struct CommittedSegment {
  std::string name;               // "_3": DIR/_3; ".": DIR itself
  std::vector<uint32_t> deleted;  // sorted docIDs
};

struct CommittedVersion {
  uint64_t version = 0;
  bool deleted = false;
};

struct CommitPoint {
  uint64_t generation = 0;
  uint64_t next_segment = 1;  // the number of the next segment's name
  uint64_t log_sequence = 0;  // the last log record the segments and deletes hold
  std::vector<CommittedSegment> segments;
  std::map<std::string, CommittedVersion> versions;

  std::string ToJson() const;
  static absl::StatusOr<CommitPoint> FromJson(absl::string_view json);
};

// The newest commit point in `dir`; nullopt when there is none (an index built offline). A newest
// file that does not verify is DATA_LOSS naming it: it was fsynced before its rename, so it is
// damaged, and falling back to an older one would lose acknowledged writes silently.
absl::StatusOr<std::optional<CommitPoint>> ReadLatestCommitPoint(const std::string& dir);
// Writes `segments_G` for commit.generation (G) durably.
absl::Status WriteCommitPointFile(const std::string& dir, const CommitPoint& commit);
// Whether `file_name` is a commit point older than `generation`, or a temporary one.
bool IsStaleCommitPoint(absl::string_view file_name, uint64_t generation);

}  // namespace tandem::live
