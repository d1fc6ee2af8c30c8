#include "server/watch_hub.h"

#include <algorithm>
#include <utility>

#include "server/subscription_metrics.h"

namespace tandem::server {
namespace {

// WatchEvent.dropped is field 3, a varint.
constexpr uint8_t kDroppedTag = (3 << 3) | 0;

void AppendVarint(uint64_t value, std::string& out) {
  while (value >= 0x80) {
    out += static_cast<char>((value & 0x7f) | 0x80);
    value >>= 7;
  }
  out += static_cast<char>(value);
}

}  // namespace

bool WatchQueue::Push(EncodedEvent event) {
  if (events_.size() >= capacity_) {
    ++dropped_;
    return false;
  }
  events_.push_back(std::move(event));
  return true;
}

std::optional<std::string> WatchQueue::Pop() {
  if (events_.empty()) return std::nullopt;
  std::string bytes = *events_.front();
  events_.pop_front();
  // A field appended to an encoded message is read as if it were in it.
  if (dropped_ > 0) {
    bytes += static_cast<char>(kDroppedTag);
    AppendVarint(dropped_, bytes);
    dropped_ = 0;
  }
  return bytes;
}

// One Watch stream. gRPC allows one outstanding write: events wait in `queue_` and go out one at a
// time, each write started by whichever of Offer (an idle stream) or OnWriteDone (the previous
// write) comes first. The stream finishes once it is broken (cancelled, or a write failed) or
// closed and drained, and no write is outstanding; Finish is called after mu_ is released, since
// OnDone may run at once on another thread.
class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  WatchReactor(WatchHub& hub, std::string interface, size_t capacity)
      : hub_(hub), interface_(std::move(interface)), queue_(capacity) {}

  const std::string& interface() const { return interface_; }

  // Called by the hub, under its lock, once registered: the client may now rely on every Match
  // that starts after it has the initial metadata.
  void Start() { StartSendInitialMetadata(); }

  // Under the hub's lock. Returns whether the event was queued (false: dropped).
  bool Offer(const EncodedEvent& event) {
    absl::MutexLock lock(&mu_);
    if (broken_ || closing_) return true;  // the stream is ending: not a drop
    const bool queued = queue_.Push(event);
    if (!writing_) WriteNext();
    return queued;
  }

  // Under the hub's lock (which OnDone's Remove waits for, so `this` stays valid here).
  void Close() {
    std::optional<grpc::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      closing_ = true;
      finish = Advance();
    }
    if (finish) Finish(*finish);
  }

  void OnWriteDone(bool ok) override {
    std::optional<grpc::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      writing_ = false;
      if (!ok) broken_ = true;
      finish = Advance();
    }
    if (finish) Finish(*finish);
  }

  void OnCancel() override {
    std::optional<grpc::Status> finish;
    {
      absl::MutexLock lock(&mu_);
      broken_ = true;
      finish = Advance();
    }
    if (finish) Finish(*finish);
  }

  void OnDone() override {
    hub_.Remove(this);
    delete this;
  }

  // Finishes at once, for a stream the hub refused (never registered).
  void Refuse(const grpc::Status& status) {
    {
      absl::MutexLock lock(&mu_);
      finished_ = true;
    }
    Finish(status);
  }

 private:
  void WriteNext() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    std::optional<std::string> bytes = queue_.Pop();
    if (!bytes) return;
    grpc::Slice slice(*bytes);
    buffer_ = grpc::ByteBuffer(&slice, 1);
    writing_ = true;
    StartWrite(&buffer_);
  }

  // Starts the next write, or returns the status to finish with.
  std::optional<grpc::Status> Advance() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_) return std::nullopt;
    if (!broken_ && !writing_) WriteNext();
    if (writing_) return std::nullopt;
    if (broken_) {
      finished_ = true;
      return grpc::Status(grpc::StatusCode::CANCELLED, "watch cancelled");
    }
    if (closing_) {  // and everything queued is written
      finished_ = true;
      return grpc::Status::OK;
    }
    return std::nullopt;
  }

  WatchHub& hub_;
  const std::string interface_;
  absl::Mutex mu_;
  WatchQueue queue_ ABSL_GUARDED_BY(mu_);
  grpc::ByteBuffer buffer_ ABSL_GUARDED_BY(mu_);  // the outstanding write's bytes
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

WatchHub::WatchHub(const WatchHubOptions& options, SubscriptionMetrics* metrics)
    : options_(options), metrics_(metrics) {}

WatchHub::~WatchHub() = default;

grpc::ServerWriteReactor<grpc::ByteBuffer>* WatchHub::Watch(grpc::CallbackServerContext* context,
                                                            std::string interface) {
  auto* reactor = new WatchReactor(*this, std::move(interface), options_.queue_capacity);
  bool refused = false;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) {
      refused = true;
    } else {
      streams_[reactor->interface()].push_back(reactor);
      ++count_;
      if (metrics_ != nullptr) metrics_->SetWatchStreams(static_cast<int64_t>(count_));
      reactor->Start();
    }
  }
  if (refused) {
    // Never registered: Remove (from OnDone) finds nothing to remove.
    reactor->Refuse(grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is draining"));
  }
  return reactor;
}

bool WatchHub::Watched(absl::string_view interface) const {
  absl::ReaderMutexLock lock(&mu_);
  return streams_.contains(interface);
}

void WatchHub::Publish(absl::string_view interface, const EncodedEvent& event) {
  uint64_t dropped = 0;
  {
    absl::ReaderMutexLock lock(&mu_);
    auto it = streams_.find(interface);
    if (it == streams_.end()) return;
    for (WatchReactor* reactor : it->second) dropped += !reactor->Offer(event);
  }
  if (dropped > 0 && metrics_ != nullptr) metrics_->RecordWatchDrops(dropped);
}

void WatchHub::Close() {
  absl::MutexLock lock(&mu_);
  closed_ = true;
  for (auto& [interface, reactors] : streams_) {
    for (WatchReactor* reactor : reactors) reactor->Close();
  }
}

size_t WatchHub::streams() const {
  absl::ReaderMutexLock lock(&mu_);
  return count_;
}

void WatchHub::Remove(WatchReactor* reactor) {
  absl::MutexLock lock(&mu_);
  auto it = streams_.find(reactor->interface());
  if (it == streams_.end()) return;
  std::vector<WatchReactor*>& reactors = it->second;
  auto at = std::find(reactors.begin(), reactors.end(), reactor);
  if (at == reactors.end()) return;
  reactors.erase(at);
  if (reactors.empty()) streams_.erase(it);
  --count_;
  if (metrics_ != nullptr) metrics_->SetWatchStreams(static_cast<int64_t>(count_));
}

}  // namespace tandem::server
