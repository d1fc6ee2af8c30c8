// File: wal_format.h
//
// The write-ahead log's files (write_ahead_log.h gives the format byte by byte): encoding records,
// reading a file's records back with their checksums checked, and telling what a crash leaves at
// the end of the log from damage. The log's own parts; callers use write_ahead_log.h.
//
//   std::string bytes;
//   wal::AppendRecord(seqno, payload, &bytes);
//   TANDEM_ASSIGN_OR_RETURN(wal::FileScan scan, wal::ScanFile(fd, path, first_seq, /*last=*/true));
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::live::wal {

inline constexpr size_t kHeaderBytes = 20;  // length 4, checksum 8, sequence number 8
inline constexpr absl::string_view kFilePrefix = "log-";
inline constexpr size_t kFileDigits = 20;

// ENOSPC, EDQUOT and EFBIG (a full disk, the one error a caller can wait out) as
// RESOURCE_EXHAUSTED, every other errno as INTERNAL; "WHAT PATH: strerror".
absl::Status IoError(int err, absl::string_view what, absl::string_view path);
absl::Status FsyncFd(int fd, absl::string_view path);

// Appends the record's header and payload to `out`.
void AppendRecord(uint64_t seqno, absl::string_view payload, std::string* out);

// "log-" and `first_seq` in 20 digits; ParseFileName is false for every other name (and for 0).
std::string FileName(uint64_t first_seq);
bool ParseFileName(absl::string_view name, uint64_t* first_seq);

// Reads a file's records in order through a buffer, checking each one's framing and checksum.
class RecordReader {
 public:
  enum class Next { kRecord, kEnd, kDamaged };

  RecordReader(int fd, std::string path, uint64_t size);

  // On kRecord, `seqno` and `payload` (valid until the next call) describe the record at offset();
  // on kDamaged, damage() says what is wrong with the bytes at offset(). I/O errors as IoError's.
  absl::StatusOr<Next> Read(uint64_t* seqno, absl::string_view* payload);
  uint64_t offset() const { return offset_; }
  const std::string& damage() const { return damage_; }

 private:
  absl::StatusOr<const char*> Bytes(uint64_t offset, uint64_t n);
  Next Damaged(std::string what);

  const int fd_;
  const std::string path_;
  const uint64_t size_;
  uint64_t offset_ = 0;
  uint64_t next_ = 0;
  uint64_t buffer_at_ = 0;
  std::string buffer_;
  std::string damage_;
};

struct FileScan {
  uint64_t records = 0;
  uint64_t end = 0;       // the end of the last good record
  uint64_t torn = 0;      // bytes past `end`: a torn tail, to be cut off
  std::string torn_what;  // what is wrong at `end`
};

// Checks every record of the file open at `fd`, whose name says it starts at `first_seq`. Damage
// is DATA_LOSS naming `path` and the byte offset, unless the file is the `last` and the damage is
// a torn tail: nothing valid after it (a crash tears only the last write).
absl::StatusOr<FileScan> ScanFile(int fd, const std::string& path, uint64_t first_seq, bool last);

}  // namespace tandem::live::wal
