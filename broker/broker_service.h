// File: broker_service.h
//
// tandem.v1.SearchService as a broker serves it: the node's API, so clients do not change. Each
// query is answered from the result cache or by ScatterGather over every shard; the request_id is
// echoed and stats.total_micros is the broker's. SearchBatch fans out each of its queries at once
// and answers each with its own status. SearchStream answers in request order (as the node does),
// with up to kMaxQueriesInFlight of a stream's queries running at once. GetIndexInfo describes the
// whole collection: its index id, document count and average length, the postings and bytes of
// all shards (one replica each), and the most terms of any shard (shards share terms, so their
// counts do not add up); over live shards (tandem-server --live-shard) the document count and
// average length are the shards' summed. Its ShardInfo is unset: the broker is not a shard. With
// --global-stats a query first gathers the collection's statistics of its terms from the shards
// and sends them with the query (global_statistics.h); GetCollectionStatistics answers that sum.
//
// gRPC's callback API: no handler holds a thread while its shards answer. A call the client
// cancels (or that dies with its connection) cancels its calls to the shards.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/time/time.h"
#include "broker/broker_metrics.h"
#include "broker/replica_set.h"
#include "broker/result_cache.h"
#include "broker/scatter_gather.h"
#include "tandem/v1/search.grpc.pb.h"

namespace tandem::broker {

struct BrokerServiceOptions {
  // The deadline of a call that comes without one.
  absl::Duration default_deadline = absl::Milliseconds(500);
  uint32_t max_batch = 1024;  // queries in one SearchBatch call
  // --global-stats: every query scores with the whole collection's statistics, gathered from the
  // shards first (global_statistics.h); for shards that are live indexes.
  bool global_stats = false;
};

class BrokerService final : public tandem::v1::SearchService::CallbackService {
 public:
  static constexpr size_t kMaxQueriesInFlight = 64;  // per SearchStream

  // The references must outlive the service.
  BrokerService(ReplicaSet& replicas, ScatterGather& fanout, ResultCache& cache,
                BrokerMetrics* metrics, BrokerServiceOptions options);

  grpc::ServerUnaryReactor* Search(grpc::CallbackServerContext* context,
                                   const tandem::v1::SearchRequest* request,
                                   tandem::v1::SearchResponse* response) override;
  grpc::ServerUnaryReactor* SearchBatch(grpc::CallbackServerContext* context,
                                        const tandem::v1::SearchBatchRequest* request,
                                        tandem::v1::SearchBatchResponse* response) override;
  grpc::ServerBidiReactor<tandem::v1::SearchRequest, tandem::v1::SearchStreamResponse>*
  SearchStream(grpc::CallbackServerContext* context) override;
  grpc::ServerUnaryReactor* GetIndexInfo(grpc::CallbackServerContext* context,
                                         const tandem::v1::GetIndexInfoRequest* request,
                                         tandem::v1::GetIndexInfoResponse* response) override;

  // The sum of every shard's statistics for the request's query (global_statistics.h).
  grpc::ServerUnaryReactor* GetCollectionStatistics(
      grpc::CallbackServerContext* context, const tandem::v1::SearchRequest* request,
      tandem::v1::CollectionStatistics* response) override;

  // Answers one query (cache, then the shards) and calls `done` once; the handle stops its calls
  // to the shards when the caller goes away.
  CancelHandle Answer(const tandem::v1::SearchRequest& request, absl::Time deadline,
                      absl::string_view method, ScatterGather::Done done);

  absl::Time DeadlineOf(const grpc::CallbackServerContext& context) const;

 private:
  ReplicaSet& replicas_;
  ScatterGather& fanout_;
  ResultCache& cache_;
  BrokerMetrics* metrics_;
  const BrokerServiceOptions options_;
};

}  // namespace tandem::broker
