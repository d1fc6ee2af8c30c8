// File: search_stream.h
//
// The reactor behind SearchStream: one response per request, in request order, over a long-lived
// bidirectional stream. Each request is dispatched as it arrives, so several of one stream's
// queries may run at once; responses wait in a reorder buffer until every earlier one has been
// written. Reading pauses while kMaxQueriesInFlight of the stream's responses are pending: one
// stream can neither fill the admission queue on its own nor hold unbounded memory, and HTTP/2 flow
// control pushes back on a sender that runs ahead. Each query is admitted like a Search call; a bad
// or refused one (INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE) yields a response with its
// status set, and the stream goes on; so does a message that does not parse (INVALID_ARGUMENT,
// with an empty request_id). Messages are read and written as bytes (wire.h).
//
// Lifetime: gRPC allows one outstanding read and one outstanding write. The reactor finishes once
// the client has half-closed (or the call was cancelled), every dispatched query has completed and
// the last write is done; OnDone then deletes it. Completions from executor threads and gRPC's
// read/write callbacks meet under mu_.
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/support/byte_buffer.h"
#include "server/query_dispatcher.h"
#include "tandem/v1/search.pb.h"

namespace tandem::server {

class RequestReader;

class SearchStreamReactor final
    : public grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  // Queries of one stream running or waiting (answered or not, until written) before reading
  // stops. Small, so that a pipelining client gets parallelism without crowding out other callers;
  // it opens more streams for more.
  static constexpr size_t kMaxQueriesInFlight = 4;

  // The references must outlive the reactor. A response larger than `max_response_bytes` is sent
  // as its RESOURCE_EXHAUSTED status.
  SearchStreamReactor(grpc::CallbackServerContext* context, QueryDispatcher& dispatcher,
                      RequestReader& reader, size_t max_response_bytes);

  void OnReadDone(bool ok) override;
  void OnWriteDone(bool ok) override;
  void OnCancel() override;
  void OnDone() override;

 private:
  struct Slot {
    std::string request_id;
    grpc::ByteBuffer response;  // encoded SearchStreamResponse, once ready
    bool ready = false;
  };

  void Fill(Slot& slot, absl::StatusOr<tandem::v1::SearchResponse> result);
  // Starts the next read or write as the state allows; returns the status to Finish with once the
  // stream is over (the caller calls Finish after releasing mu_).
  std::optional<grpc::Status> Advance() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  grpc::CallbackServerContext& context_;
  QueryDispatcher& dispatcher_;
  RequestReader& reader_;
  const size_t max_response_bytes_;
  const absl::Time deadline_;
  const std::shared_ptr<std::atomic<bool>> cancelled_;
  grpc::ByteBuffer request_;  // target of the one outstanding read

  absl::Mutex mu_;
  std::deque<std::unique_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);  // request order
  // A read is outstanding, or its request is still being dispatched (request_ is busy).
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool reads_done_ ABSL_GUARDED_BY(mu_) = false;  // client half-closed or the call broke
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool broken_ ABSL_GUARDED_BY(mu_) = false;    // cancelled or a write failed: stop reading/writing
  size_t unanswered_ ABSL_GUARDED_BY(mu_) = 0;  // dispatched queries not yet completed
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace tandem::server
