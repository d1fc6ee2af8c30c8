// File: broker_index_service.cc
#include "broker/broker_index_service.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "broker/shard_hash.h"

namespace tandem::broker {
namespace {

using tandem::v1::IndexService;
using tandem::v1::WriteOperation;
using tandem::v1::WriteRequest;
using tandem::v1::WriteResponse;

std::string Where(uint32_t shard, const Replica& replica) {
  return absl::StrCat("shard ", shard, " replica ", replica.address());
}

// The client's deadline, when it set one, bounds the calls to the replicas.
void CopyDeadline(const grpc::ServerContext& from, grpc::ClientContext& to) {
  const auto deadline = from.deadline();
  if (deadline < std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
    to.set_deadline(deadline);
  }
}

grpc::Status NoShardsYet() {
  return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                      "no replica has answered yet: the shards are unknown");
}

// One replica's Write stream for the whole call.
struct ReplicaStream {
  std::shared_ptr<Replica> replica;
  grpc::ClientContext context;
  WriteResponse response;
  std::unique_ptr<grpc::ClientWriter<WriteRequest>> writer;
  bool broken = false;  // the replica ended the stream early: Finish says why
};

// The operations of one shard, in stream order, and the first failure of each.
struct ShardWrites {
  std::vector<uint64_t> positions;  // in the client's stream
  std::vector<std::string> ids;
  std::vector<int> failure;  // index into WriteState::failures, -1: none yet
  std::vector<std::unique_ptr<ReplicaStream>> streams;
  bool opened = false;
};

struct Failure {
  int code = 0;  // google.rpc.Code
  std::string message;
};

struct WriteState {
  std::vector<ShardWrites> shards;
  std::vector<Failure> failures;
  // Refused at the broker (no operation named), by position.
  std::vector<std::pair<uint64_t, Failure>> local;

  void Fail(uint32_t shard, size_t i, int code, std::string message) {
    ShardWrites& w = shards[shard];
    if (i >= w.failure.size() || w.failure[i] >= 0) return;
    w.failure[i] = static_cast<int>(failures.size());
    failures.push_back({code, std::move(message)});
  }
  void FailAll(uint32_t shard, int code, const std::string& message) {
    for (size_t i = 0; i < shards[shard].positions.size(); ++i) Fail(shard, i, code, message);
  }
};

// What one replica's finished stream says about its shard's operations.
void TakeReplicaAnswer(WriteState& state, uint32_t shard, const ReplicaStream& stream,
                       const grpc::Status& status, bool count, WriteResponse& total) {
  const std::string where = Where(shard, *stream.replica);
  if (!status.ok()) {
    state.FailAll(shard, static_cast<int>(status.error_code()),
                  absl::StrCat(where, ": ", status.error_message()));
    return;
  }
  size_t last_listed = 0;
  for (const tandem::v1::WriteError& e : stream.response.errors()) {
    state.Fail(shard, e.operation(), e.code(), absl::StrCat(where, ": ", e.message()));
    last_listed = std::max<size_t>(last_listed, e.operation() + 1);
  }
  // The node lists its first refusals only: those after them cannot be told from acknowledged
  // ones, so none of them counts as acknowledged.
  if (stream.response.refused() > static_cast<uint64_t>(stream.response.errors_size())) {
    const int code = stream.response.errors().empty() ? static_cast<int>(grpc::StatusCode::UNKNOWN)
                                                      : stream.response.errors().rbegin()->code();
    for (size_t i = last_listed; i < state.shards[shard].positions.size(); ++i) {
      state.Fail(shard, i, code,
                 absl::StrCat(where, ": refused more operations than it lists; this one may be ",
                              "among them"));
    }
  }
  if (count) {
    total.set_stale(total.stale() + stream.response.stale());
    total.set_not_found(total.not_found() + stream.response.not_found());
  }
}

void OpenStreams(const Topology& topology, uint32_t shard, const grpc::ServerContext& context,
                 ShardWrites& writes) {
  writes.opened = true;
  for (const std::shared_ptr<Replica>& replica : topology.replicas[shard]) {
    auto stream = std::make_unique<ReplicaStream>();
    stream->replica = replica;
    CopyDeadline(context, stream->context);
    stream->writer = replica->index_stub().Write(&stream->context, &stream->response);
    writes.streams.push_back(std::move(stream));
  }
}

template <typename Response>
struct ReplicaCall {
  uint32_t shard = 0;
  std::shared_ptr<Replica> replica;
  Response response;
  grpc::Status status;
};

template <typename Response>
using StubCall = std::function<grpc::Status(IndexService::Stub&, grpc::ClientContext*, Response*)>;

// Calls each of `targets` at once, a thread each (administration is rare), and waits for all.
template <typename Response>
std::vector<ReplicaCall<Response>> CallEach(
    const std::vector<std::pair<uint32_t, std::shared_ptr<Replica>>>& targets,
    const grpc::ServerContext& context, const StubCall<Response>& call) {
  std::vector<ReplicaCall<Response>> calls(targets.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < targets.size(); ++i) {
    calls[i].shard = targets[i].first;
    calls[i].replica = targets[i].second;
    threads.emplace_back([&, i] {
      grpc::ClientContext client;
      CopyDeadline(context, client);
      calls[i].status = call(calls[i].replica->index_stub(), &client, &calls[i].response);
    });
  }
  for (std::thread& t : threads) t.join();
  return calls;
}

// Every replica of every shard, by shard; UNAVAILABLE names a shard with none.
absl::StatusOr<std::vector<std::pair<uint32_t, std::shared_ptr<Replica>>>> EveryReplica(
    const Topology& topology) {
  std::vector<std::pair<uint32_t, std::shared_ptr<Replica>>> targets;
  for (uint32_t s = 0; s < topology.shards; ++s) {
    if (topology.replicas[s].empty()) {
      return absl::UnavailableError(absl::StrCat("shard ", s, " has no replica"));
    }
    for (const std::shared_ptr<Replica>& r : topology.replicas[s]) targets.emplace_back(s, r);
  }
  return targets;
}

// The first failed call's status, naming its shard and replica; OK when none failed.
template <typename Response>
grpc::Status FirstFailure(const std::vector<ReplicaCall<Response>>& calls) {
  for (const ReplicaCall<Response>& c : calls) {
    if (!c.status.ok()) {
      return grpc::Status(c.status.error_code(),
                          absl::StrCat(Where(c.shard, *c.replica), ": ", c.status.error_message()));
    }
  }
  return grpc::Status::OK;
}

// Each shard's first call, for counts summed over shards.
template <typename Response>
std::vector<const Response*> FirstOfEachShard(const std::vector<ReplicaCall<Response>>& calls) {
  std::vector<const Response*> firsts;
  for (size_t i = 0; i < calls.size(); ++i) {
    if (i == 0 || calls[i].shard != calls[i - 1].shard) firsts.push_back(&calls[i].response);
  }
  return firsts;
}

template <typename Response>
grpc::Status Fan(ReplicaSet& replicas, const grpc::ServerContext& context,
                 const StubCall<Response>& call, std::vector<ReplicaCall<Response>>* calls) {
  const std::shared_ptr<const Topology> topology = replicas.topology();
  if (topology->shards == 0) return NoShardsYet();
  auto targets = EveryReplica(*topology);
  if (!targets.ok()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, std::string(targets.status().message()));
  }
  *calls = CallEach<Response>(*targets, context, call);
  return FirstFailure(*calls);
}

}  // namespace

grpc::Status BrokerIndexService::Write(grpc::ServerContext* context,
                                       grpc::ServerReader<WriteRequest>* reader,
                                       WriteResponse* response) {
  const std::shared_ptr<const Topology> topology = replicas_.topology();
  if (topology->shards == 0) return NoShardsYet();
  WriteState state;
  state.shards.resize(topology->shards);
  uint64_t position = 0;  // of the next operation in the client's stream
  WriteRequest request;
  while (reader->Read(&request)) {
    if (context->IsCancelled()) break;
    std::vector<WriteRequest> parts(topology->shards);
    for (WriteOperation& op : *request.mutable_operations()) {
      std::string id;
      if (op.operation_case() == WriteOperation::kIndex) {
        id = op.index().id();
      } else if (op.operation_case() == WriteOperation::kDeleteId) {
        id = op.delete_id();
      } else {
        state.local.push_back(
            {position, Failure{static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT),
                               "an operation names neither a document nor an id "
                               "to delete"}});
        ++position;
        continue;
      }
      const uint32_t shard = ShardOfId(id, topology->shards);
      ShardWrites& w = state.shards[shard];
      w.positions.push_back(position++);
      w.ids.push_back(std::move(id));
      w.failure.push_back(-1);
      *parts[shard].add_operations() = std::move(op);
    }
    for (uint32_t s = 0; s < topology->shards; ++s) {
      if (parts[s].operations().empty()) continue;
      ShardWrites& w = state.shards[s];
      if (!w.opened) OpenStreams(*topology, s, *context, w);
      for (const std::unique_ptr<ReplicaStream>& stream : w.streams) {
        if (!stream->broken) stream->broken = !stream->writer->Write(parts[s]);
      }
    }
  }
  const bool cancelled = context->IsCancelled();
  std::optional<grpc::Status> refusal;  // a replica that takes no writes at all
  for (uint32_t s = 0; s < topology->shards; ++s) {
    ShardWrites& w = state.shards[s];
    if (w.positions.empty()) continue;
    if (w.streams.empty()) {
      state.FailAll(s, static_cast<int>(grpc::StatusCode::UNAVAILABLE),
                    absl::StrCat("shard ", s, " has no replica"));
    }
    bool counted = false;  // stale and not_found, from the first replica that answered
    for (const std::unique_ptr<ReplicaStream>& stream : w.streams) {
      if (cancelled) stream->context.TryCancel();
      if (!stream->broken) stream->writer->WritesDone();
      const grpc::Status status = stream->writer->Finish();
      if (status.error_code() == grpc::StatusCode::FAILED_PRECONDITION && !refusal.has_value()) {
        refusal = grpc::Status(
            status.error_code(),
            absl::StrCat(Where(s, *stream->replica), " refuses writes: ", status.error_message()));
      }
      TakeReplicaAnswer(state, s, *stream, status, !counted && status.ok(), *response);
      counted = counted || status.ok();
    }
  }
  if (cancelled) {
    return grpc::Status(grpc::StatusCode::CANCELLED, "the client cancelled the write stream");
  }

  // Refused operations in stream order: the counts, and the first kMaxListedErrors listed.
  struct Refused {
    uint64_t position;
    const std::string* id;
    const Failure* failure;
  };
  std::vector<Refused> refused;
  uint64_t forwarded = 0;
  for (const ShardWrites& w : state.shards) {
    forwarded += w.positions.size();
    for (size_t i = 0; i < w.positions.size(); ++i) {
      if (w.failure[i] >= 0)
        refused.push_back({w.positions[i], &w.ids[i], &state.failures[w.failure[i]]});
    }
  }
  static const std::string kNoId;
  for (const auto& [at, failure] : state.local) refused.push_back({at, &kNoId, &failure});
  std::sort(refused.begin(), refused.end(),
            [](const Refused& a, const Refused& b) { return a.position < b.position; });
  response->set_acknowledged(forwarded + state.local.size() - refused.size());
  response->set_refused(refused.size());
  for (size_t i = 0; i < refused.size() && i < kMaxListedErrors; ++i) {
    tandem::v1::WriteError* e = response->add_errors();
    e->set_operation(refused[i].position);
    e->set_id(refused[i].id->substr(0, 256));
    e->set_code(refused[i].failure->code);
    e->set_message(refused[i].failure->message);
  }
  if (refusal.has_value()) {
    return grpc::Status(refusal->error_code(),
                        absl::StrCat(refusal->error_message(), " (", response->acknowledged(),
                                     " operations of this stream were acknowledged by every "
                                     "replica of their shard)"));
  }
  return grpc::Status::OK;
}

grpc::Status BrokerIndexService::Refresh(grpc::ServerContext* context,
                                         const tandem::v1::RefreshRequest* request,
                                         tandem::v1::RefreshResponse* response) {
  std::vector<ReplicaCall<tandem::v1::RefreshResponse>> calls;
  const grpc::Status status = Fan<tandem::v1::RefreshResponse>(
      replicas_, *context,
      [&](IndexService::Stub& stub, grpc::ClientContext* c, tandem::v1::RefreshResponse* r) {
        return stub.Refresh(c, *request, r);
      },
      &calls);
  if (!status.ok()) return status;
  for (const tandem::v1::RefreshResponse* r : FirstOfEachShard(calls)) {
    response->set_documents(response->documents() + r->documents());
    response->set_segments(response->segments() + r->segments());
  }
  return grpc::Status::OK;
}

grpc::Status BrokerIndexService::Flush(grpc::ServerContext* context,
                                       const tandem::v1::FlushRequest* request,
                                       tandem::v1::FlushResponse* response) {
  std::vector<ReplicaCall<tandem::v1::FlushResponse>> calls;
  const grpc::Status status = Fan<tandem::v1::FlushResponse>(
      replicas_, *context,
      [&](IndexService::Stub& stub, grpc::ClientContext* c, tandem::v1::FlushResponse* r) {
        return stub.Flush(c, *request, r);
      },
      &calls);
  if (!status.ok()) return status;
  for (const auto& c : calls) {
    response->set_generation(std::max(response->generation(), c.response.generation()));
  }
  return grpc::Status::OK;
}

grpc::Status BrokerIndexService::ForceMerge(grpc::ServerContext* context,
                                            const tandem::v1::ForceMergeRequest* request,
                                            tandem::v1::ForceMergeResponse* response) {
  std::vector<ReplicaCall<tandem::v1::ForceMergeResponse>> calls;
  const grpc::Status status = Fan<tandem::v1::ForceMergeResponse>(
      replicas_, *context,
      [&](IndexService::Stub& stub, grpc::ClientContext* c, tandem::v1::ForceMergeResponse* r) {
        return stub.ForceMerge(c, *request, r);
      },
      &calls);
  if (!status.ok()) return status;
  for (const tandem::v1::ForceMergeResponse* r : FirstOfEachShard(calls)) {
    response->set_segments(response->segments() + r->segments());
    response->set_documents(response->documents() + r->documents());
  }
  return grpc::Status::OK;
}

grpc::Status BrokerIndexService::GetIndexStats(grpc::ServerContext* context,
                                               const tandem::v1::GetIndexStatsRequest* request,
                                               tandem::v1::IndexStats* response) {
  const std::shared_ptr<const Topology> topology = replicas_.topology();
  if (topology->shards == 0) return NoShardsYet();
  std::vector<std::pair<uint32_t, std::shared_ptr<Replica>>> targets;
  for (uint32_t s = 0; s < topology->shards; ++s) {
    const auto& list = topology->replicas[s];
    auto healthy = std::find_if(list.begin(), list.end(),
                                [](const std::shared_ptr<Replica>& r) { return r->healthy(); });
    if (healthy == list.end()) {
      return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          absl::StrCat("shard ", s, " has no healthy replica"));
    }
    targets.emplace_back(s, *healthy);
  }
  const auto calls = CallEach<tandem::v1::IndexStats>(
      targets, *context,
      [&](IndexService::Stub& stub, grpc::ClientContext* c, tandem::v1::IndexStats* r) {
        return stub.GetIndexStats(c, *request, r);
      });
  if (grpc::Status status = FirstFailure(calls); !status.ok()) return status;
  response->set_writable(true);
  for (const auto& c : calls) {
    const tandem::v1::IndexStats& r = c.response;
    response->set_documents(response->documents() + r.documents());
    response->set_deleted_documents(response->deleted_documents() + r.deleted_documents());
    response->set_segments(response->segments() + r.segments());
    response->set_buffered_operations(response->buffered_operations() + r.buffered_operations());
    response->set_commit_generation(std::max(response->commit_generation(), r.commit_generation()));
    response->set_refreshes(response->refreshes() + r.refreshes());
    response->set_last_sequence(response->last_sequence() + r.last_sequence());
    response->set_writable(response->writable() && r.writable());
    response->set_bytes_sealed(response->bytes_sealed() + r.bytes_sealed());
    response->set_bytes_merged(response->bytes_merged() + r.bytes_merged());
    response->set_merges(response->merges() + r.merges());
  }
  return grpc::Status::OK;
}

}  // namespace tandem::broker
