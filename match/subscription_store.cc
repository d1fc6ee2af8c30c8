#include "match/subscription_store.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/stale_files.h"
#include "base/status_macros.h"

namespace tandem::match {

struct SubscriptionStore::Batch {
  std::string changes;  // EncodeChange's bytes
  bool done = false;    // guarded by the store's mu_
  absl::Status status;
};

namespace {

absl::Status WriteAll(int fd, absl::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::ErrnoToStatus(errno, absl::StrCat("write ", path));
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Writes a log of `frames` to a temporary name, fsynced, and returns its descriptor (open for
// appending) and name; the caller renames it into place.
absl::StatusOr<int> WriteLogFile(const std::string& tmp, absl::string_view frames) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return absl::ErrnoToStatus(errno, absl::StrCat("create ", tmp));
  absl::Status s = WriteAll(fd, LogHeader(), tmp);
  if (s.ok()) s = WriteAll(fd, frames, tmp);
  if (s.ok() && ::fsync(fd) != 0) s = absl::ErrnoToStatus(errno, absl::StrCat("fsync ", tmp));
  if (!s.ok()) {
    ::close(fd);
    std::remove(tmp.c_str());
    return s;
  }
  return fd;
}

}  // namespace

SubscriptionStore::SubscriptionStore(SubscriptionStoreOptions options)
    : options_(std::move(options)), log_path_(options_.path + ".log") {}

SubscriptionStore::~SubscriptionStore() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (compactor_.joinable()) compactor_.join();
  // Changes nobody waits for (the undoing of refused ones) are written before the node goes.
  if (open_ != nullptr && !broken_ && log_fd_ >= 0) (void)Append(FrameLogBatch(open_->changes));
  if (log_fd_ >= 0) ::close(log_fd_);
}

absl::StatusOr<SubscriptionSnapshot> SubscriptionStore::Load() {
  const size_t slash = options_.path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : options_.path.substr(0, slash);
  const std::string base =
      slash == std::string::npos ? options_.path : options_.path.substr(slash + 1);
  base::RemoveStaleSiblings(dir.empty() ? "/" : dir, base + ".tmp-");
  base::RemoveStaleSiblings(dir.empty() ? "/" : dir, base + ".log.tmp-");
  SubscriptionSnapshot snapshot;
  absl::StatusOr<SubscriptionSnapshot> loaded = ReadSubscriptionFile(options_.path);
  if (loaded.ok()) {
    snapshot = *std::move(loaded);
  } else if (!absl::IsNotFound(loaded.status())) {
    return loaded.status();
  }
  absl::StatusOr<SubscriptionLogContents> log = ReadSubscriptionLog(log_path_);
  if (absl::IsNotFound(log.status())) return snapshot;  // a file of a build without the log
  if (!log.ok()) return log.status();
  if (!log->torn.empty()) {
    std::fprintf(stderr,
                 "tandem: %s: dropped the end of the log, %s: a crash cut its last write short, "
                 "and none of its changes was acknowledged\n",
                 log_path_.c_str(), log->torn.c_str());
  }
  // Each change sets its subscription present or absent, so a change the snapshot already holds
  // replays to the same state.
  std::map<SubscriptionId, SubscriptionRecord> records;
  for (SubscriptionRecord& r : snapshot.records) records.emplace(r.id, std::move(r));
  for (SubscriptionChange& change : log->changes) {
    snapshot.next_id = std::max(snapshot.next_id, change.record.id + 1);
    if (change.remove) {
      records.erase(change.record.id);
    } else {
      records.insert_or_assign(change.record.id, std::move(change.record));
    }
  }
  snapshot.records.clear();
  for (auto& [id, r] : records) snapshot.records.push_back(std::move(r));
  return snapshot;
}

absl::Status SubscriptionStore::Start(Capture capture) {
  capture_ = std::move(capture);
  TANDEM_RETURN_IF_ERROR(Compact(/*repair=*/false));
  compactor_ = std::thread([this] { CompactLoop(); });
  return absl::OkStatus();
}

std::shared_ptr<SubscriptionStore::Batch> SubscriptionStore::Enqueue(const std::string& change) {
  std::lock_guard<std::mutex> lock(mu_);
  if (open_ == nullptr) open_ = std::make_shared<Batch>();
  open_->changes += change;
  return open_;
}

absl::Status SubscriptionStore::WaitDurable(const std::shared_ptr<Batch>& batch) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!batch->done) {
    if (writing_ || repairing_) {
      cv_.wait(lock);
      continue;
    }
    if (broken_) {
      // The open batch (ours among it) goes into the rewrite's snapshot.
      repairing_ = true;
      lock.unlock();
      (void)Compact(/*repair=*/true);
      lock.lock();
      repairing_ = false;
      cv_.notify_all();
      continue;
    }
    // Not done and nobody writing: ours is the open batch. Write it, with whatever joined it.
    std::shared_ptr<Batch> mine = std::move(open_);
    open_ = nullptr;
    writing_ = true;
    lock.unlock();
    const std::string frame = FrameLogBatch(mine->changes);
    const absl::Status s = Append(frame);
    lock.lock();
    writing_ = false;
    if (s.ok()) {
      log_bytes_ += frame.size();
      stats_.bytes_written += frame.size();
      ++stats_.log_writes;
      if (rotating_) since_capture_ += frame;
      if (static_cast<int64_t>(log_bytes_) > options_.compact_log_bytes &&
          log_bytes_ > snapshot_bytes_) {
        compact_wanted_ = true;
      }
    } else {
      broken_ = true;
    }
    mine->status = s;
    mine->done = true;
    cv_.notify_all();
  }
  return batch->status;
}

absl::Status SubscriptionStore::Append(const std::string& frame) {
  TANDEM_RETURN_IF_ERROR(WriteAll(log_fd_, frame, log_path_));
  if (::fdatasync(log_fd_) != 0) {
    return absl::ErrnoToStatus(errno, absl::StrCat("fdatasync ", log_path_));
  }
  // Writes to a file unlinked under the node succeed and are lost: refuse to acknowledge them.
  struct stat st;
  if (::fstat(log_fd_, &st) != 0) return absl::ErrnoToStatus(errno, "fstat " + log_path_);
  if (st.st_nlink == 0) {
    return absl::NotFoundError(absl::StrCat(log_path_, " was removed while the node ran"));
  }
  return absl::OkStatus();
}

absl::Status SubscriptionStore::Compact(bool repair) {
  std::lock_guard<std::mutex> one_at_a_time(compact_mu_);
  std::shared_ptr<Batch> covered;
  SubscriptionSnapshot snapshot = capture_([&] {
    std::lock_guard<std::mutex> lock(mu_);
    rotating_ = true;
    since_capture_.clear();
    if (repair) covered = std::exchange(open_, nullptr);
  });
  absl::Status s = WriteSubscriptionFile(options_.path, snapshot);
  struct stat st;
  const uint64_t snapshot_bytes =
      s.ok() && ::stat(options_.path.c_str(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;

  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !writing_; });
  writing_ = true;  // holds the log file while it is replaced
  const std::string frames = std::exchange(since_capture_, std::string());
  rotating_ = false;
  lock.unlock();
  int fd = -1;
  if (s.ok()) {
    const std::string tmp = log_path_ + base::PidTaggedSuffix(".tmp-");
    absl::StatusOr<int> written = WriteLogFile(tmp, frames);
    s = written.status();
    if (s.ok()) {
      fd = *written;
      if (std::rename(tmp.c_str(), log_path_.c_str()) != 0) {
        s = absl::ErrnoToStatus(errno, absl::StrCat("rename ", tmp, " to ", log_path_));
        std::remove(tmp.c_str());
      }
      if (s.ok()) s = FsyncDirectoryOf(log_path_);
      if (!s.ok()) ::close(std::exchange(fd, -1));
    }
  }
  lock.lock();
  if (s.ok()) {
    if (log_fd_ >= 0) ::close(log_fd_);
    log_fd_ = fd;
    log_bytes_ = LogHeader().size() + frames.size();
    snapshot_bytes_ = snapshot_bytes;
    stats_.bytes_written += snapshot_bytes + log_bytes_;
    ++stats_.compactions;
    broken_ = false;
  } else if (repair) {
    broken_ = true;
  }
  writing_ = false;
  if (covered != nullptr) {
    covered->status = s;
    covered->done = true;
  }
  cv_.notify_all();
  return s;
}

void SubscriptionStore::CompactLoop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stop_ || compact_wanted_; });
    if (stop_) return;
    compact_wanted_ = false;
    lock.unlock();
    if (absl::Status s = Compact(/*repair=*/false); !s.ok()) {
      std::fprintf(stderr, "tandem: cannot compact %s (the log keeps every change): %s\n",
                   log_path_.c_str(), s.ToString().c_str());
    }
    lock.lock();
  }
}

SubscriptionStoreStats SubscriptionStore::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

}  // namespace tandem::match
