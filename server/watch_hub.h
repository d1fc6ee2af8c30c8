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
// Events are encoded once per document and shared by every stream that queues them.
//
// Lifetime: the hub holds its streams' reactors under its lock; a reactor leaves the hub in OnDone,
// before it is deleted, so Publish never touches a deleted one. Lock order: the hub's lock, then a
// reactor's. Close() (the node drains) refuses new streams and ends each open one with OK once its
// queued events are written; a client's cancel ends its stream at once.
//
//   WatchHub hub({.queue_capacity = 1024}, &metrics);
//   return hub.Watch(context, "alice");  // in SubscriptionService::Watch
//   if (hub.Watched("alice")) hub.Publish("alice", encoded_event);  // after a Match
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
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

  // Queues `event`, or counts it dropped when the queue is full. Returns whether it was queued.
  bool Push(EncodedEvent event);

  // The oldest event, encoded with the events dropped since the last one popped (its `dropped`);
  // nullopt when empty.
  std::optional<std::string> Pop();

  size_t size() const { return events_.size(); }
  // Dropped and not yet reported by a popped event.
  uint64_t unreported_drops() const { return dropped_; }

 private:
  const size_t capacity_;
  std::deque<EncodedEvent> events_;
  uint64_t dropped_ = 0;
};

class WatchReactor;

struct WatchHubOptions {
  size_t queue_capacity = 1024;  // events per stream (--watch-queue)
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

  // Queues `event` on every stream of `interface`; counts the drops.
  void Publish(absl::string_view interface, const EncodedEvent& event);

  // Refuses new streams and ends the open ones (with OK, after their queued events).
  void Close();

  size_t streams() const;

 private:
  friend class WatchReactor;
  void Remove(WatchReactor* reactor);

  const WatchHubOptions options_;
  SubscriptionMetrics* const metrics_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::vector<WatchReactor*>> streams_ ABSL_GUARDED_BY(mu_);
  size_t count_ ABSL_GUARDED_BY(mu_) = 0;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tandem::server
