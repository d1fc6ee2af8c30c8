// File: subscription_service.h
//
// tandem.v1.SubscriptionService (proto/tandem/v1/subscription.proto), the node's standing queries,
// on gRPC's callback API beside SearchService. Every method reads and writes bytes (wire.h): a
// request that does not parse is answered INVALID_ARGUMENT and logged at most once a minute.
//
// The unary calls' work (SubscriptionCalls) runs on a few threads of the service's own
// (call_workers.h): Subscribe waits for its change to reach the disk and Match for the matcher,
// which gRPC's threads must not. Watch streams live in a WatchHub: bounded per stream, fed by
// Match. While the node drains, new calls get UNAVAILABLE and Watch streams end with OK.
//
//   SubscriptionService service(registry, index.analyzer(), metrics, {.watch_queue = 1024});
//   builder.RegisterService(&service);
//   ...
//   service.StartDraining();
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "base/memory_breaker.h"
#include "grpcpp/support/byte_buffer.h"
#include "index/analyzer.h"
#include "match/subscription_registry.h"
#include "rpc/rate_limited_log.h"
#include "server/call_workers.h"
#include "server/subscription_calls.h"
#include "server/watch_hub.h"
#include "tandem/v1/subscription.grpc.pb.h"

namespace tandem::server {

class SubscriptionMetrics;

// The generated service with every method taking and giving bytes.
using RawSubscriptionServiceBase = tandem::v1::SubscriptionService::WithRawCallbackMethod_Subscribe<
    tandem::v1::SubscriptionService::WithRawCallbackMethod_Unsubscribe<
        tandem::v1::SubscriptionService::WithRawCallbackMethod_ListSubscriptions<
            tandem::v1::SubscriptionService::WithRawCallbackMethod_Match<
                tandem::v1::SubscriptionService::WithRawCallbackMethod_Watch<
                    tandem::v1::SubscriptionService::Service>>>>>;

struct SubscriptionServiceOptions {
  uint32_t max_match_documents = 1024;  // --max-match-documents
  size_t watch_queue = 1024;            // events per Watch stream (--watch-queue)
  // Bytes of the events all Watch streams hold together (--watch-queue-bytes), and the node's
  // memory breaker account they are reserved from (null: none; it must outlive the service).
  uint64_t watch_queue_bytes = uint64_t{64} << 20;
  base::MemoryBreaker::Account* watch_breaker = nullptr;
  // A response larger than this is answered RESOURCE_EXHAUSTED (the gRPC server's send limit).
  size_t max_response_bytes = 256 << 20;
  // Threads that run calls, and calls that may wait for them before RESOURCE_EXHAUSTED. Match
  // calls that run at once are matched as one batch (SubscriptionRegistry::Match), so the workers
  // bound how many single-document calls share a launch.
  int workers = 16;
  size_t queued_calls = 256;
  // Where lines about malformed requests go (at most one a minute); null: standard error.
  rpc::LogSink log = nullptr;
  // Mutual TLS is on: bind each interface to the client certificates that name it (Caller in
  // subscription_calls.h). Off, any client may act for any interface.
  bool authorize_by_certificate = false;
};

class SubscriptionService final : public RawSubscriptionServiceBase {
 public:
  // The references must outlive the service. INVALID_ARGUMENT for a watch_queue or
  // max_match_documents of 0 is the caller's to check (ValidateSubscriptionServiceOptions).
  SubscriptionService(match::SubscriptionRegistry& registry, const index::Analyzer& analyzer,
                      SubscriptionMetrics& metrics, SubscriptionServiceOptions options);
  // The gRPC server must be shut down first (every call done).
  ~SubscriptionService() override;

  grpc::ServerUnaryReactor* Subscribe(grpc::CallbackServerContext* context,
                                      const grpc::ByteBuffer* request,
                                      grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Unsubscribe(grpc::CallbackServerContext* context,
                                        const grpc::ByteBuffer* request,
                                        grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* ListSubscriptions(grpc::CallbackServerContext* context,
                                              const grpc::ByteBuffer* request,
                                              grpc::ByteBuffer* response) override;
  grpc::ServerUnaryReactor* Match(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request,
                                  grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Watch(grpc::CallbackServerContext* context,
                                                    const grpc::ByteBuffer* request) override;

  // New calls get UNAVAILABLE; Watch streams end (with OK) once their queued events are written.
  // Calls already running finish.
  void StartDraining();

  size_t watch_streams() const { return hub_.streams(); }

 private:
  // Parses the request of type Request on a worker, runs `work` on it, serializes its answer and
  // finishes the call.
  template <typename Request, typename Work>
  grpc::ServerUnaryReactor* Unary(grpc::CallbackServerContext* context,
                                  const grpc::ByteBuffer* request_bytes,
                                  grpc::ByteBuffer* response_bytes, Work work);
  absl::Status Read(const grpc::ByteBuffer& bytes, const grpc::CallbackServerContext& context,
                    google::protobuf::Message& request);

  // The caller's identities from its client certificate, when interfaces are bound to them.
  Caller CallerOf(const grpc::ServerContextBase& context) const;

  const size_t max_response_bytes_;
  const bool authorize_by_certificate_;
  rpc::RateLimitedLog log_;
  std::atomic<bool> draining_{false};
  WatchHub hub_;
  SubscriptionCalls calls_;
  CallWorkers workers_;  // last: joined first, while what its work uses still exists
};

// INVALID_ARGUMENT naming the option when max_match_documents, watch_queue, workers or
// queued_calls is 0, or watch_queue_bytes is under kMinWatchQueueBytes.
absl::Status ValidateSubscriptionServiceOptions(const SubscriptionServiceOptions& options);

// The least --watch-queue-bytes: room for a few of the largest events a Match call makes.
inline constexpr uint64_t kMinWatchQueueBytes = uint64_t{1} << 20;

}  // namespace tandem::server
