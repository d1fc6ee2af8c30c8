// File: replica_set.cc
#include "broker/replica_set.h"

#include <netdb.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

#include "absl/random/random.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/blocking_counter.h"
#include "base/thread_name.h"

namespace tandem::broker {

namespace {

constexpr char kSearchService[] = "tandem.v1.SearchService";

std::shared_ptr<grpc::Channel> NewChannel(const std::string& address,
                                          const std::shared_ptr<grpc::ChannelCredentials>& creds,
                                          int index) {
  grpc::ChannelArguments args;
  // Each channel its own connection: without a local pool (and a distinct argument), channels to
  // one address share one subchannel, and so one connection.
  args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
  args.SetInt("tandem.channel_index", index);
  // A node that restarts is reached again within a second, not after gRPC's default backoff of up
  // to two minutes: the health check decides when it gets queries again.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 1000);
  // gRPC reads the "minimum reconnect backoff" as the time a connection attempt gets to finish
  // its handshake (connection-backoff.md's MIN_CONNECT_TIMEOUT), not as a backoff. At 100 ms a
  // busy node, or a TLS handshake across zones, failed it, and the query that waited on it
  // ejected a live replica. Two seconds; attempts still start 100 ms to 1 s apart.
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 2000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 30000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  return grpc::CreateCustomChannel(
      address, creds != nullptr ? creds : grpc::InsecureChannelCredentials(), args);
}

ShardPlace PlaceOf(const tandem::v1::GetIndexInfoResponse& info) {
  ShardPlace place;
  place.index_id = info.index_id();
  if (info.has_shard()) {
    place.shard = info.shard().shard();
    place.shards = info.shard().shards();
    place.first_docid = info.shard().first_docid();
    place.collection_id = info.shard().collection_index_id();
  } else {
    place.collection_id = info.index_id();
  }
  return place;
}

}  // namespace

Replica::Replica(std::string address, std::vector<std::shared_ptr<grpc::Channel>> channels)
    : address_(std::move(address)),
      health_stub_(grpc::health::v1::Health::NewStub(channels[0])),
      index_stub_(tandem::v1::IndexService::NewStub(channels[0])) {
  for (const auto& channel : channels) {
    stubs_.push_back(tandem::v1::SearchService::NewStub(channel));
  }
}

std::optional<ShardPlace> Replica::place() const {
  absl::MutexLock lock(&mu_);
  if (!info_.has_value()) return std::nullopt;
  return PlaceOf(*info_);
}

std::optional<tandem::v1::GetIndexInfoResponse> Replica::info() const {
  absl::MutexLock lock(&mu_);
  return info_;
}

std::vector<uint32_t> Topology::UnservedShards() const {
  std::vector<uint32_t> unserved;
  for (uint32_t s = 0; s < shards; ++s) {
    const auto& list = replicas[s];
    if (std::none_of(list.begin(), list.end(), [](const auto& r) { return r->healthy(); })) {
      unserved.push_back(s);
    }
  }
  return unserved;
}

absl::StatusOr<std::pair<std::string, std::string>> ReplicaSet::SplitTarget(
    const std::string& target) {
  std::string host, port;
  if (absl::StartsWith(target, "[")) {
    const size_t close = target.find(']');
    if (close == std::string::npos || close + 1 >= target.size() || target[close + 1] != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat("replica '", target, "' is not [address]:port"));
    }
    host = target.substr(1, close - 1);
    port = target.substr(close + 2);
  } else {
    const size_t colon = target.rfind(':');
    if (colon == std::string::npos || target.find(':') != colon) {
      return absl::InvalidArgumentError(absl::StrCat("replica '", target, "' is not host:port"));
    }
    host = target.substr(0, colon);
    port = target.substr(colon + 1);
  }
  uint32_t number = 0;
  if (host.empty() || !absl::SimpleAtoi(port, &number) || number == 0 || number > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("replica '", target, "' needs a host and a port in 1..65535"));
  }
  return std::make_pair(host, port);
}

absl::StatusOr<std::vector<std::string>> ReplicaSet::ParseTargetsFile(const std::string& text) {
  std::vector<std::string> targets;
  int line_number = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_number;
    line = line.substr(0, line.find('#'));
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    absl::StatusOr<std::pair<std::string, std::string>> split = SplitTarget(std::string(line));
    if (!split.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("line ", line_number, ": ", split.status().message()));
    }
    targets.emplace_back(line);
  }
  return targets;
}

ReplicaSet::ReplicaSet(ReplicaSetOptions options) : options_(std::move(options)) {
  topology_ = std::make_shared<Topology>();
}

absl::StatusOr<std::unique_ptr<ReplicaSet>> ReplicaSet::Create(ReplicaSetOptions options) {
  for (const std::string& target : options.targets) {
    if (auto split = SplitTarget(target); !split.ok()) return split.status();
  }
  if (options.targets.empty() && options.targets_file.empty()) {
    return absl::InvalidArgumentError("no replicas: give --replicas or --replicas-file");
  }
  if (options.health_interval <= absl::ZeroDuration() ||
      options.health_timeout <= absl::ZeroDuration() ||
      options.refresh_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "health_interval, health_timeout and refresh_interval must be positive");
  }
  if (options.channels_per_replica < 1 || options.channels_per_replica > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("channels per replica must be 1 to 64, got ", options.channels_per_replica));
  }
  if (options.expected_shards.has_value() && *options.expected_shards == 0) {
    return absl::InvalidArgumentError("shards must be at least 1");
  }
  auto set = std::unique_ptr<ReplicaSet>(new ReplicaSet(std::move(options)));
  {
    absl::MutexLock lock(&set->round_mu_);
    if (!set->options_.targets_file.empty()) {
      absl::Status read = set->ReadTargetsFile();
      if (!read.ok()) return read;
    }
  }
  set->CheckNow();
  return set;
}

ReplicaSet::~ReplicaSet() {
  stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void ReplicaSet::Start(std::function<void(const Topology&)> on_check) {
  on_check_ = std::move(on_check);
  if (on_check_) on_check_(*topology());
  thread_ = std::thread([this] { Loop(); });
}

void ReplicaSet::Loop() {
  base::NameThread("tandem-replicas");
  while (!stop_.WaitForNotificationWithTimeout(options_.health_interval)) {
    CheckNow();
    if (on_check_) on_check_(*topology());
  }
}

std::shared_ptr<const Topology> ReplicaSet::topology() const {
  absl::ReaderMutexLock lock(&topology_mu_);
  return topology_;
}

absl::Status ReplicaSet::ReadTargetsFile() {
  struct stat st;
  if (::stat(options_.targets_file.c_str(), &st) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read replicas file ", options_.targets_file, ": not found"));
  }
  const std::string stamp =
      absl::StrCat(st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec, ":", st.st_ino);
  if (stamp == file_stamp_) return absl::OkStatus();
  std::ifstream in(options_.targets_file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot read replicas file ", options_.targets_file));
  }
  absl::StatusOr<std::vector<std::string>> targets = ParseTargetsFile(text.str());
  if (!targets.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("replicas file ", options_.targets_file, ", ", targets.status().message()));
  }
  file_targets_ = *std::move(targets);
  file_stamp_ = stamp;
  return absl::OkStatus();
}

void ReplicaSet::Resolve() {
  std::vector<std::string> targets = options_.targets;
  targets.insert(targets.end(), file_targets_.begin(), file_targets_.end());
  std::map<std::string, std::vector<std::string>> resolved;
  for (const std::string& target : targets) {
    if (resolved.count(target) > 0) continue;
    const auto [host, port] = *SplitTarget(target);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* result = nullptr;
    const int error = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &result);
    if (error != 0) {
      // Keep what the name resolved to before: a DNS hiccup is not a dead replica.
      if (auto before = resolved_.find(target); before != resolved_.end()) {
        resolved[target] = before->second;
      }
      const std::string line =
          absl::StrCat("cannot resolve replica ", target, ": ", ::gai_strerror(error));
      if (options_.log) {
        options_.log(line);
      } else {
        std::fprintf(stderr, "tandem-broker: %s\n", line.c_str());
      }
      continue;
    }
    std::set<std::string> addresses;
    for (addrinfo* a = result; a != nullptr; a = a->ai_next) {
      char text[NI_MAXHOST];
      if (::getnameinfo(a->ai_addr, a->ai_addrlen, text, sizeof(text), nullptr, 0,
                        NI_NUMERICHOST) != 0) {
        continue;
      }
      addresses.insert(a->ai_family == AF_INET6 ? absl::StrCat("[", text, "]:", port)
                                                : absl::StrCat(text, ":", port));
    }
    ::freeaddrinfo(result);
    resolved[target] = std::vector<std::string>(addresses.begin(), addresses.end());
  }
  resolved_ = std::move(resolved);

  std::map<std::string, std::shared_ptr<Replica>> replicas;
  for (const auto& [target, addresses] : resolved_) {
    for (const std::string& address : addresses) {
      if (replicas.count(address) > 0) continue;
      auto existing = replicas_.find(address);
      if (existing != replicas_.end()) {
        replicas[address] = existing->second;
        continue;
      }
      std::vector<std::shared_ptr<grpc::Channel>> channels;
      for (int c = 0; c < options_.channels_per_replica; ++c) {
        channels.push_back(NewChannel(address, options_.credentials, c));
      }
      replicas[address] = std::make_shared<Replica>(address, std::move(channels));
    }
  }
  replicas_ = std::move(replicas);
}

void ReplicaSet::CheckNow() {
  std::vector<std::shared_ptr<Replica>> replicas;
  absl::MutexLock round(&round_mu_);
  const absl::Time now = absl::Now();
  if (now >= next_refresh_) {
    if (!options_.targets_file.empty()) {
      if (absl::Status read = ReadTargetsFile(); !read.ok()) {
        // Keep serving the replicas read before; the file may be mid-edit.
        const std::string line = std::string(read.message());
        if (options_.log) {
          options_.log(line);
        } else {
          std::fprintf(stderr, "tandem-broker: %s\n", line.c_str());
        }
      }
    }
    Resolve();
    next_refresh_ = now + options_.refresh_interval;
  }
  for (const auto& [address, replica] : replicas_) replicas.push_back(replica);
  CheckReplicas(replicas);
  Publish(replicas);
}

void ReplicaSet::CheckReplicas(const std::vector<std::shared_ptr<Replica>>& replicas) {
  // Every replica at once, each a health check and then GetIndexInfo, on gRPC's callback threads.
  struct Probe {
    std::shared_ptr<Replica> replica;
    grpc::ClientContext health_context, info_context;
    grpc::health::v1::HealthCheckRequest health_request;
    grpc::health::v1::HealthCheckResponse health_response;
    tandem::v1::GetIndexInfoRequest info_request;
    tandem::v1::GetIndexInfoResponse info_response;
  };
  std::vector<std::unique_ptr<Probe>> probes;
  absl::BlockingCounter pending(static_cast<int>(replicas.size()));
  const auto deadline = absl::ToChronoTime(absl::Now() + options_.health_timeout);
  for (const std::shared_ptr<Replica>& replica : replicas) {
    probes.push_back(std::make_unique<Probe>());
    Probe* p = probes.back().get();
    p->replica = replica;
    p->health_request.set_service(kSearchService);
    p->health_context.set_deadline(deadline);
    p->info_context.set_deadline(deadline);
    replica->health_stub().async()->Check(
        &p->health_context, &p->health_request, &p->health_response,
        [this, p, &pending](grpc::Status status) {
          if (!status.ok() ||
              p->health_response.status() != grpc::health::v1::HealthCheckResponse::SERVING) {
            p->replica->healthy_.store(false);
            Say(*p->replica, status.ok()
                                 ? "not serving (draining or starting)"
                                 : absl::StrCat("health check failed: ", status.error_message()));
            pending.DecrementCount();
            return;
          }
          p->replica->stub().async()->GetIndexInfo(
              &p->info_context, &p->info_request, &p->info_response,
              [this, p, &pending](grpc::Status info_status) {
                if (info_status.ok()) {
                  {
                    absl::MutexLock lock(&p->replica->mu_);
                    p->replica->info_ = p->info_response;
                  }
                  p->replica->healthy_.store(true);
                } else {
                  p->replica->healthy_.store(false);
                  Say(*p->replica,
                      absl::StrCat("GetIndexInfo failed: ", info_status.error_message()));
                }
                pending.DecrementCount();
              });
        });
  }
  pending.Wait();
}

void ReplicaSet::Publish(const std::vector<std::shared_ptr<Replica>>& replicas) {
  // The collection most replicas serve (or the one with the expected shard count).
  std::map<std::pair<std::string, uint32_t>, int> votes;
  std::vector<std::pair<std::shared_ptr<Replica>, ShardPlace>> placed;
  for (const std::shared_ptr<Replica>& r : replicas) {
    std::optional<ShardPlace> place = r->place();
    if (!place.has_value()) continue;
    placed.emplace_back(r, *place);
    if (options_.expected_shards.has_value() && place->shards != *options_.expected_shards) {
      continue;
    }
    ++votes[{place->collection_id, place->shards}];
  }
  auto topology = std::make_shared<Topology>();
  if (!votes.empty()) {
    auto best = std::max_element(votes.begin(), votes.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    topology->collection_id = best->first.first;
    topology->shards = best->first.second;
  }
  topology->replicas.resize(topology->shards);
  topology->first_docid.assign(topology->shards, 0);
  // Per shard, the first docID most of its replicas report.
  std::vector<std::map<uint32_t, int>> first_votes(topology->shards);
  for (const auto& [r, place] : placed) {
    if (place.collection_id == topology->collection_id && place.shards == topology->shards &&
        place.shard < topology->shards) {
      ++first_votes[place.shard][place.first_docid];
    }
  }
  for (uint32_t s = 0; s < topology->shards; ++s) {
    if (first_votes[s].empty()) continue;
    topology->first_docid[s] =
        std::max_element(first_votes[s].begin(), first_votes[s].end(),
                         [](const auto& a, const auto& b) { return a.second < b.second; })
            ->first;
  }
  std::vector<std::string> indexes;
  for (const auto& [r, place] : placed) {
    const bool member = place.collection_id == topology->collection_id &&
                        place.shards == topology->shards && place.shard < topology->shards &&
                        place.first_docid == topology->first_docid[place.shard];
    if (!member) {
      r->healthy_.store(false);
      Say(*r, absl::StrCat("left out: serves shard ", place.shard, " of ", place.shards,
                           " of collection ", place.collection_id, ", not of ",
                           topology->collection_id, " (", topology->shards, " shards)"));
      continue;
    }
    indexes.push_back(place.index_id);
    topology->replicas[place.shard].push_back(r);
    if (r->healthy()) Say(*r, "");
  }
  std::sort(indexes.begin(), indexes.end());
  indexes.erase(std::unique(indexes.begin(), indexes.end()), indexes.end());
  absl::MutexLock lock(&topology_mu_);
  topology->generation = topology_->generation + (indexes != served_indexes_ ? 1 : 0);
  served_indexes_ = std::move(indexes);
  topology_ = std::move(topology);
}

void ReplicaSet::Say(Replica& replica, const std::string& problem) {
  std::string line;
  {
    absl::MutexLock lock(&replica.mu_);
    if (replica.last_problem_ == problem) return;
    replica.last_problem_ = problem;
    if (problem.empty()) {
      const ShardPlace place = PlaceOf(*replica.info_);
      line = absl::StrCat("replica ", replica.address(), " serves shard ", place.shard, " of ",
                          place.shards);
    } else {
      line = absl::StrCat("replica ", replica.address(), " ejected: ", problem);
    }
  }
  if (options_.log) {
    options_.log(line);
  } else {
    std::fprintf(stderr, "tandem-broker: %s\n", line.c_str());
  }
}

void ReplicaSet::ReportUnavailable(Replica& replica, const grpc::Status& status) {
  if (!replica.healthy_.exchange(false)) return;
  Say(replica, absl::StrCat("a query failed: ", status.error_message()));
}

std::shared_ptr<Replica> ReplicaSet::Pick(const Topology& topology, uint32_t shard,
                                          const std::vector<const Replica*>& tried) {
  if (shard >= topology.replicas.size()) return nullptr;
  std::vector<const std::shared_ptr<Replica>*> candidates;
  for (const std::shared_ptr<Replica>& r : topology.replicas[shard]) {
    if (r->healthy() && std::find(tried.begin(), tried.end(), r.get()) == tried.end()) {
      candidates.push_back(&r);
    }
  }
  if (candidates.empty()) return nullptr;
  if (candidates.size() == 1) return *candidates[0];
  thread_local absl::InsecureBitGen random;
  const size_t a = absl::Uniform<size_t>(random, 0, candidates.size());
  size_t b = absl::Uniform<size_t>(random, 0, candidates.size() - 1);
  if (b >= a) ++b;
  return (*candidates[a])->in_flight() <= (*candidates[b])->in_flight() ? *candidates[a]
                                                                        : *candidates[b];
}

}  // namespace tandem::broker
