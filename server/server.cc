#include "server/server.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <thread>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/thread_priority.h"
#include "base/version.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "index/index.h"
#include "match/cpu_matcher.h"
#include "prometheus/registry.h"
#include "rpc/grpc_listen.h"
#include "rpc/grpc_log.h"
#include "rpc/metrics_endpoint.h"
#include "rpc/process_metrics.h"
#include "server/batch_metrics.h"
#include "server/executor_factory.h"
#include "server/query_dispatcher.h"
#include "server/search_service.h"
#include "server/subscription_metrics.h"
#include "server/subscription_service.h"

namespace tandem::server {
namespace {

constexpr char kServiceName[] = "tandem.v1.SearchService";
constexpr char kSubscriptionServiceName[] = "tandem.v1.SubscriptionService";
// CpuMatcherOptions::threads' bound.
constexpr int kMaxMatchThreads = 256;

const char* MatchEngineName(match::MatchEngine engine) {
  switch (engine) {
    case match::MatchEngine::kCpu:
      return "cpu";
    case match::MatchEngine::kGpu:
      return "gpu";
    case match::MatchEngine::kAuto:
      break;
  }
  return "auto";
}
// After the in-flight queries are done, how long the gRPC server may take to flush their responses
// before it cancels what is left (idle streams, health watches).
constexpr absl::Duration kShutdownGrace = absl::Seconds(1);

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  std::unique_ptr<Server> server(new Server());
  TANDEM_RETURN_IF_ERROR(server->Start(options));
  return server;
}

absl::Status Server::Start(const ServerOptions& options) {
  TANDEM_RETURN_IF_ERROR(ValidateLimits(options.limits));
  const GrpcOptions& grpc = options.grpc;
  if (grpc.max_receive_message_bytes < 1 || grpc.max_send_message_bytes < 1) {
    return absl::InvalidArgumentError("message size limits must be at least 1 byte");
  }
  if (grpc.max_concurrent_streams < 1 || grpc.max_concurrent_streams > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("grpc_max_concurrent_streams must be between 1 and ", INT32_MAX, ", got ",
                     grpc.max_concurrent_streams));
  }
  constexpr uint64_t kMinMemoryQuota = uint64_t{16} << 20;
  if (grpc.memory_quota_bytes < kMinMemoryQuota) {
    return absl::InvalidArgumentError(absl::StrCat("grpc_memory_quota_bytes must be at least ",
                                                   kMinMemoryQuota, ", got ",
                                                   grpc.memory_quota_bytes));
  }
  rpc::LimitLibraryLogs();
  absl::StatusOr<std::unique_ptr<index::Index>> index = index::Index::Open(options.index_dir);
  if (!index.ok()) {
    return absl::Status(index.status().code(),
                        absl::StrCat("cannot open index: ", index.status().message()));
  }
  index_ = *std::move(index);
  EngineOptions engine_options = options.engines;
  // A context per GPU worker, or with the batch path (where workers wait in the batch buffer) per
  // query that runs alone, up to 4: each holds scratch for an OR over every document.
  // With several GPUs, each gets its share of the GPU workers.
  const size_t gpus = ResolveGpuDevices(options.engines.gpu_devices).size();
  const size_t gpu_threads = (options.scheduler.executor.gpu_threads + gpus - 1) / gpus;
  engine_options.gpu_contexts = static_cast<int>(std::min<size_t>(
      options.engines.gpu_batch ? std::min<size_t>(gpu_threads, 4) : gpu_threads, INT32_MAX));
  absl::StatusOr<EngineSet> engines = CreateEngines(*index_, engine_options);
  if (!engines.ok()) {
    return absl::Status(engines.status().code(),
                        absl::StrCat("cannot create engines: ", engines.status().message()));
  }
  engines_ = *std::move(engines);
  engine_summary_ = engines_.summary;
  std::vector<std::string> engine_names{std::string(engines_.cpu->name())};
  if (engines_.gpu != nullptr) engine_names.emplace_back(engines_.gpu->name());
  registry_ = std::make_shared<prometheus::Registry>();
  metrics_ = std::make_unique<QueryMetrics>(
      *registry_,
      BuildInfo{
          .version = base::Version(), .commit = base::Commit(), .gpu = engines_.gpu != nullptr},
      engine_names);
  metrics_->SetIndex(*index_);
  TANDEM_ASSIGN_OR_RETURN(
      executors_, CreateExecutor(options.scheduler, *index_, engines_, *registry_, *metrics_));
  metrics_->SetQueueCapacity(executors_.executor->queue_capacity());
  scheduler_summary_ = executors_.summary;
  // The query workers exist; every thread created from here on (gRPC's, which start with its
  // credentials, and the metrics endpoint's) inherits the lower priority of this one.
  const int rpc_nice = grpc.rpc_nice.value_or(engines_.gpu == nullptr ? kRpcNiceWithoutGpu : 0);
  if (rpc_nice < 0 || rpc_nice > 19) {
    return absl::InvalidArgumentError(
        absl::StrCat("rpc_nice must be between 0 and 19 nice levels, got ", rpc_nice));
  }
  if (absl::Status lowered = base::LowerThreadPriority(rpc_nice); !lowered.ok()) {
    std::fprintf(stderr, "tandem-server: RPC threads keep the workers' priority: %s\n",
                 std::string(lowered.message()).c_str());
  }
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                          rpc::MakeCredentials(grpc.tls));
  dispatcher_ = std::make_unique<QueryDispatcher>(*index_, *executors_.executor, *metrics_,
                                                  options.limits, nullptr, engines_.filters);
  service_ = std::make_unique<SearchService>(
      *index_, *dispatcher_, executors_.executor->engines(),
      SearchServiceOptions{.max_response_bytes = static_cast<size_t>(grpc.max_send_message_bytes)});
  // After the priority is lowered: matching standing queries yields to the query workers.
  TANDEM_RETURN_IF_ERROR(StartSubscriptions(options));

  if (!options.metrics_listen.empty()) {
    process_metrics_ = std::make_shared<rpc::ProcessMetrics>();
    std::vector<std::weak_ptr<prometheus::Collectable>> collectables = {registry_,
                                                                        process_metrics_};
    if (!engines_.gpu_batching.empty()) {
      batch_metrics_ = std::make_shared<BatchMetrics>(engines_.gpu_batching);
      collectables.push_back(batch_metrics_);
    }
    const MetricsSecurity& security = options.metrics_security;
    TANDEM_ASSIGN_OR_RETURN(metrics_endpoint_, rpc::MetricsEndpoint::Start(
                                                   {.listen = options.metrics_listen,
                                                    .tls_cert_file = security.tls_cert_file,
                                                    .tls_key_file = security.tls_key_file,
                                                    .basic_auth_file = security.basic_auth_file},
                                                   std::move(collectables)));
    metrics_address_ = rpc::WithPort(options.metrics_listen, metrics_endpoint_->port());
  }

  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's health service has no generated code; this file's descriptor, linked in by naming it,
  // lets reflection describe it (proto/grpc/health/v1/health.proto).
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  TANDEM_RETURN_IF_ERROR(rpc::CheckListenPort(grpc.listen));
  builder.AddListeningPort(grpc.listen, credentials, &port);
  builder.RegisterService(service_.get());
  builder.RegisterService(subscription_service_.get());
  builder.SetMaxReceiveMessageSize(grpc.max_receive_message_bytes);
  builder.SetMaxSendMessageSize(grpc.max_send_message_bytes);
  // A port held by another process must fail startup, not be silently shared.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  // Server pings find dead clients (a broker that vanished without closing) so their streams end;
  // clients may ping as often as every 10 s without being told to back off.
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS,
                             static_cast<int>(absl::ToInt64Milliseconds(grpc.keepalive_time)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS,
                             static_cast<int>(absl::ToInt64Milliseconds(grpc.keepalive_timeout)));
  builder.AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder.AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, 10000);
  // Overload: a client connection has at most this many calls open, so a flood waits in the
  // client instead of in the node's memory and threads; the quota bounds what the transport holds.
  builder.AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS,
                             static_cast<int>(grpc.max_concurrent_streams));
  grpc::ResourceQuota quota("tandem-server");
  quota.Resize(static_cast<size_t>(grpc.memory_quota_bytes));
  builder.SetResourceQuota(quota);
  {
    rpc::GrpcLogCapture capture;
    grpc_server_ = builder.BuildAndStart();
    if (grpc_server_ == nullptr || port == 0) {
      return absl::UnavailableError(rpc::ListenFailure(grpc.listen, capture.text()));
    }
  }
  address_ = rpc::WithPort(grpc.listen, port);
  // The index is loaded and the engines are ready: serving from the first call.
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(true);
  health->SetServingStatus(kServiceName, true);
  health->SetServingStatus(kSubscriptionServiceName, true);
  return absl::OkStatus();
}

absl::Status Server::StartSubscriptions(const ServerOptions& options) {
  const SubscriptionOptions& subscriptions = options.subscriptions;
  const match::Limits& limits = subscriptions.registry.limits;
  if (limits.max_filters_per_predicate < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_filters_per_subscription must be at least 1, got ", limits.max_filters_per_predicate));
  }
  if (limits.max_constraints_per_filter < 1 ||
      limits.max_constraints_per_filter > match::kMaxConstraintsPerFilter) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_constraints_per_filter must be between 1 and ",
                     match::kMaxConstraintsPerFilter, ", got ", limits.max_constraints_per_filter));
  }
  if (subscriptions.match_threads < 0 || subscriptions.match_threads > kMaxMatchThreads) {
    return absl::InvalidArgumentError(absl::StrCat("match_threads must be between 0 and ",
                                                   kMaxMatchThreads, ", got ",
                                                   subscriptions.match_threads));
  }
  SubscriptionServiceOptions service_options{
      .max_match_documents = subscriptions.max_match_documents,
      .watch_queue = subscriptions.watch_queue,
      .max_response_bytes = static_cast<size_t>(options.grpc.max_send_message_bytes)};
  TANDEM_RETURN_IF_ERROR(ValidateSubscriptionServiceOptions(service_options));

  const int threads =
      subscriptions.match_threads > 0
          ? subscriptions.match_threads
          : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, kMaxMatchThreads);
  absl::StatusOr<std::unique_ptr<match::CpuMatcher>> cpu =
      match::CpuMatcher::Create({.threads = threads});
  if (!cpu.ok()) {
    return absl::Status(cpu.status().code(),
                        absl::StrCat("cannot create the CPU matcher: ", cpu.status().message()));
  }
  // The GPU matcher where it is asked for, or where GPU engines serve queries and the engine is
  // left to the router.
  const match::MatchEngine engine = subscriptions.registry.engine;
  std::unique_ptr<match::Matcher> gpu;
  std::string gpu_note;
  if (engine == match::MatchEngine::kGpu ||
      (engine == match::MatchEngine::kAuto && engines_.gpu != nullptr)) {
    absl::StatusOr<std::unique_ptr<match::Matcher>> created =
        CreateGpuMatcher(options.engines.gpu_devices);
    if (created.ok()) {
      gpu = *std::move(created);
    } else if (engine == match::MatchEngine::kGpu) {
      return absl::FailedPreconditionError(
          absl::StrCat("match engine gpu required but unavailable: ", created.status().message()));
    } else {
      gpu_note = absl::StrCat(" (GPU matcher unavailable: ", created.status().message(), ")");
    }
  }
  const bool has_gpu = gpu != nullptr;
  absl::StatusOr<std::unique_ptr<match::SubscriptionRegistry>> registry =
      match::SubscriptionRegistry::Open(subscriptions.registry, *std::move(cpu), std::move(gpu));
  if (!registry.ok()) {
    return absl::Status(registry.status().code(),
                        absl::StrCat("cannot open subscriptions: ", registry.status().message()));
  }
  subscriptions_ = *std::move(registry);
  std::vector<std::string> engine_names{"cpu"};
  if (has_gpu) engine_names.push_back("gpu");
  subscription_metrics_ = std::make_unique<SubscriptionMetrics>(*registry_, engine_names);
  subscription_service_ = std::make_unique<SubscriptionService>(
      *subscriptions_, index_->analyzer(), *subscription_metrics_, std::move(service_options));

  const std::string& path = subscriptions.registry.path;
  subscription_summary_ = absl::StrCat(
      subscriptions_->stats().subscriptions, " subscriptions ",
      path.empty() ? "in memory only (no --subscriptions file: they are lost at exit)"
                   : absl::StrCat("kept in ", path),
      "; matched on the CPU (", threads, " threads)", has_gpu ? " and the GPU" : gpu_note,
      engine == match::MatchEngine::kAuto ? ""
                                          : absl::StrCat(", engine ", MatchEngineName(engine)));
  return absl::OkStatus();
}

Server::~Server() {
  if (!stopped_) {
    if (grpc_server_ != nullptr) grpc_server_->Shutdown(std::chrono::system_clock::now());
    if (executors_.executor != nullptr) executors_.executor->Shutdown();
  }
}

bool Server::TrimMemoryIfIdle() {
  if (dispatcher_ == nullptr || dispatcher_->in_flight() != 0) return false;
  malloc_trim(0);
  return true;
}

bool Server::Drain(absl::Duration timeout) {
  if (stopped_) return true;
  dispatcher_->StartDraining();
  subscription_service_->StartDraining();
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(false);
  health->SetServingStatus(kServiceName, false);
  health->SetServingStatus(kSubscriptionServiceName, false);
  const bool drained = dispatcher_->WaitForIdle(absl::Now() + timeout);
  // What is still open now is idle (streams, health watches) or, after a timeout, queries that are
  // cancelled here; their engines see the cancellation and stop.
  grpc_server_->Shutdown(
      absl::ToChronoTime(absl::Now() + (drained ? kShutdownGrace : absl::ZeroDuration())));
  executors_.executor->Shutdown();
  stopped_ = true;
  return drained;
}

}  // namespace tandem::server
