// File: search_service.h
//
// tandem.v1.SearchService on gRPC's callback API. Why callback and not sync: a sync handler holds
// one gRPC thread for as long as its query waits in the admission queue and runs, so the RPC thread
// pool would become a second, unbounded queue in front of ours. With reactors a handler returns at
// once; the query waits in the bounded QueryExecutor queue and a worker finishes the RPC. gRPC
// threads only parse, validate and admit, so RESOURCE_EXHAUSTED and UNAVAILABLE answers stay fast
// under overload.
//
// Every method is raw (bytes in, bytes out; wire.h says why): a call is refused before its request
// is parsed when the node could not admit it anyway (QueryDispatcher::Admissible), and a request
// that does not parse is answered INVALID_ARGUMENT, counted (reason "malformed_request") and logged
// at most once a minute.
//
// Cancellation: each call's reactor sets a shared flag in OnCancel (client cancel, deadline, server
// shutdown); the engines poll it with the call's deadline through index::SearchContext.
//
//   SearchService service(dispatcher, engines, {.max_response_bytes = 256 << 20});
//   builder.RegisterService(&service);
#pragma once

#include <atomic>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "grpcpp/support/byte_buffer.h"
#include "index/index.h"
#include "rpc/rate_limited_log.h"
#include "server/query_dispatcher.h"
#include "tandem/v1/search.grpc.pb.h"

namespace tandem::server {

// The generated service with every method taking and giving bytes.
using RawSearchServiceBase = tandem::v1::SearchService::WithRawCallbackMethod_Search<
    tandem::v1::SearchService::WithRawCallbackMethod_SearchBatch<
        tandem::v1::SearchService::WithRawCallbackMethod_SearchStream<
            tandem::v1::SearchService::WithRawCallbackMethod_GetIndexInfo<
                tandem::v1::SearchService::WithRawCallbackMethod_GetCollectionStatistics<
                    tandem::v1::SearchService::Service>>>>>;

struct SearchServiceOptions {
  // A response (one stream message) larger than this is answered RESOURCE_EXHAUSTED; the gRPC
  // server's own send limit (GrpcOptions::max_send_message_bytes).
  size_t max_response_bytes = 256 << 20;
  // Where lines about malformed requests go (at most one a minute); null: standard error.
  rpc::LogSink log = nullptr;
  // The node's place in a collection whose shards are live indexes written through tandem-broker
  // (tandem-server --live-shard): GetIndexInfo reports it, first_docid 0 and the collection's
  // counts 0 (a broker sums the shards'), so that a broker routes ids and queries here.
  std::optional<tandem::v1::ShardInfo> live_shard;
};

// --live-shard's value, "COLLECTION:SHARD/SHARDS" ("news:0/2"): INVALID_ARGUMENT saying what is
// wrong.
absl::StatusOr<tandem::v1::ShardInfo> ParseLiveShard(absl::string_view text);

// How the service turns one request's bytes into a request, for every method: parsed, or counted
// and logged as malformed.
class RequestReader {
 public:
  RequestReader(QueryDispatcher& dispatcher, rpc::LogSink log);
  // INVALID_ARGUMENT for bytes that do not parse; the call is then counted and logged.
  absl::Status Read(const grpc::ByteBuffer& bytes, const grpc::CallbackServerContext& context,
                    google::protobuf::Message& request);

 private:
  QueryDispatcher& dispatcher_;
  rpc::RateLimitedLog log_;
};

class SearchService final : public RawSearchServiceBase {
 public:
  // The references must outlive the service.
  // GetIndexInfo describes the dispatcher's target (the index served now).
  SearchService(QueryDispatcher& dispatcher, std::vector<std::string> engines,
                SearchServiceOptions options = {});

  grpc::ServerUnaryReactor* Search(grpc::CallbackServerContext* context,
                                   const grpc::ByteBuffer* request,
                                   grpc::ByteBuffer* response) override;

  grpc::ServerUnaryReactor* SearchBatch(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;

  grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SearchStream(
      grpc::CallbackServerContext* context) override;

  grpc::ServerUnaryReactor* GetIndexInfo(grpc::CallbackServerContext* context,
                                         const grpc::ByteBuffer* request,
                                         grpc::ByteBuffer* response) override;

  // The statistics of the request's terms over the documents served: a live index's live
  // documents (live::Snapshot::Statistics), else the index's manifest and lexicon.
  grpc::ServerUnaryReactor* GetCollectionStatistics(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request,
                                                    grpc::ByteBuffer* response) override;

 private:
  // Admits and parses a unary call's request; a status that is not OK has finished `reactor`.
  absl::Status Accept(const grpc::CallbackServerContext& context, const grpc::ByteBuffer& bytes,
                      grpc::ServerUnaryReactor& reactor, google::protobuf::Message& request);

  QueryDispatcher& dispatcher_;
  const std::vector<std::string> engines_;
  const size_t max_response_bytes_;
  const std::optional<tandem::v1::ShardInfo> live_shard_;
  RequestReader reader_;
};

// The call's deadline (InfiniteFuture when the client set none).
absl::Time CallDeadline(const grpc::CallbackServerContext& context);

// What a reactor's OnCancel does. gRPC reports a passed deadline through OnCancel as well as a
// client cancel or a server shutdown; a deadline is left to the engines' own deadline check, so
// that the query ends DEADLINE_EXCEEDED, as the caller sees it, and not CANCELLED.
void MarkCancelled(std::atomic<bool>& cancelled, absl::Time deadline);

}  // namespace tandem::server
