// File: replica_set.h
//
// The query nodes behind a broker: where they are, which shard each serves, and which are healthy.
//
// Replicas come from targets "host:port" given on the command line and in a file (one per line,
// `#` starts a comment) that is re-read when it changes. A host name stands for every address it
// resolves to, re-resolved at each refresh: a Kubernetes headless Service names all its pods. Each
// replica says itself which shard it serves (GetIndexInfo's ShardInfo; an index that is not a
// shard is shard 0 of 1), so targets need not be grouped by shard. The collection served is the
// one most replicas report (its index id and shard count, or the count `expected_shards` asks
// for); a replica of another collection is left out, and said so once.
//
// Health: every `health_interval`, each replica is asked grpc.health.v1 Check for
// tandem.v1.SearchService and, when SERVING, GetIndexInfo. A replica that fails is ejected until a
// later check passes; a query that fails on a replica with UNAVAILABLE ejects it at once
// (ReportUnavailable), so queries stop going there before the next check.
//
// Queries read an immutable Topology snapshot and pick replicas from it (Pick: the less loaded of
// two, by calls in flight).
//
//   TANDEM_ASSIGN_OR_RETURN(auto replicas, ReplicaSet::Create(options));
//   replicas->Start();
//   std::shared_ptr<const Topology> t = replicas->topology();
//   std::shared_ptr<Replica> r = ReplicaSet::Pick(*t, /*shard=*/0, /*tried=*/{});
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "tandem/v1/index.grpc.pb.h"
#include "tandem/v1/search.grpc.pb.h"

namespace tandem::broker {

// The shard a replica serves, from its GetIndexInfo.
struct ShardPlace {
  uint32_t shard = 0;
  uint32_t shards = 1;
  uint32_t first_docid = 0;
  std::string collection_id;  // ShardInfo.collection_index_id, or the index id of a whole index
  std::string index_id;
};

// One query node, at one address, reached over several channels (TCP connections): one HTTP/2
// connection carries a few tens of thousands of calls a second, less than a GPU node answers.
class Replica {
 public:
  // `channels` must not be empty.
  Replica(std::string address, std::vector<std::shared_ptr<grpc::Channel>> channels);

  const std::string& address() const { return address_; }
  // The next channel's stub, in turn.
  tandem::v1::SearchService::Stub& stub() {
    return *stubs_[next_.fetch_add(1, std::memory_order_relaxed) % stubs_.size()];
  }
  grpc::health::v1::Health::Stub& health_stub() { return *health_stub_; }
  // Writes and index administration (BrokerIndexService), on the first channel.
  tandem::v1::IndexService::Stub& index_stub() { return *index_stub_; }

  bool healthy() const { return healthy_.load(std::memory_order_relaxed); }
  // Calls in flight on this replica, for Pick.
  int in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  void CallStarted() { in_flight_.fetch_add(1, std::memory_order_relaxed); }
  void CallEnded() { in_flight_.fetch_sub(1, std::memory_order_relaxed); }

  std::optional<ShardPlace> place() const;
  // The replica's last GetIndexInfo answer (for the broker's own GetIndexInfo).
  std::optional<tandem::v1::GetIndexInfoResponse> info() const;

 private:
  friend class ReplicaSet;

  const std::string address_;
  std::vector<std::unique_ptr<tandem::v1::SearchService::Stub>> stubs_;
  std::unique_ptr<grpc::health::v1::Health::Stub> health_stub_;
  std::unique_ptr<tandem::v1::IndexService::Stub> index_stub_;
  std::atomic<uint32_t> next_{0};
  std::atomic<bool> healthy_{false};
  std::atomic<int> in_flight_{0};
  mutable absl::Mutex mu_;
  std::optional<tandem::v1::GetIndexInfoResponse> info_ ABSL_GUARDED_BY(mu_);
  // What was last said about it ("" for serving): each change is said once.
  std::optional<std::string> last_problem_ ABSL_GUARDED_BY(mu_);
};

// What the queries of a moment see: the collection and each shard's replicas of it, healthy or
// ejected (Pick takes healthy ones only).
struct Topology {
  std::string collection_id;  // empty: no replica has answered yet
  uint32_t shards = 0;
  // Per shard: the collection's docID of its first document, and its replicas.
  std::vector<uint32_t> first_docid;
  std::vector<std::vector<std::shared_ptr<Replica>>> replicas;
  // Changes whenever the set of indexes served changes (a shard rebuilt, another collection).
  uint64_t generation = 0;

  // Shards with no healthy replica.
  std::vector<uint32_t> UnservedShards() const;
};

struct ReplicaSetOptions {
  std::vector<std::string> targets = {};  // "host:port", "[v6]:port"
  std::string targets_file = {};          // re-read when its size or time changes
  // When set, only replicas of a collection cut into this many shards are used.
  std::optional<uint32_t> expected_shards = {};
  absl::Duration health_interval = absl::Seconds(1);
  absl::Duration health_timeout = absl::Milliseconds(500);
  absl::Duration refresh_interval = absl::Seconds(10);              // DNS and the targets file
  std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr;  // null: insecure
  int channels_per_replica = 4;
  // Lines about replicas (ejected, back, left out); null: standard error.
  std::function<void(const std::string&)> log = nullptr;
};

class ReplicaSet {
 public:
  // Parses the targets and reads the file; INVALID_ARGUMENT for a malformed target, a file that
  // cannot be read, or no target at all. Runs one refresh and health check before returning, so a
  // broker started after its nodes serves at once.
  static absl::StatusOr<std::unique_ptr<ReplicaSet>> Create(ReplicaSetOptions options);
  ~ReplicaSet();

  // Starts the background refresh and health checks; `on_check` runs after each round.
  void Start(std::function<void(const Topology&)> on_check = nullptr);

  std::shared_ptr<const Topology> topology() const;

  // Runs one round now: re-reads and re-resolves the targets when due, checks every replica and
  // publishes a new topology.
  void CheckNow();

  // A call to `replica` failed with UNAVAILABLE: it gets no more queries until a check passes.
  void ReportUnavailable(Replica& replica, const grpc::Status& status);

  // The less loaded of two healthy replicas of `shard` not in `tried` (Mitzenmacher's power of
  // two choices), or null when none is left.
  static std::shared_ptr<Replica> Pick(const Topology& topology, uint32_t shard,
                                       const std::vector<const Replica*>& tried);

  // Parses "host:port" or "[v6]:port" into host and port; INVALID_ARGUMENT naming the target.
  static absl::StatusOr<std::pair<std::string, std::string>> SplitTarget(const std::string& target);
  // The targets of a targets file's text.
  static absl::StatusOr<std::vector<std::string>> ParseTargetsFile(const std::string& text);

 private:
  explicit ReplicaSet(ReplicaSetOptions options);

  // The addresses of every target (resolved), keeping an unresolvable name's last addresses.
  void Resolve() ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  absl::Status ReadTargetsFile() ABSL_EXCLUSIVE_LOCKS_REQUIRED(round_mu_);
  void CheckReplicas(const std::vector<std::shared_ptr<Replica>>& replicas);
  void Publish(const std::vector<std::shared_ptr<Replica>>& replicas);
  void Say(Replica& replica, const std::string& problem);
  void Loop();

  const ReplicaSetOptions options_;
  // Rounds run one at a time (the background loop, CheckNow).
  absl::Mutex round_mu_;
  std::vector<std::string> file_targets_ ABSL_GUARDED_BY(round_mu_);
  std::string file_stamp_ ABSL_GUARDED_BY(round_mu_);
  std::map<std::string, std::vector<std::string>> resolved_ ABSL_GUARDED_BY(round_mu_);
  std::map<std::string, std::shared_ptr<Replica>> replicas_ ABSL_GUARDED_BY(round_mu_);
  absl::Time next_refresh_ ABSL_GUARDED_BY(round_mu_) = absl::InfinitePast();

  mutable absl::Mutex topology_mu_;  // read by every query: a reader lock
  std::shared_ptr<const Topology> topology_ ABSL_GUARDED_BY(topology_mu_);
  std::vector<std::string> served_indexes_ ABSL_GUARDED_BY(topology_mu_);

  std::function<void(const Topology&)> on_check_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace tandem::broker
