// File: broker.cc
#include "broker/broker.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "prometheus/registry.h"
#include "rpc/exposure.h"
#include "rpc/grpc_log.h"
#include "rpc/metrics_endpoint.h"
#include "rpc/process_metrics.h"

namespace tandem::broker {

namespace {
constexpr char kServiceName[] = "tandem.v1.SearchService";
}  // namespace

absl::StatusOr<std::unique_ptr<Broker>> Broker::Create(BrokerOptions options) {
  std::unique_ptr<Broker> broker(new Broker());
  TANDEM_RETURN_IF_ERROR(broker->Start(std::move(options)));
  return broker;
}

absl::Status Broker::Start(BrokerOptions options) {
  if (options.max_receive_message_bytes < 1 || options.max_send_message_bytes < 1) {
    return absl::InvalidArgumentError("message size limits must be at least 1 byte");
  }
  if (options.fanout.deadline_budget < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("deadline_budget must not be negative");
  }
  if (options.fanout.max_attempts < 1) {
    return absl::InvalidArgumentError("max_attempts must be at least 1");
  }
  if (options.service.default_deadline <= options.fanout.deadline_budget) {
    return absl::InvalidArgumentError("default_deadline must be longer than deadline_budget");
  }
  if (options.service.max_batch < 1) {
    return absl::InvalidArgumentError("max_batch must be at least 1");
  }
  TANDEM_RETURN_IF_ERROR(ResultCache::Validate(options.cache));
  TANDEM_RETURN_IF_ERROR(rpc::CheckExposure({.program = "tandem-broker",
                                             .what = "gRPC in plaintext",
                                             .address = options.listen,
                                             .protection = "--tls-cert and --tls-key",
                                             .protected_ = !options.tls.cert_file.empty()},
                                            options.allow_insecure));
  if (!options.metrics_listen.empty()) {
    TANDEM_RETURN_IF_ERROR(rpc::CheckExposure(
        {.program = "tandem-broker",
         .what = "metrics",
         .address = options.metrics_listen,
         .protection = "--metrics-tls-cert, --metrics-tls-key and --metrics-basic-auth-file",
         .protected_ =
             !options.metrics_tls_cert_file.empty() && !options.metrics_basic_auth_file.empty()},
        options.allow_insecure));
  }
  rpc::LimitLibraryLogs();
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                          rpc::MakeCredentials(options.tls));
  TANDEM_RETURN_IF_ERROR(rpc::CheckListenPort(options.listen));

  registry_ = std::make_shared<prometheus::Registry>();
  metrics_ = std::make_unique<BrokerMetrics>(*registry_);
  TANDEM_ASSIGN_OR_RETURN(replicas_, ReplicaSet::Create(options.replicas));
  timers_ = std::make_unique<TimerQueue>();
  fanout_ = std::make_unique<ScatterGather>(*replicas_, *timers_, metrics_.get(), options.fanout);
  cache_ = std::make_unique<ResultCache>(options.cache);
  service_ = std::make_unique<BrokerService>(*replicas_, *fanout_, *cache_, metrics_.get(),
                                             options.service);
  index_service_ = std::make_unique<BrokerIndexService>(*replicas_);

  if (!options.metrics_listen.empty()) {
    auto process = std::make_shared<rpc::ProcessMetrics>();
    TANDEM_ASSIGN_OR_RETURN(
        metrics_endpoint_,
        rpc::MetricsEndpoint::Start({.listen = options.metrics_listen,
                                     .tls_cert_file = options.metrics_tls_cert_file,
                                     .tls_key_file = options.metrics_tls_key_file,
                                     .basic_auth_file = options.metrics_basic_auth_file},
                                    {registry_, process}));
    // The endpoint holds its collectables weakly; the process metrics live with the registry.
    process_metrics_ = std::move(process);
    metrics_address_ = rpc::WithPort(options.metrics_listen, metrics_endpoint_->port());
  }

  rpc::EnableHealthAndReflection();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, credentials, &port);
  builder.RegisterService(service_.get());
  builder.RegisterService(index_service_.get());
  builder.SetMaxReceiveMessageSize(options.max_receive_message_bytes);
  builder.SetMaxSendMessageSize(options.max_send_message_bytes);
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  TANDEM_ASSIGN_OR_RETURN(grpc_server_, rpc::BuildAndStart(builder, options.listen, port));
  address_ = rpc::WithPort(options.listen, port);
  replicas_->Start([this](const Topology& topology) { OnCheck(topology); });
  return absl::OkStatus();
}

void Broker::OnCheck(const Topology& topology) {
  metrics_->SetReplicas(topology);
  if (grpc_server_ == nullptr || draining_.load()) return;
  const bool serving = topology.shards > 0 && topology.UnservedShards().empty();
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(serving);
  health->SetServingStatus(kServiceName, serving);
}

void Broker::Drain(absl::Duration timeout) {
  if (draining_.exchange(true)) return;
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(false);
  health->SetServingStatus(kServiceName, false);
  grpc_server_->Shutdown(absl::ToChronoTime(absl::Now() + timeout));
}

Broker::~Broker() {
  if (grpc_server_ != nullptr) {
    if (!draining_.exchange(true)) grpc_server_->Shutdown(std::chrono::system_clock::now());
    grpc_server_->Wait();
  }
  // Queries still running on the shards end (by their deadlines at the latest) before the
  // replicas they call go; the replica checks stop before what their callback touches goes.
  fanout_.reset();
  replicas_.reset();
}

}  // namespace tandem::broker
