#include "server/watch_hub.h"

#include <algorithm>
#include <atomic>
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

// The bytes of the events the streams hold, within the hub's bound and reserved from the breaker.
class WatchLedger {
 public:
  WatchLedger(uint64_t max_bytes, base::MemoryBreaker::Account* breaker)
      : max_bytes_(max_bytes), breaker_(breaker) {}

  bool Reserve(uint64_t bytes) {
    uint64_t used = bytes_.load(std::memory_order_relaxed);
    do {
      if (bytes > max_bytes_ || used > max_bytes_ - bytes) return false;
    } while (!bytes_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
    if (breaker_ != nullptr && !breaker_->TryReserve(bytes)) {
      bytes_.fetch_sub(bytes, std::memory_order_relaxed);
      return false;
    }
    return true;
  }

  void Release(uint64_t bytes) {
    bytes_.fetch_sub(bytes, std::memory_order_relaxed);
    if (breaker_ != nullptr) breaker_->Release(bytes);
  }

  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }

  // `event`, reserved for `bytes`, as an event that gives them back when its last holder (a
  // queue, or a slice being sent) lets go.
  static EncodedEvent Charge(std::shared_ptr<WatchLedger> ledger, EncodedEvent event,
                             uint64_t bytes) {
    auto charged = std::make_shared<Charged>(std::move(ledger), std::move(event), bytes);
    return EncodedEvent(charged, charged->event.get());
  }

 private:
  struct Charged {
    Charged(std::shared_ptr<WatchLedger> ledger, EncodedEvent event, uint64_t bytes)
        : ledger(std::move(ledger)), event(std::move(event)), bytes(bytes) {}
    ~Charged() { ledger->Release(bytes); }
    const std::shared_ptr<WatchLedger> ledger;
    const EncodedEvent event;
    const uint64_t bytes;
  };

  const uint64_t max_bytes_;
  base::MemoryBreaker::Account* const breaker_;
  std::atomic<uint64_t> bytes_{0};
};

uint64_t WatchQueue::EventBytes(const std::string& encoded) {
  // The characters' allocation, the shared string with its control blocks (the event's and its
  // charge's), the deque's slot, gRPC's slice, and malloc's header on each allocation.
  constexpr uint64_t kOverhead = sizeof(std::string) + 2 * 16 + 48 + sizeof(EncodedEvent) + 64;
  return encoded.capacity() + kOverhead;
}

bool WatchQueue::Push(EncodedEvent event) {
  if (events_.size() >= capacity_) {
    ++dropped_;
    return false;
  }
  bytes_ += EventBytes(*event);
  events_.push_back(std::move(event));
  return true;
}

std::pair<uint64_t, uint64_t> WatchQueue::DropNewest(uint64_t bytes) {
  uint64_t dropped = 0, freed = 0;
  while (!events_.empty() && freed < bytes) {
    freed += EventBytes(*events_.back());
    events_.pop_back();
    ++dropped;
  }
  bytes_ -= freed;
  dropped_ += dropped;
  return {dropped, freed};
}

std::optional<WatchQueue::Popped> WatchQueue::Pop() {
  if (events_.empty()) return std::nullopt;
  Popped popped{.event = std::move(events_.front()), .dropped = {}};
  events_.pop_front();
  bytes_ -= EventBytes(*popped.event);
  if (dropped_ > 0) {
    popped.dropped += static_cast<char>(kDroppedTag);
    AppendVarint(dropped_, popped.dropped);
    dropped_ = 0;
  }
  return popped;
}

// One Watch stream. gRPC allows one outstanding write: events wait in `queue_` and go out one at a
// time, each write started by whichever of Offer (an idle stream) or OnWriteDone (the previous
// write) comes first. The stream finishes once it is broken (cancelled, or a write failed) or
// closed and drained, and no write is outstanding; Finish is called after mu_ is released, since
// OnDone may run at once on another thread.
class WatchReactor final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
 public:
  enum class Offered { kQueued, kDropped, kEnding };

  WatchReactor(WatchHub& hub, std::string interface, size_t capacity)
      : hub_(hub), interface_(std::move(interface)), queue_(capacity) {}

  const std::string& interface() const { return interface_; }
  // The bytes of its queued events, read without its lock (the hub's choice of whom to drop).
  uint64_t queued_bytes() const { return queued_bytes_.load(std::memory_order_relaxed); }

  // Called by the hub, under its lock, once registered: the client may now rely on every Match
  // that starts after it has the initial metadata.
  void Start() { StartSendInitialMetadata(); }

  // Under the hub's lock.
  Offered Offer(const EncodedEvent& event) {
    absl::MutexLock lock(&mu_);
    if (broken_ || closing_) return Offered::kEnding;  // the stream is ending: not a drop
    const bool queued = queue_.Push(event);
    if (!writing_) WriteNext();
    queued_bytes_.store(queue_.bytes(), std::memory_order_relaxed);
    return queued ? Offered::kQueued : Offered::kDropped;
  }

  // Under the hub's lock: an event dropped before it was queued. Returns the drops counted.
  uint64_t CountDrop() {
    absl::MutexLock lock(&mu_);
    if (broken_ || closing_) return 0;
    queue_.CountDrop();
    return 1;
  }

  // Under the hub's lock: drops its newest queued events until `bytes` of them are gone (or none
  // is left); returns how many it dropped.
  uint64_t DropNewest(uint64_t bytes) {
    absl::MutexLock lock(&mu_);
    const uint64_t dropped = queue_.DropNewest(bytes).first;
    queued_bytes_.store(queue_.bytes(), std::memory_order_relaxed);
    return dropped;
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
      buffer_.Clear();
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
    std::optional<WatchQueue::Popped> popped = queue_.Pop();
    if (!popped) return;
    queued_bytes_.store(queue_.bytes(), std::memory_order_relaxed);
    // The slice shares the event's bytes, and holds the event (and its charge) until gRPC lets go
    // of it, whenever that is.
    auto* held = new EncodedEvent(std::move(popped->event));
    grpc::Slice slices[2] = {
        grpc::Slice(
            const_cast<char*>((*held)->data()), (*held)->size(),
            [](void* event) { delete static_cast<EncodedEvent*>(event); }, held),
        grpc::Slice(popped->dropped)};
    buffer_ = grpc::ByteBuffer(slices, popped->dropped.empty() ? 1 : 2);
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
  std::atomic<uint64_t> queued_bytes_{0};         // queue_.bytes()
  grpc::ByteBuffer buffer_ ABSL_GUARDED_BY(mu_);  // the outstanding write's bytes
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;
  bool closing_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

WatchHub::WatchHub(const WatchHubOptions& options, SubscriptionMetrics* metrics)
    : options_(options),
      metrics_(metrics),
      ledger_(std::make_shared<WatchLedger>(options.max_bytes, options.breaker)) {
  if (options_.breaker != nullptr) {
    reclaimer_id_ = options_.breaker->AddReclaimer([this](uint64_t bytes) { Reclaim(bytes); });
  }
}

WatchHub::~WatchHub() {
  if (options_.breaker != nullptr) options_.breaker->RemoveReclaimer(reclaimer_id_);
}

uint64_t WatchHub::bytes() const { return ledger_->bytes(); }

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

WatchReactor* WatchHub::Largest() const {
  WatchReactor* largest = nullptr;
  uint64_t most = 0;
  for (const auto& [interface, reactors] : streams_) {
    for (WatchReactor* reactor : reactors) {
      if (const uint64_t queued = reactor->queued_bytes(); queued > most) {
        most = queued;
        largest = reactor;
      }
    }
  }
  return largest;
}

bool WatchHub::MakeRoom(uint64_t bytes, const std::vector<WatchReactor*>& targets,
                        uint64_t& dropped) {
  while (!ledger_->Reserve(bytes)) {
    WatchReactor* largest = Largest();
    // A stream the event is for is the slowest: its streams lose the event.
    if (largest == nullptr || std::find(targets.begin(), targets.end(), largest) != targets.end()) {
      return false;
    }
    const uint64_t events = largest->DropNewest(bytes);
    dropped += events;
    if (events == 0) return false;  // its queue emptied meanwhile
  }
  return true;
}

void WatchHub::Reclaim(uint64_t bytes) {
  uint64_t dropped = 0;
  {
    absl::ReaderMutexLock lock(&mu_);
    const uint64_t held = ledger_->bytes();
    const uint64_t target = held > bytes ? held - bytes : 0;
    while (ledger_->bytes() > target) {
      WatchReactor* largest = Largest();
      if (largest == nullptr) break;
      const uint64_t events = largest->DropNewest(bytes);
      dropped += events;
      if (events == 0) break;
    }
  }
  if (dropped > 0 && metrics_ != nullptr) metrics_->RecordWatchDrops(dropped);
}

void WatchHub::Publish(absl::Span<const absl::string_view> interfaces, const EncodedEvent& event) {
  const uint64_t bytes = WatchQueue::EventBytes(*event);
  uint64_t dropped = 0;
  {
    absl::ReaderMutexLock lock(&mu_);
    std::vector<WatchReactor*> targets;
    for (absl::string_view interface : interfaces) {
      if (auto it = streams_.find(interface); it != streams_.end()) {
        targets.insert(targets.end(), it->second.begin(), it->second.end());
      }
    }
    if (targets.empty()) return;
    // Reserved once, given back when the last stream lets go of it (none: here).
    const EncodedEvent charged =
        MakeRoom(bytes, targets, dropped) ? WatchLedger::Charge(ledger_, event, bytes) : nullptr;
    for (WatchReactor* reactor : targets) {
      if (charged == nullptr) {
        dropped += reactor->CountDrop();
        continue;
      }
      dropped += reactor->Offer(charged) == WatchReactor::Offered::kDropped;
    }
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
