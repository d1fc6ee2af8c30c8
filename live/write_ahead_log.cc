#include "live/write_ahead_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "live/wal_format.h"

namespace tandem::live {

struct WriteAheadLog::Writer {
  std::vector<absl::string_view> payloads;
  uint64_t first_seq = 0;
  absl::Status status;
  bool done = false;  // guarded by mu_
};

using wal::FileScan;
using wal::IoError;
using wal::RecordReader;

WriteAheadLog::WriteAheadLog(std::string dir, const WriteAheadLogOptions& options)
    : dir_(std::move(dir)), options_(options) {}

absl::StatusOr<std::unique_ptr<WriteAheadLog>> WriteAheadLog::Open(
    const std::string& dir, const WriteAheadLogOptions& options) {
  if (dir.empty()) return absl::InvalidArgumentError("the write-ahead log needs a directory");
  if (options.max_file_bytes == 0) {
    return absl::InvalidArgumentError("max_file_bytes must be positive");
  }
  if (options.max_payload_bytes == 0 || options.max_payload_bytes > UINT32_MAX) {
    return absl::InvalidArgumentError("max_payload_bytes must be in [1, 4 GiB - 1]");
  }
  if (!options.sync_on_append && options.sync_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("sync_interval must be positive without sync_on_append");
  }
  std::error_code ec;
  if (std::filesystem::create_directories(dir, ec)) {
    // The new directory's entry must reach the disk before any record in it is acknowledged.
    const std::string parent = std::filesystem::absolute(dir).parent_path().string();
    const int pfd = ::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (pfd < 0) return IoError(errno, "open", parent);
    const absl::Status s = wal::FsyncFd(pfd, parent);
    ::close(pfd);
    TANDEM_RETURN_IF_ERROR(s);
  } else if (ec) {
    return IoError(ec.value(), "create directory", dir);
  }

  std::unique_ptr<WriteAheadLog> log(new WriteAheadLog(dir, options));
  log->dir_fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (log->dir_fd_ < 0) return IoError(errno, "open", dir);
  // Two writers appending to one log would interleave their sequence numbers.
  if (::flock(log->dir_fd_, LOCK_EX | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) {
      return absl::FailedPreconditionError(
          absl::StrCat(dir, ": another write-ahead log has this directory open"));
    }
    return IoError(errno, "lock", dir);
  }

  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return IoError(errno, "list", dir);
  std::vector<LogFile> files;
  while (true) {
    errno = 0;  // readdir's end and its error look alike but for errno
    const dirent* e = ::readdir(d);
    if (e == nullptr) break;
    const absl::string_view name = e->d_name;
    uint64_t first = 0;
    if (wal::ParseFileName(name, &first)) {
      files.push_back({first, absl::StrCat(dir, "/", name)});
    } else if (absl::StartsWith(name, wal::kFilePrefix)) {
      // `name` lives in the directory stream: the message takes a copy before it is closed.
      absl::Status bad = absl::DataLossError(
          absl::StrCat(dir, "/", name, ": not a log file's name (expected ", wal::kFilePrefix,
                       " and ", wal::kFileDigits, " digits)"));
      ::closedir(d);
      return bad;
    }
  }
  const int list_errno = errno;
  ::closedir(d);
  if (list_errno != 0) return IoError(list_errno, "list", dir);
  std::sort(files.begin(), files.end(),
            [](const LogFile& a, const LogFile& b) { return a.first_seq < b.first_seq; });

  uint64_t next = 1;
  for (size_t i = 0; i < files.size(); ++i) {
    const LogFile& f = files[i];
    const bool last = i + 1 == files.size();
    if (i > 0 && f.first_seq != next) {
      return absl::DataLossError(absl::StrCat(
          f.path, ": starts at sequence number ", f.first_seq, " but the file before it ends at ",
          next - 1, f.first_seq > next ? ": records are missing" : ": records repeat"));
    }
    const int fd = ::open(f.path.c_str(), (last ? O_RDWR : O_RDONLY) | O_CLOEXEC);
    if (fd < 0) return IoError(errno, "open", f.path);
    absl::StatusOr<FileScan> scan = wal::ScanFile(fd, f.path, f.first_seq, last);
    if (scan.ok() && !last && scan->records == 0) {
      scan =
          absl::DataLossError(absl::StrCat(f.path, ": holds no record but is not the last file"));
    }
    if (scan.ok() && last) {
      // Cut a torn tail so that new records follow the last good one. The sync makes the cut
      // durable before anything is appended after it, and the records found durable too: a
      // process that crashed without sync_on_append may have left them in the page cache only.
      absl::Status s;
      if (scan->torn > 0 && ::ftruncate(fd, static_cast<off_t>(scan->end)) != 0) {
        s = IoError(errno, "truncate", f.path);
      }
      if (s.ok()) s = wal::FsyncFd(fd, f.path);
      if (!s.ok()) scan = s;
    }
    if (!scan.ok()) {
      ::close(fd);
      return scan.status();
    }
    next = f.first_seq + scan->records;
    if (last) {
      log->active_fd_ = fd;
      log->active_bytes_ = scan->end;
      log->active_path_ = f.path;
      if (scan->torn > 0) {
        log->torn_tail_bytes_ = scan->torn;
        log->torn_tail_message_ = absl::StrCat(
            f.path, ": cut ", scan->torn, " bytes off the end at byte ", scan->end, " (",
            scan->torn_what,
            "): a crash cut the last write short; the log ends at sequence number ", next - 1);
      }
    } else {
      ::close(fd);
    }
  }
  if (files.empty()) {
    TANDEM_RETURN_IF_ERROR(log->RollLocked(1));
  } else {
    log->files_ = std::move(files);
  }
  log->next_seq_ = next;
  log->last_seq_ = next - 1;
  log->durable_seq_ = next - 1;
  if (!options.sync_on_append) log->syncer_ = std::thread([l = log.get()] { l->SyncLoop(); });
  return log;
}

WriteAheadLog::~WriteAheadLog() {
  if (syncer_.joinable()) {
    {
      std::lock_guard<std::mutex> lock(stop_mu_);
      stop_ = true;
    }
    stop_cv_.notify_all();
    syncer_.join();
  }
  if (active_fd_ >= 0) {
    if (absl::Status s = Sync(); !s.ok()) {
      std::fprintf(stderr, "tandem: cannot sync the write-ahead log %s: %s\n", dir_.c_str(),
                   s.ToString().c_str());
    }
    ::close(active_fd_);
  }
  if (dir_fd_ >= 0) ::close(dir_fd_);  // releases the flock
}

absl::StatusOr<uint64_t> WriteAheadLog::Append(absl::string_view payload) {
  Writer writer;
  writer.payloads.push_back(payload);
  return Commit(&writer);
}

absl::StatusOr<uint64_t> WriteAheadLog::AppendBatch(absl::Span<const std::string> payloads) {
  if (payloads.empty()) return absl::InvalidArgumentError("an empty batch of log records");
  Writer writer;
  writer.payloads.assign(payloads.begin(), payloads.end());
  return Commit(&writer);
}

absl::StatusOr<uint64_t> WriteAheadLog::Commit(Writer* writer) {
  for (absl::string_view p : writer->payloads) {
    if (p.size() > options_.max_payload_bytes) {
      return absl::InvalidArgumentError(absl::StrCat(
          "a log record of ", p.size(), " bytes, over the limit of ", options_.max_payload_bytes));
    }
  }
  std::unique_lock<std::mutex> lock(mu_);
  pending_.push_back(writer);
  while (!writer->done) {
    if (leading_) {
      cv_.wait(lock);
      continue;
    }
    // No write in flight: lead, taking everyone queued so far. Those who queue during this
    // write wait for it and go together in the next.
    leading_ = true;
    std::vector<Writer*> group;
    group.swap(pending_);
    lock.unlock();
    WriteGroup(group);
    lock.lock();
    for (Writer* w : group) w->done = true;
    leading_ = false;
    cv_.notify_all();
  }
  if (!writer->status.ok()) return writer->status;
  return writer->first_seq;
}

void WriteAheadLog::WriteGroup(const std::vector<Writer*>& group) {
  std::lock_guard<std::mutex> io(io_mu_);
  absl::Status s = broken_;
  if (s.ok() && cut_pending_) s = CutBackLocked();
  if (s.ok() && active_bytes_ >= options_.max_file_bytes) s = RollLocked(next_seq_);
  uint64_t seq = next_seq_;
  if (s.ok()) {
    buffer_.clear();
    for (Writer* w : group) {
      w->first_seq = seq;
      for (absl::string_view p : w->payloads) wal::AppendRecord(seq++, p, &buffer_);
    }
    s = WriteLocked(buffer_);
  }
  if (s.ok()) {
    active_bytes_ += buffer_.size();
    next_seq_ = seq;
    records_.fetch_add(seq - group.front()->first_seq, std::memory_order_relaxed);
    bytes_.fetch_add(buffer_.size(), std::memory_order_relaxed);
    groups_.fetch_add(1, std::memory_order_relaxed);
    last_seq_.store(seq - 1, std::memory_order_release);
    if (options_.sync_on_append) durable_seq_.store(seq - 1, std::memory_order_release);
  }
  if (buffer_.capacity() > (size_t{4} << 20)) std::string().swap(buffer_);  // a huge group's memory
  for (Writer* w : group) w->status = s;
}

absl::Status WriteAheadLog::WriteLocked(absl::string_view bytes) {
  uint64_t offset = active_bytes_;
  absl::Status s;
  while (!bytes.empty()) {
    const ssize_t n = ::pwrite(active_fd_, bytes.data(), bytes.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      s = n < 0 ? IoError(errno, "write", active_path_)
                : absl::InternalError(absl::StrCat("write ", active_path_, ": wrote nothing"));
      break;
    }
    dirty_ = true;
    bytes.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
  if (s.ok() && options_.sync_on_append) {
    if (::fdatasync(active_fd_) == 0) {
      syncs_.fetch_add(1, std::memory_order_relaxed);
      dirty_ = false;
      return absl::OkStatus();
    }
    s = IoError(errno, "fdatasync", active_path_);
    // Only this group was unsynced; cut it back below. Beyond a full disk the kernel may have
    // dropped the group's pages and kept the error from any later fsync: trust nothing more.
    if (!absl::IsResourceExhausted(s)) broken_ = s;
  }
  if (s.ok()) return s;
  // A partial write leaves part of the group behind the last good record; cut it off so that the
  // next group starts there (a complete record of a refused group must never be read back).
  cut_pending_ = true;
  (void)CutBackLocked();  // retried before the next write when it fails
  return s;
}

absl::Status WriteAheadLog::CutBackLocked() {
  if (::ftruncate(active_fd_, static_cast<off_t>(active_bytes_)) != 0) {
    return IoError(errno, "truncate", active_path_);
  }
  // The cut must be on disk before the next group is written over it: else a crash could leave
  // the next group's records followed by complete records of the refused one, read back as if
  // they had been acknowledged.
  if (::fdatasync(active_fd_) != 0) {
    const absl::Status s = IoError(errno, "fdatasync", active_path_);
    if (!absl::IsResourceExhausted(s)) broken_ = s;  // as SyncLocked's: acknowledged pages
    return s;
  }
  syncs_.fetch_add(1, std::memory_order_relaxed);
  dirty_ = false;
  durable_seq_.store(last_seq_.load(std::memory_order_acquire), std::memory_order_release);
  cut_pending_ = false;
  return absl::OkStatus();
}

absl::Status WriteAheadLog::SyncLocked() {
  if (!broken_.ok()) return broken_;
  if (!dirty_) return absl::OkStatus();
  const uint64_t written = last_seq_.load(std::memory_order_acquire);
  if (::fdatasync(active_fd_) != 0) {
    // Records already acknowledged may be lost, and cutting them back would reuse their numbers.
    broken_ = IoError(errno, "fdatasync", active_path_);
    return broken_;
  }
  syncs_.fetch_add(1, std::memory_order_relaxed);
  dirty_ = false;
  durable_seq_.store(written, std::memory_order_release);
  return absl::OkStatus();
}

absl::Status WriteAheadLog::Sync() {
  std::lock_guard<std::mutex> io(io_mu_);
  return SyncLocked();
}

absl::Status WriteAheadLog::RollLocked(uint64_t next_seq) {
  // The file left behind must be complete on disk before records go to the next one.
  if (active_fd_ >= 0) TANDEM_RETURN_IF_ERROR(SyncLocked());
  const std::string path = absl::StrCat(dir_, "/", wal::FileName(next_seq));
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(errno, "create", path);
  // Its directory entry too: a record acknowledged in a file the directory forgot is lost.
  if (::fsync(dir_fd_) != 0) {
    const absl::Status s = IoError(errno, "fsync", dir_);
    ::close(fd);
    ::unlink(path.c_str());
    return s;
  }
  if (active_fd_ >= 0) ::close(active_fd_);
  active_fd_ = fd;
  active_bytes_ = 0;
  active_path_ = path;
  std::lock_guard<std::mutex> lock(files_mu_);
  files_.push_back({next_seq, path});
  return absl::OkStatus();
}

void WriteAheadLog::SyncLoop() {
  base::NameThread("tandem-wal-sync");
  std::unique_lock<std::mutex> lock(stop_mu_);
  bool reported = false;
  while (!stop_cv_.wait_for(lock, absl::ToChronoNanoseconds(options_.sync_interval),
                            [&] { return stop_; })) {
    lock.unlock();
    const absl::Status s = Sync();
    lock.lock();
    if (!s.ok() && !reported) {
      std::fprintf(stderr, "tandem: write-ahead log %s failed: %s\n", dir_.c_str(),
                   s.ToString().c_str());
      reported = true;
    }
  }
}

absl::Status WriteAheadLog::DropThrough(uint64_t seqno) {
  std::lock_guard<std::mutex> maintenance(maintenance_mu_);
  int dropped = 0;
  while (true) {
    std::string path;
    {
      std::lock_guard<std::mutex> lock(files_mu_);
      // A file's records end where the next file's begin; the last (active) file stays.
      if (files_.size() < 2 || files_[1].first_seq - 1 > seqno) break;
      path = files_.front().path;
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return IoError(errno, "remove", path);
    std::lock_guard<std::mutex> lock(files_mu_);
    files_.erase(files_.begin());
    ++dropped;
  }
  if (dropped > 0 && ::fsync(dir_fd_) != 0) return IoError(errno, "fsync", dir_);
  return absl::OkStatus();
}

uint64_t WriteAheadLog::first_sequence() const {
  std::lock_guard<std::mutex> lock(files_mu_);
  return files_.front().first_seq;
}

WriteAheadLogStats WriteAheadLog::stats() const {
  WriteAheadLogStats stats;
  stats.records = records_.load(std::memory_order_relaxed);
  stats.bytes = bytes_.load(std::memory_order_relaxed);
  stats.groups = groups_.load(std::memory_order_relaxed);
  stats.syncs = syncs_.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(files_mu_);
  stats.files = files_.size();
  return stats;
}

absl::Status WriteAheadLog::Replay(
    uint64_t after_seqno,
    const std::function<absl::Status(uint64_t seqno, absl::string_view payload)>& fn) const {
  std::lock_guard<std::mutex> maintenance(maintenance_mu_);
  const uint64_t last = last_sequence();
  std::vector<LogFile> files;
  {
    std::lock_guard<std::mutex> lock(files_mu_);
    files = files_;
  }
  if (after_seqno > last) {
    // Sequence numbers never go back, so a commit point past the end means lost records; appending
    // on would reuse numbers the commit point already covers.
    return absl::DataLossError(
        absl::StrCat(dir_, ": the log ends at sequence number ", last, ", before ", after_seqno,
                     ", which the caller's commit point covers: acknowledged records are gone"));
  }
  if (after_seqno == last) return absl::OkStatus();
  if (after_seqno + 1 < files.front().first_seq) {
    return absl::DataLossError(
        absl::StrCat(dir_, ": records ", after_seqno + 1, " to ", files.front().first_seq - 1,
                     " were dropped; the log starts at sequence number ", files.front().first_seq));
  }
  uint64_t expected = files.front().first_seq;
  for (size_t i = 0; i < files.size() && expected <= last; ++i) {
    const LogFile& f = files[i];
    if (f.first_seq != expected) {
      return absl::DataLossError(absl::StrCat(f.path, ": starts at sequence number ", f.first_seq,
                                              ", expected ", expected));
    }
    const uint64_t end = i + 1 < files.size() ? files[i + 1].first_seq : last + 1;
    if (end <= after_seqno + 1) {  // every record of this file is at or before after_seqno
      expected = end;
      continue;
    }
    const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return IoError(errno, "open", f.path);
    struct stat st;
    absl::Status s;
    if (::fstat(fd, &st) != 0) s = IoError(errno, "stat", f.path);
    RecordReader reader(fd, f.path, s.ok() ? static_cast<uint64_t>(st.st_size) : 0);
    while (s.ok() && expected < end) {
      uint64_t seqno = 0;
      absl::string_view payload;
      absl::StatusOr<RecordReader::Next> next = reader.Read(&seqno, &payload);
      if (!next.ok()) {
        s = next.status();
      } else if (*next == RecordReader::Next::kEnd) {
        break;  // the next file's name is checked against `expected`
      } else if (*next == RecordReader::Next::kDamaged || seqno != expected) {
        s = absl::DataLossError(absl::StrCat(
            f.path, ": ",
            *next == RecordReader::Next::kDamaged ? reader.damage() : "a wrong sequence number",
            " at byte ", reader.offset(), ", where sequence number ", expected,
            " was expected (the file changed since the log was opened)"));
      } else {
        ++expected;
        if (seqno > after_seqno) s = fn(seqno, payload);
      }
    }
    ::close(fd);
    TANDEM_RETURN_IF_ERROR(s);
  }
  if (expected <= last) {
    return absl::DataLossError(absl::StrCat(dir_, ": the log ends before sequence number ",
                                            expected, "; records through ", last, " were written"));
  }
  return absl::OkStatus();
}

}  // namespace tandem::live
