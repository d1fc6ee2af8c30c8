// File: search_service.h
//
// tandem.v1.SearchService on gRPC's callback API. Why callback and not sync: a sync handler holds
// one gRPC thread for as long as its query waits in the admission queue and runs, so the RPC thread
// pool would become a second, unbounded queue in front of ours. With reactors a handler returns at
// once; the query waits in the bounded QueryExecutor queue and a worker finishes the RPC. gRPC
// threads only parse, validate and admit, so RESOURCE_EXHAUSTED and UNAVAILABLE answers stay fast
// under overload.
//
// Cancellation: each call's reactor sets a shared flag in OnCancel (client cancel, deadline, server
// shutdown); the engines poll it with the call's deadline through index::SearchContext.
//
//   SearchService service(index, dispatcher, engines);
//   builder.RegisterService(&service);
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "index/index.h"
#include "server/query_dispatcher.h"
#include "tandem/v1/search.grpc.pb.h"

namespace tandem::server {

class SearchService final : public tandem::v1::SearchService::CallbackService {
 public:
  // The references must outlive the service.
  SearchService(const index::Index& index, QueryDispatcher& dispatcher,
                std::vector<std::string> engines);

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

 private:
  const index::Index& index_;
  QueryDispatcher& dispatcher_;
  const std::vector<std::string> engines_;
};

// The call's deadline (InfiniteFuture when the client set none).
absl::Time CallDeadline(const grpc::CallbackServerContext& context);

// What a reactor's OnCancel does. gRPC reports a passed deadline through OnCancel as well as a
// client cancel or a server shutdown; a deadline is left to the engines' own deadline check, so
// that the query ends DEADLINE_EXCEEDED, as the caller sees it, and not CANCELLED.
void MarkCancelled(std::atomic<bool>& cancelled, absl::Time deadline);

}  // namespace tandem::server
