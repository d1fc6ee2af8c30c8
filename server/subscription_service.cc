#include "server/subscription_service.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "grpc/grpc_security_constants.h"
#include "grpcpp/security/auth_context.h"
#include "rpc/status_mapping.h"
#include "server/subscription_metrics.h"
#include "server/wire.h"

namespace tandem::server {
namespace {

const grpc::Status& Draining() {
  static const auto* status =
      new grpc::Status(grpc::StatusCode::UNAVAILABLE, "the server is draining");
  return *status;
}

// A call's answer serialized, or its error. Every string is checked first: one that is not UTF-8
// would make the whole answer unreadable to every client (the model refuses such names and values
// on the way in; this keeps the promise whatever a subscriptions file or a later change holds).
template <typename Response>
absl::Status Serialize(const absl::StatusOr<Response>& response, size_t max_bytes,
                       grpc::ByteBuffer& out) {
  if (!response.ok()) return response.status();
  TANDEM_RETURN_IF_ERROR(CheckUtf8Strings(*response));
  return SerializeResponse(*response, max_bytes, out);
}

}  // namespace

absl::Status ValidateSubscriptionServiceOptions(const SubscriptionServiceOptions& options) {
  if (options.max_match_documents < 1) {
    return absl::InvalidArgumentError("max_match_documents must be at least 1");
  }
  if (options.watch_queue < 1) return absl::InvalidArgumentError("watch_queue must be at least 1");
  if (options.watch_queue_bytes < kMinWatchQueueBytes) {
    return absl::InvalidArgumentError(absl::StrCat("watch_queue_bytes must be at least ",
                                                   kMinWatchQueueBytes, ", got ",
                                                   options.watch_queue_bytes));
  }
  if (options.workers < 1 || options.queued_calls < 1) {
    return absl::InvalidArgumentError("subscription workers and queued calls must be at least 1");
  }
  return absl::OkStatus();
}

SubscriptionService::SubscriptionService(match::SubscriptionRegistry& registry,
                                         const index::Analyzer& analyzer,
                                         SubscriptionMetrics& metrics,
                                         SubscriptionServiceOptions options)
    : max_response_bytes_(options.max_response_bytes),
      authorize_by_certificate_(options.authorize_by_certificate),
      log_(absl::Minutes(1), std::move(options.log)),
      hub_({.queue_capacity = options.watch_queue,
            .max_bytes = options.watch_queue_bytes,
            .breaker = options.watch_breaker},
           &metrics),
      calls_(registry, analyzer, {.max_match_documents = options.max_match_documents}, &hub_,
             &metrics),
      workers_({.threads = options.workers,
                .queue_capacity = options.queued_calls,
                .name = "tandem-subs"}) {
  metrics.SetSubscriptions(registry.stats().subscriptions);
}

SubscriptionService::~SubscriptionService() = default;

Caller SubscriptionService::CallerOf(const grpc::ServerContextBase& context) const {
  Caller caller;
  caller.bound = authorize_by_certificate_;
  if (!caller.bound) return caller;
  const std::shared_ptr<const grpc::AuthContext> auth = context.auth_context();
  if (auth == nullptr) return caller;
  for (const char* property : {GRPC_X509_CN_PROPERTY_NAME, GRPC_X509_SAN_PROPERTY_NAME}) {
    for (const grpc::string_ref& value : auth->FindPropertyValues(property)) {
      // A certificate without a CN has an empty one here; it names nothing.
      if (!value.empty()) caller.identities.emplace_back(value.data(), value.size());
    }
  }
  return caller;
}

void SubscriptionService::StartDraining() {
  draining_.store(true, std::memory_order_relaxed);
  hub_.Close();
}

absl::Status SubscriptionService::Read(const grpc::ByteBuffer& bytes,
                                       const grpc::CallbackServerContext& context,
                                       google::protobuf::Message& request) {
  absl::Status parsed = ParseRequest(bytes, request);
  if (!parsed.ok()) {
    log_.Log(absl::StrCat("tandem-server: answered INVALID_ARGUMENT to ", context.peer(), ": ",
                          parsed.message()));
  }
  return parsed;
}

template <typename Request, typename Work>
grpc::ServerUnaryReactor* SubscriptionService::Unary(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes, Work work) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  if (draining_.load(std::memory_order_relaxed)) {
    reactor->Finish(Draining());
    return reactor;
  }
  // The request's bytes and the response's buffer stay valid until Finish.
  absl::Status submitted = workers_.Submit([this, context, reactor, request_bytes, response_bytes,
                                            work = std::move(work)] {
    if (context->IsCancelled()) {  // waited past its deadline, or the client gave up
      reactor->Finish(grpc::Status(grpc::StatusCode::CANCELLED, "call cancelled"));
      return;
    }
    Request request;
    absl::Status status = Read(*request_bytes, *context, request);
    if (status.ok()) {
      status = Serialize(work(request, CallerOf(*context)), max_response_bytes_, *response_bytes);
    }
    if (absl::IsInternal(status)) {
      log_.Log(absl::StrCat("tandem-server: answered INTERNAL to ", context->peer(), ": ",
                            status.message()));
    }
    reactor->Finish(rpc::ToGrpcStatus(status));
  });
  if (!submitted.ok()) reactor->Finish(rpc::ToGrpcStatus(submitted));
  return reactor;
}

grpc::ServerUnaryReactor* SubscriptionService::Subscribe(grpc::CallbackServerContext* context,
                                                         const grpc::ByteBuffer* request,
                                                         grpc::ByteBuffer* response) {
  return Unary<tandem::v1::SubscribeRequest>(
      context, request, response,
      [this](const tandem::v1::SubscribeRequest& r, const Caller& caller) {
        return calls_.Subscribe(r, caller);
      });
}

grpc::ServerUnaryReactor* SubscriptionService::Unsubscribe(grpc::CallbackServerContext* context,
                                                           const grpc::ByteBuffer* request,
                                                           grpc::ByteBuffer* response) {
  return Unary<tandem::v1::UnsubscribeRequest>(
      context, request, response,
      [this](const tandem::v1::UnsubscribeRequest& r, const Caller& caller) {
        return calls_.Unsubscribe(r, caller);
      });
}

grpc::ServerUnaryReactor* SubscriptionService::ListSubscriptions(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request,
    grpc::ByteBuffer* response) {
  return Unary<tandem::v1::ListSubscriptionsRequest>(
      context, request, response,
      [this](const tandem::v1::ListSubscriptionsRequest& r, const Caller& caller) {
        return calls_.ListSubscriptions(r, caller);
      });
}

grpc::ServerUnaryReactor* SubscriptionService::Match(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request,
                                                     grpc::ByteBuffer* response) {
  return Unary<tandem::v1::MatchRequest>(
      context, request, response,
      [this](const tandem::v1::MatchRequest& r, const Caller&) { return calls_.Match(r); });
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* SubscriptionService::Watch(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes) {
  // A small message, parsed here: a stream's work is its writes, which run on gRPC's threads.
  tandem::v1::WatchRequest request;
  absl::Status status = Read(*request_bytes, *context, request);
  if (status.ok() && request.interface().empty()) {
    status = absl::InvalidArgumentError("interface is required");
  }
  if (status.ok()) status = calls_.AuthorizeWatch(request.interface(), CallerOf(*context));
  if (status.ok() && draining_.load(std::memory_order_relaxed)) {
    status = absl::UnavailableError("the server is draining");
  }
  if (!status.ok()) {
    // A stream that ends at once; gRPC deletes it in OnDone.
    class Refused final : public grpc::ServerWriteReactor<grpc::ByteBuffer> {
     public:
      explicit Refused(const absl::Status& status) { Finish(rpc::ToGrpcStatus(status)); }
      void OnDone() override { delete this; }
    };
    return new Refused(status);
  }
  return hub_.Watch(context, request.interface());
}

}  // namespace tandem::server
