// File: subscription_registry.h
//
// The node's standing queries: subscriptions by id and interface (subscriber) name, persisted in a
// checksummed file replaced atomically, held by the CPU matcher and, on a node with a GPU, by the
// CCM matcher too; each Match goes to the engine the MatchRouter predicts faster (match_router.h).
//
// Durability: Subscribe and Unsubscribe return once the change is on disk, appended to a log
// beside the snapshot file and fsynced; concurrent changes share one append and one fsync (group
// commit), and the log is compacted into a new snapshot in the background (subscription_store.h).
// A change is visible to every Match that starts after it returns, on both engines.
//
//   TANDEM_ASSIGN_OR_RETURN(auto registry, SubscriptionRegistry::Open(options, std::move(cpu),
//                                                                     std::move(gpu_or_null)));
//   TANDEM_ASSIGN_OR_RETURN(SubscriptionId id, registry->Subscribe("alice", normalized));
//   TANDEM_ASSIGN_OR_RETURN(auto result, registry->Match(events));
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "match/matcher.h"
#include "match/model.h"

namespace tandem::match {

class MatchRouter;

enum class MatchEngine { kAuto, kCpu, kGpu };

// "auto" | "cpu" | "gpu"; INVALID_ARGUMENT otherwise.
absl::StatusOr<MatchEngine> ParseMatchEngine(absl::string_view name);

struct RegistryOptions {
  // The subscriptions file; empty keeps subscriptions in memory only (lost at exit).
  std::string path;
  Limits limits;
  MatchEngine engine = MatchEngine::kAuto;
  // Bounds on what the node holds: RESOURCE_EXHAUSTED beyond.
  int64_t max_subscriptions = 1'000'000;
  int64_t max_constraints = 50'000'000;
  int max_interface_bytes = 256;
  // Concurrent Match calls are matched together, up to this many events a batch.
  int max_batch_events = 4096;
  // The change log is compacted into a new snapshot once larger than this and the snapshot.
  int64_t compact_log_bytes = 1 << 20;
};

struct SubscriptionRecord {
  SubscriptionId id = 0;
  std::string interface;
  Predicate predicate;  // normalized
};

// What the registry has written to its files since it opened (subscription_store.h).
struct SubscriptionStoreStats {
  uint64_t bytes_written = 0;  // log frames and snapshots
  uint64_t log_writes = 0;     // frames appended, one fdatasync each
  uint64_t compactions = 0;    // snapshots written, the one at Open included
};

struct MatchResult {
  // Per event, the names of the matching interfaces, sorted.
  std::vector<std::vector<std::string>> interfaces;
  const char* engine = "";  // "cpu" | "gpu"
};

class SubscriptionRegistry {
 public:
  // Loads `options.path` and its log when they exist into both matchers, then writes a fresh
  // snapshot and an empty log. INVALID_ARGUMENT for bad options, DATA_LOSS for a damaged or
  // truncated snapshot or damage inside the log (naming the file and what is wrong; the node must
  // not start over it; a final log frame a crash cut short is dropped with a line on standard
  // error), FAILED_PRECONDITION for a file of another format version, the I/O error otherwise.
  // `gpu` may be null; `cpu` may not.
  static absl::StatusOr<std::unique_ptr<SubscriptionRegistry>> Open(const RegistryOptions& options,
                                                                    std::unique_ptr<Matcher> cpu,
                                                                    std::unique_ptr<Matcher> gpu);
  ~SubscriptionRegistry();

  // Adds a normalized predicate (NormalizePredicate) for `interface` and returns its new id.
  // INVALID_ARGUMENT for an empty, over-long or non-UTF-8 interface; RESOURCE_EXHAUSTED beyond the
  // limits; UNAVAILABLE, without paths, if the change cannot be saved (it is then undone, and the
  // I/O error goes to standard error).
  absl::StatusOr<SubscriptionId> Subscribe(absl::string_view interface, Predicate predicate);

  // NOT_FOUND for an unknown id; UNAVAILABLE as Subscribe's.
  absl::Status Unsubscribe(SubscriptionId id);

  // The interface of subscription `id`; NOT_FOUND for an unknown id.
  absl::StatusOr<std::string> InterfaceOf(SubscriptionId id) const;

  // The subscriptions of `interface`, or all when it is empty, by id.
  std::vector<SubscriptionRecord> List(absl::string_view interface) const;

  // Matches normalized events (MakeEvent) on the engine the router picks (or the one forced by
  // options.engine). Calls made while a batch is being matched are matched together next, as one
  // batch of at most options.max_batch_events (a larger call goes alone): concurrent small calls
  // share a launch.
  absl::StatusOr<MatchResult> Match(absl::Span<const Event> events);

  // Constraints the given events select (their attributes' and terms' rows): the work feature of
  // the router.
  int64_t SelectedConstraints(absl::Span<const Event> events) const;

  MatcherStats stats() const;  // the CPU matcher's, with device_bytes from the GPU's
  SubscriptionStoreStats store_stats() const;  // zeros without a file
  bool has_gpu() const;
  const RegistryOptions& options() const;

 private:
  struct State;
  explicit SubscriptionRegistry(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace tandem::match
