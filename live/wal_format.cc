#include "live/wal_format.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace tandem::live::wal {
namespace {

constexpr size_t kReadChunk = size_t{1} << 20;

std::string ErrnoText(int err) {
  char buf[256];
  return ::strerror_r(err, buf, sizeof(buf));  // the GNU strerror_r returns the text
}

void Store32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void Store64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint64_t Load(const char* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t{static_cast<unsigned char>(p[i])} << (8 * i);
  return v;
}

absl::Status PreadAll(int fd, char* out, size_t n, uint64_t offset, absl::string_view path) {
  while (n > 0) {
    const ssize_t r = ::pread(fd, out, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return IoError(errno, "read", path);
    if (r == 0) return absl::DataLossError(absl::StrCat(path, " shrank while being read"));
    out += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return absl::OkStatus();
}

// Whether any offset past `from` holds a valid record numbered `expected` or later: a damaged
// record with one after it is not what a crash leaves at the end of the log (a crash tears only the
// last write), so the log is damaged in its middle.
absl::StatusOr<int64_t> ValidRecordAfter(int fd, const std::string& path, uint64_t from,
                                         uint64_t size, uint64_t expected) {
  std::string tail(size - from, '\0');
  TANDEM_RETURN_IF_ERROR(PreadAll(fd, tail.data(), tail.size(), from, path));
  // A record takes at least a header, so the tail holds at most this many sequence numbers; random
  // bytes rarely fall in the range, which keeps the checksums computed few.
  const uint64_t span = tail.size() / kHeaderBytes + 1;
  for (size_t p = 1; p + kHeaderBytes <= tail.size(); ++p) {
    const char* h = tail.data() + p;
    const uint64_t seqno = Load(h + 12, 8);
    if (seqno < expected || seqno - expected > span) continue;
    const uint64_t length = Load(h, 4);
    if (tail.size() - p - kHeaderBytes < length) continue;
    if (XXH3_64bits(h + 12, 8 + length) == Load(h + 4, 8)) return static_cast<int64_t>(from + p);
  }
  return -1;
}

}  // namespace

absl::Status IoError(int err, absl::string_view what, absl::string_view path) {
  std::string message = absl::StrCat(what, " ", path, ": ", ErrnoText(err));
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
    return absl::ResourceExhaustedError(std::move(message));
  }
  return absl::InternalError(std::move(message));
}

void AppendRecord(uint64_t seqno, absl::string_view payload, std::string* out) {
  const size_t at = out->size();
  out->resize(at + kHeaderBytes + payload.size());
  char* p = out->data() + at;
  Store32(p, static_cast<uint32_t>(payload.size()));
  Store64(p + 12, seqno);
  if (!payload.empty()) std::memcpy(p + kHeaderBytes, payload.data(), payload.size());
  Store64(p + 4, XXH3_64bits(p + 12, 8 + payload.size()));
}

std::string FileName(uint64_t first_seq) { return absl::StrFormat("log-%020d", first_seq); }

absl::Status FsyncFd(int fd, absl::string_view path) {
  if (::fsync(fd) != 0) return IoError(errno, "fsync", path);
  return absl::OkStatus();
}

RecordReader::RecordReader(int fd, std::string path, uint64_t size)
    : fd_(fd), path_(std::move(path)), size_(size) {}

absl::StatusOr<RecordReader::Next> RecordReader::Read(uint64_t* seqno, absl::string_view* payload) {
  offset_ = next_;
  if (offset_ == size_) return Next::kEnd;
  if (size_ - offset_ < kHeaderBytes) return Damaged("an incomplete record header");
  TANDEM_ASSIGN_OR_RETURN(const char* h, Bytes(offset_, kHeaderBytes));
  const uint64_t length = Load(h, 4);
  const uint64_t checksum = Load(h + 4, 8);
  if (size_ - offset_ - kHeaderBytes < length) {
    return Damaged(absl::StrCat("a record of ", length, " payload bytes past the file's end"));
  }
  TANDEM_ASSIGN_OR_RETURN(const char* r, Bytes(offset_, kHeaderBytes + length));
  if (XXH3_64bits(r + 12, 8 + length) != checksum) return Damaged("a checksum mismatch");
  *seqno = Load(r + 12, 8);
  *payload = absl::string_view(r + kHeaderBytes, length);
  next_ = offset_ + kHeaderBytes + length;
  return Next::kRecord;
}

RecordReader::Next RecordReader::Damaged(std::string what) {
  damage_ = std::move(what);
  return Next::kDamaged;
}

absl::StatusOr<const char*> RecordReader::Bytes(uint64_t offset, uint64_t n) {
  if (offset < buffer_at_ || offset + n > buffer_at_ + buffer_.size()) {
    buffer_.resize(std::max<uint64_t>(n, std::min<uint64_t>(kReadChunk, size_ - offset)));
    buffer_at_ = offset;
    TANDEM_RETURN_IF_ERROR(PreadAll(fd_, buffer_.data(), buffer_.size(), offset, path_));
  }
  return buffer_.data() + (offset - buffer_at_);
}

absl::StatusOr<FileScan> ScanFile(int fd, const std::string& path, uint64_t first_seq, bool last) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return IoError(errno, "stat", path);
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  RecordReader reader(fd, path, size);
  FileScan scan;
  while (true) {
    uint64_t seqno = 0;
    absl::string_view payload;
    TANDEM_ASSIGN_OR_RETURN(RecordReader::Next next, reader.Read(&seqno, &payload));
    if (next == RecordReader::Next::kEnd) break;
    const uint64_t expected = first_seq + scan.records;
    if (next == RecordReader::Next::kRecord) {
      if (seqno != expected) {
        return absl::DataLossError(absl::StrCat(
            path, ": the record at byte ", reader.offset(), " has sequence number ", seqno,
            scan.records == 0 ? ", but the file's name says it starts at " : ", expected ",
            expected));
      }
      ++scan.records;
      scan.end = reader.offset() + kHeaderBytes + payload.size();
      continue;
    }
    if (!last) {
      return absl::DataLossError(absl::StrCat(path, ": ", reader.damage(), " at byte ",
                                              reader.offset(), " in a file that is not the last"));
    }
    TANDEM_ASSIGN_OR_RETURN(int64_t valid,
                            ValidRecordAfter(fd, path, reader.offset(), size, expected));
    if (valid >= 0) {
      return absl::DataLossError(absl::StrCat(path, ": ", reader.damage(), " at byte ",
                                              reader.offset(),
                                              ", followed by a valid record at byte ", valid));
    }
    scan.torn = size - reader.offset();
    scan.torn_what = reader.damage();
    break;
  }
  return scan;
}

bool ParseFileName(absl::string_view name, uint64_t* first_seq) {
  if (name.size() != kFilePrefix.size() + kFileDigits || !absl::StartsWith(name, kFilePrefix))
    return false;
  uint64_t v = 0;
  for (char c : name.substr(kFilePrefix.size())) {
    if (c < '0' || c > '9') return false;
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return false;
    v = v * 10 + digit;
  }
  *first_seq = v;
  return v > 0;
}

}  // namespace tandem::live::wal
