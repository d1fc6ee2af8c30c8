// File: broker_index_service.h
//
// tandem.v1.IndexService as a broker serves it: writes and index administration of a collection
// whose shards are live indexes (tandem-server --live-shard), so that tandem-cli and other writers
// talk to the broker as to one node.
//
//   - Write: each operation goes to the shard that owns its id (shard_hash.h: FNV-1a 64 of the
//     id modulo the shard count, so changing the shard count reassigns ids) and to every replica
//     of that shard, healthy or ejected. A shard's operations reach its replicas in stream order,
//     one Write stream per replica for the whole call, each client message split into one message
//     per shard. An operation is acknowledged when every replica of its shard acknowledged it; one
//     that a replica refused, or that a replica's failed stream leaves unconfirmed, is refused
//     with that replica's status code and a message naming the shard and the replica, and the
//     rest go on, as the node refuses a bad document. The WriteResponse reads as a node's:
//     acknowledged and refused count every operation, errors list the first 1000 refused in stream
//     order, stale and not_found are those the first replica of each shard that answered counted.
//     last_sequence stays 0: each replica has its own log. A replica that refuses writes as a
//     whole (FAILED_PRECONDITION: a read-only node, a shard cut by tandem-index shard) fails the
//     call with its status, the message naming it and counting what was acknowledged.
//   - Refresh, Flush and ForceMerge go to every replica of every shard; the first failure (by
//     shard, then replica) is the call's, naming the shard and replica. Counts are summed over
//     shards (each shard's first replica); Flush's generation is the highest.
//   - GetIndexStats sums over shards, each from its first healthy replica (commit_generation: the
//     highest; writable: every shard's). UNAVAILABLE names a shard with no healthy replica.
//
// Synchronous, as the node's IndexService: a write waits for the replicas' disks.
//
//   BrokerIndexService index_service(replicas);
//   builder.RegisterService(&index_service);
#pragma once

#include <cstddef>

#include "broker/replica_set.h"
#include "tandem/v1/index.grpc.pb.h"

namespace tandem::broker {

class BrokerIndexService final : public tandem::v1::IndexService::Service {
 public:
  // The most refused operations a WriteResponse lists (the node's own limit).
  static constexpr size_t kMaxListedErrors = 1000;

  // `replicas` must outlive the service.
  explicit BrokerIndexService(ReplicaSet& replicas) : replicas_(replicas) {}

  grpc::Status Write(grpc::ServerContext* context,
                     grpc::ServerReader<tandem::v1::WriteRequest>* reader,
                     tandem::v1::WriteResponse* response) override;
  grpc::Status Refresh(grpc::ServerContext* context, const tandem::v1::RefreshRequest* request,
                       tandem::v1::RefreshResponse* response) override;
  grpc::Status Flush(grpc::ServerContext* context, const tandem::v1::FlushRequest* request,
                     tandem::v1::FlushResponse* response) override;
  grpc::Status ForceMerge(grpc::ServerContext* context,
                          const tandem::v1::ForceMergeRequest* request,
                          tandem::v1::ForceMergeResponse* response) override;
  grpc::Status GetIndexStats(grpc::ServerContext* context,
                             const tandem::v1::GetIndexStatsRequest* request,
                             tandem::v1::IndexStats* response) override;

 private:
  ReplicaSet& replicas_;
};

}  // namespace tandem::broker
