// File: watch_hub.h
//
// The Watch streams of tandem.v1.SubscriptionService: each open stream is registered under its
// interface, and every document a Match call matches for an interface is handed to that
// interface's streams. A stream never holds more than its queue's capacity of events: when a client
// reads too slowly (HTTP/2 flow control holds the stream's writes back) and its queue is full,
// newer events are dropped for that stream only and counted; the count rides on the next event it
// is sent (WatchEvent.dropped) and in tandem_watch_dropped_total. Matching never waits for a
// watcher.
//
// Events are encoded once per document and shared by every stream that queues them, and by the
// write that sends them (no copy per stream).
//
// Memory: the events all streams hold, queued or being written, are bounded together by
// WatchHubOptions::max_bytes and by the node's memory breaker, whose account they are reserved
// from; a shared event counts once, from when it is first queued until the last stream lets go of
// it. When an event does not fit, the streams whose queues hold the most bytes (the slowest
// readers) lose their newest queued events first, counted as their drops, until it fits; if a
// stream the event is for holds the most, the event is dropped for its streams instead. A reader
// that keeps up holds next to nothing, so it loses nothing while slow ones fill the bound. The
// breaker may also ask the hub to free bytes for queries (its reclaimer), taken the same way.
//
// Lifetime: the hub holds its streams' reactors under its lock; a reactor leaves the hub in OnDone,
// before it is deleted, so Publish never touches a deleted one. Lock order: the breaker's reclaim
// lock, the hub's lock, then a reactor's. Close() (the node drains) refuses new streams and ends
// each open one with OK once its queued events are written; a client's cancel ends its stream at
// once.
//
//   WatchHub hub({.queue_capacity = 1024, .max_bytes = 64 << 20, .breaker = &account}, &metrics);
//   return hub.Watch(context, "alice");  // in SubscriptionService::Watch
//   if (hub.Watched("alice")) hub.Publish({"alice"}, encoded_event);  // after a Match
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "base/memory_breaker.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"

namespace tandem::server {

class SubscriptionMetrics;

// One WatchEvent, encoded without its `dropped` field (that is per stream, appended when sent).
using EncodedEvent = std::shared_ptr<const std::string>;

// A stream's bounded queue of events and the count of those it dropped. Not thread-safe: its
// stream's lock guards it.
class WatchQueue {
 public:
  explicit WatchQueue(size_t capacity) : capacity_(capacity) {}

  // What an event of `encoded` bytes holds in memory while queued or written: its characters, the
  // shared string and its control block, the queue's slot and gRPC's slice around it.
  static uint64_t EventBytes(const std::string& encoded);

  // Queues `event`, or counts it dropped when the queue is full. Returns whether it was queued.
  bool Push(EncodedEvent event);

  // Drops the newest queued events until their EventBytes reach `bytes` or the queue is empty,
  // counting them; returns the events dropped and their EventBytes.
  std::pair<uint64_t, uint64_t> DropNewest(uint64_t bytes);

  // Counts an event dropped before it was queued.
  void CountDrop() { ++dropped_; }

  // The oldest event, and the `dropped` field to send after it: the events dropped since the last
  // one popped (empty when none). A field appended to an encoded message is read as if it were in
  // it.
  struct Popped {
    EncodedEvent event;
    std::string dropped;
    std::string Bytes() const { return *event + dropped; }
  };
  std::optional<Popped> Pop();

  size_t size() const { return events_.size(); }
  // EventBytes of the queued events.
  uint64_t bytes() const { return bytes_; }
  // Dropped and not yet reported by a popped event.
  uint64_t unreported_drops() const { return dropped_; }

 private:
  const size_t capacity_;
  std::deque<EncodedEvent> events_;
  uint64_t bytes_ = 0;
  uint64_t dropped_ = 0;
};

class WatchReactor;
class WatchLedger;

struct WatchHubOptions {
  size_t queue_capacity = 1024;             // events per stream (--watch-queue)
  uint64_t max_bytes = uint64_t{64} << 20;  // all streams' events together (--watch-queue-bytes)
  // The node's memory breaker, charged with every event held; null: none. Must outlive the hub
  // and every stream.
  base::MemoryBreaker::Account* breaker = nullptr;
};

class WatchHub {
 public:
  // `metrics` may be null; it must outlive the hub.
  WatchHub(const WatchHubOptions& options, SubscriptionMetrics* metrics);
  // Every stream must be done (the gRPC server shut down) before the hub is destroyed.
  ~WatchHub();

  // The reactor of a new Watch call for `interface`, registered before this returns; it sends the
  // stream's initial metadata once registered. After Close(), one that finishes UNAVAILABLE.
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Watch(grpc::CallbackServerContext* context,
                                                    std::string interface);

  // Whether any stream watches `interface` (a document matched for no watched interface need not
  // be encoded).
  bool Watched(absl::string_view interface) const;

  // Queues `event`, one document's, on every stream of `interfaces`; counts the drops.
  void Publish(absl::Span<const absl::string_view> interfaces, const EncodedEvent& event);

  // Refuses new streams and ends the open ones (with OK, after their queued events).
  void Close();

  size_t streams() const;
  // Bytes of the events the streams hold (WatchQueue::EventBytes once per event), queued or being
  // written.
  uint64_t bytes() const;

 private:
  friend class WatchReactor;
  void Remove(WatchReactor* reactor);
  // The stream whose queued events take the most bytes; null when none queues any.
  WatchReactor* Largest() const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Reserves `bytes` for an event of `targets`, dropping the newest queued events of the streams
  // holding the most until it fits; false (nothing reserved) when one of `targets` holds the most
  // or nothing is left to drop. Adds the events dropped to `dropped`.
  bool MakeRoom(uint64_t bytes, const std::vector<WatchReactor*>& targets, uint64_t& dropped)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // The breaker's reclaimer.
  void Reclaim(uint64_t bytes);

  const WatchHubOptions options_;
  SubscriptionMetrics* const metrics_;
  // Shared with every event it charged, which gives its bytes back when its last holder lets go
  // (possibly a gRPC thread releasing a sent slice).
  const std::shared_ptr<WatchLedger> ledger_;
  uint64_t reclaimer_id_ = 0;  // its reclaimer in the breaker's account
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::vector<WatchReactor*>> streams_ ABSL_GUARDED_BY(mu_);
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tandem::server
