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
#include "base/enum_names.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "base/thread_priority.h"
#include "base/version.h"
#include "grpcpp/grpcpp.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/resource_quota.h"
#include "grpcpp/security/server_credentials.h"
#include "index/index.h"
#include "match/cpu_matcher.h"
#include "prometheus/registry.h"
#include "rpc/exposure.h"
#include "rpc/grpc_listen.h"
#include "rpc/grpc_log.h"
#include "rpc/metrics_endpoint.h"
#include "rpc/process_metrics.h"
#include "server/batch_metrics.h"
#include "server/executor_factory.h"
#include "server/index_service.h"
#include "server/memory_metrics.h"
#include "server/query_dispatcher.h"
#include "server/search_service.h"
#include "server/serving_index.h"
#include "server/subscription_metrics.h"
#include "server/subscription_service.h"

namespace tandem::server {
namespace {

constexpr char kServiceName[] = "tandem.v1.SearchService";
constexpr char kSubscriptionServiceName[] = "tandem.v1.SubscriptionService";
constexpr char kIndexServiceName[] = "tandem.v1.IndexService";
// The most lists a new index's device caches are warmed with (the old caches' most recent ones);
// the new caches' capacity bounds it first on any real index.
constexpr size_t kMaxWarmLists = size_t{1} << 20;
// How long a load may spend warming the new device caches before it switches: copies from stored
// layouts take microseconds a list, transcoding milliseconds (`tandem-index gpu-layouts`).
constexpr absl::Duration kWarmBudget = absl::Seconds(30);
// CpuMatcherOptions::threads' bound.
constexpr int kMaxMatchThreads = 256;

constexpr base::EnumName<match::MatchEngine> kMatchEngineNames[] = {
    {match::MatchEngine::kCpu, "cpu"},
    {match::MatchEngine::kGpu, "gpu"},
    {match::MatchEngine::kAuto, "auto"}};
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
  if (options.memory_breaker_bytes < options.limits.max_response_bytes_in_flight) {
    return absl::InvalidArgumentError(
        absl::StrCat("memory_breaker_bytes (", options.memory_breaker_bytes,
                     ") must be at least max_response_bytes_in_flight (",
                     options.limits.max_response_bytes_in_flight,
                     "): the responses are part of what it bounds"));
  }
  TANDEM_RETURN_IF_ERROR(rpc::CheckExposure({.program = "tandem-server",
                                             .what = "gRPC in plaintext",
                                             .address = grpc.listen,
                                             .protection = "--tls-cert and --tls-key",
                                             .protected_ = !grpc.tls.cert_file.empty()},
                                            options.allow_insecure));
  if (!options.metrics_listen.empty()) {
    const MetricsSecurity& security = options.metrics_security;
    TANDEM_RETURN_IF_ERROR(rpc::CheckExposure(
        {.program = "tandem-server",
         .what = "metrics",
         .address = options.metrics_listen,
         .protection = "--metrics-tls-cert, --metrics-tls-key and --metrics-basic-auth-file",
         .protected_ = !security.tls_cert_file.empty() && !security.basic_auth_file.empty()},
        options.allow_insecure));
  }
  rpc::LimitLibraryLogs();
  memory_breaker_ = std::make_unique<base::MemoryBreaker>(options.memory_breaker_bytes);
  responses_ = &memory_breaker_->AddAccount("responses");
  filter_cache_ = &memory_breaker_->AddAccount("filter_cache");
  watch_queues_ = &memory_breaker_->AddAccount("watch_queues");
  options_ = options;
  indexes_ = std::make_unique<IndexLifecycle>(
      [this](uint64_t generation, const std::string& dir) { OnReleased(generation, dir); });
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<ServingIndex> opened,
                          ServingIndex::Open(options.index_dir, options, /*generation=*/1));
  const EngineSet& engines = opened->engines();
  engine_summary_ = engines.summary;
  std::vector<std::string> engine_names{std::string(engines.cpu->name())};
  if (engines.gpu != nullptr) engine_names.emplace_back(engines.gpu->name());
  if (engines.gpu_caches.capacity_bytes) gpu_cache_capacity_ = engines.gpu_caches.capacity_bytes();
  registry_ = std::make_shared<prometheus::Registry>();
  metrics_ = std::make_unique<QueryMetrics>(
      *registry_,
      BuildInfo{
          .version = base::Version(), .commit = base::Commit(), .gpu = engines.gpu != nullptr},
      engine_names);
  metrics_->SetIndex(opened->index());
  TANDEM_RETURN_IF_ERROR(opened->StartExecutor(
      options.scheduler, *registry_, *metrics_,
      {.budget_bytes = options.filter_cache_bytes, .breaker = filter_cache_}));
  metrics_->SetQueueCapacity(opened->executor().queue_capacity());
  scheduler_summary_ = opened->executors().summary;
  const bool has_gpu = engines.gpu != nullptr;
  std::vector<const scheduler::BatchingEngine*> batching = engines.gpu_batching;
  // The subscriptions' analyzer is the first index's, kept for the node's life: standing queries
  // are parsed once, and a later index must not change how documents are matched against them.
  TANDEM_ASSIGN_OR_RETURN(subscription_analyzer_,
                          index::Analyzer::Create(opened->index().analyzer().config()));
  {
    absl::MutexLock lock(&serving_mu_);
    serving_ = indexes_->Own(std::move(opened));
  }
  // The query workers exist; every thread created from here on (gRPC's, which start with its
  // credentials, and the metrics endpoint's) inherits the lower priority of this one.
  const int rpc_nice = grpc.rpc_nice.value_or(has_gpu ? 0 : kRpcNiceWithoutGpu);
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
  const std::shared_ptr<ServingIndex> serving = Serving();
  if (options.live_shard.has_value() && serving->target().index.shard() != nullptr) {
    return absl::InvalidArgumentError(
        "--live-shard: the index is a shard cut by tandem-index shard, which has its place "
        "already");
  }
  dispatcher_ =
      std::make_unique<QueryDispatcher>(std::shared_ptr<QueryTarget>(serving, &serving->target()),
                                        *metrics_, options.limits, nullptr, responses_);
  service_ = std::make_unique<SearchService>(
      *dispatcher_, serving->executor().engines(),
      SearchServiceOptions{.max_response_bytes = static_cast<size_t>(grpc.max_send_message_bytes),
                           .live_shard = options.live_shard});
  IndexServiceTargets index_targets;
  index_targets.live = [this] { return Serving()->live(); };
  index_targets.load =
      [this](const std::string& dir) -> absl::StatusOr<tandem::v1::LoadIndexResponse> {
    TANDEM_ASSIGN_OR_RETURN(LoadReport report, LoadIndex(dir));
    tandem::v1::LoadIndexResponse response;
    response.set_index_id(report.index_id);
    response.set_documents(report.documents);
    response.set_generation(report.generation);
    response.set_open_seconds(report.open_seconds);
    response.set_warm_seconds(report.warm_seconds);
    response.set_lists_warmed(report.lists_warmed);
    return response;
  };
  index_service_ = std::make_unique<IndexService>(
      std::move(index_targets), IndexServiceOptions{.read_only = options.read_only});
  // After the priority is lowered: matching standing queries yields to the query workers.
  TANDEM_RETURN_IF_ERROR(StartSubscriptions(options, *subscription_analyzer_));

  if (!options.metrics_listen.empty()) {
    process_metrics_ = std::make_shared<rpc::ProcessMetrics>();
    std::vector<std::weak_ptr<prometheus::Collectable>> collectables = {registry_,
                                                                        process_metrics_};
    if (!batching.empty()) {
      batch_metrics_ = std::make_shared<BatchMetrics>(std::move(batching), serving);
      collectables.push_back(batch_metrics_);
    }
    memory_metrics_ = std::make_shared<MemoryMetrics>(
        *memory_breaker_, [this] { return dispatcher_->target()->filters.stats(); },
        options.filter_cache_bytes);
    collectables.push_back(memory_metrics_);
    const MetricsSecurity& security = options.metrics_security;
    TANDEM_ASSIGN_OR_RETURN(metrics_endpoint_, rpc::MetricsEndpoint::Start(
                                                   {.listen = options.metrics_listen,
                                                    .tls_cert_file = security.tls_cert_file,
                                                    .tls_key_file = security.tls_key_file,
                                                    .basic_auth_file = security.basic_auth_file},
                                                   std::move(collectables)));
    metrics_address_ = rpc::WithPort(options.metrics_listen, metrics_endpoint_->port());
  }

  rpc::EnableHealthAndReflection();
  grpc::ServerBuilder builder;
  int port = 0;
  TANDEM_RETURN_IF_ERROR(rpc::CheckListenPort(grpc.listen));
  builder.AddListeningPort(grpc.listen, credentials, &port);
  builder.RegisterService(service_.get());
  builder.RegisterService(subscription_service_.get());
  builder.RegisterService(index_service_.get());
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
  TANDEM_ASSIGN_OR_RETURN(grpc_server_, rpc::BuildAndStart(builder, grpc.listen, port));
  address_ = rpc::WithPort(grpc.listen, port);
  // The index is loaded and the engines are ready: serving from the first call.
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(true);
  health->SetServingStatus(kServiceName, true);
  health->SetServingStatus(kSubscriptionServiceName, true);
  health->SetServingStatus(kIndexServiceName, true);
  return absl::OkStatus();
}

absl::Status Server::StartSubscriptions(const ServerOptions& options,
                                        const index::Analyzer& analyzer) {
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
      .watch_queue_bytes = subscriptions.watch_queue_bytes,
      .watch_breaker = watch_queues_,
      .max_response_bytes = static_cast<size_t>(options.grpc.max_send_message_bytes),
      .authorize_by_certificate = !options.grpc.tls.client_ca_file.empty()};
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
      (engine == match::MatchEngine::kAuto && Serving()->engines().gpu != nullptr)) {
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
      *subscriptions_, analyzer, *subscription_metrics_, std::move(service_options));

  const std::string& path = subscriptions.registry.path;
  subscription_summary_ = absl::StrCat(
      subscriptions_->stats().subscriptions, " subscriptions ",
      path.empty() ? "in memory only (no --subscriptions file: they are lost at exit)"
                   : absl::StrCat("kept in ", path),
      "; matched on the CPU (", threads, " threads)", has_gpu ? " and the GPU" : gpu_note,
      engine == match::MatchEngine::kAuto
          ? ""
          : absl::StrCat(", engine ", base::NameOf(kMatchEngineNames, engine)),
      options.grpc.tls.client_ca_file.empty()
          ? "; any client may act for any interface (no --tls-client-ca)"
          : "; each interface bound to the client certificates that name it");
  return absl::OkStatus();
}

Server::Server() = default;

Server::~Server() {
  if (!stopped_) {
    if (grpc_server_ != nullptr) grpc_server_->Shutdown(std::chrono::system_clock::now());
    if (std::shared_ptr<ServingIndex> serving = Serving()) serving->executor().Shutdown();
  }
  // Scrapes stop before what they read goes; then every index is released, on the retirer's
  // thread, before the metrics its executor reports to.
  metrics_endpoint_.reset();
  batch_metrics_.reset();
  grpc_server_.reset();
  service_.reset();
  index_service_.reset();
  dispatcher_.reset();
  {
    absl::MutexLock lock(&serving_mu_);
    serving_.reset();
  }
  indexes_.reset();
}

std::shared_ptr<ServingIndex> Server::Serving() const {
  absl::MutexLock lock(&serving_mu_);
  return serving_;
}

std::shared_ptr<const ServingIndex> Server::serving() const { return Serving(); }

size_t Server::queue_capacity() const { return Serving()->executor().queue_capacity(); }

size_t Server::retiring() const {
  const size_t owned = indexes_->pending();
  return owned > 0 ? owned - 1 : 0;  // less the one serving
}

bool Server::TrimMemoryIfIdle() {
  if (dispatcher_ == nullptr || dispatcher_->in_flight() != 0) return false;
  malloc_trim(0);
  return true;
}

absl::StatusOr<Server::LoadReport> Server::LoadIndex(const std::string& dir) {
  if (!load_mu_.TryLock()) {
    return absl::AbortedError("another index load is in progress; retry when it is done");
  }
  struct Unlock {
    absl::Mutex& mu;
    ~Unlock() { mu.Unlock(); }
  } unlock{load_mu_};  // the lock TryLock took
  if (dispatcher_->draining()) {
    return absl::UnavailableError("the node is draining; it loads no index");
  }
  const std::shared_ptr<ServingIndex> old = Serving();
  TANDEM_RETURN_IF_ERROR(CheckWritesAllowLoad(dir, *old));
  TANDEM_RETURN_IF_ERROR(CheckHostRoomFor(dir, old->index()));
  const absl::Time start = absl::Now();
  // Created on the lifecycle thread, whose priority the new query workers inherit. Each new device
  // cache takes its share of what the old one left free, and grows to the old capacity once the
  // old index is released (OnReleased).
  std::unique_ptr<ServingIndex> opened;
  TANDEM_RETURN_IF_ERROR(indexes_->Run([&]() -> absl::Status {
    TANDEM_ASSIGN_OR_RETURN(
        opened, ServingIndex::Open(dir, options_, generations_ + 1, {.beside_another = true}));
    if (opened->engines().gpu_name != old->engines().gpu_name ||
        (opened->engines().gpu == nullptr) != (old->engines().gpu == nullptr)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the new index would be served by other engines (", opened->engines().summary,
          ") than the serving one (", old->engines().summary, "); restart the node to switch"));
    }
    return opened->StartExecutor(
        options_.scheduler, *registry_, *metrics_,
        {.budget_bytes = options_.filter_cache_bytes, .breaker = filter_cache_});
  }));
  LoadReport report;
  report.open_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  const absl::Time warm_start = absl::Now();
  const EngineSet::GpuCaches& from = old->engines().gpu_caches;
  const EngineSet::GpuCaches& to = opened->engines().gpu_caches;
  if (from.hottest_terms && to.warm) {
    absl::StatusOr<uint64_t> warmed = to.warm(from.hottest_terms(kMaxWarmLists), kWarmBudget);
    if (!warmed.ok()) {
      return absl::Status(
          warmed.status().code(),
          absl::StrCat("cannot warm the new index's device cache: ", warmed.status().message()));
    }
    report.lists_warmed = *warmed;
  }
  report.warm_seconds = absl::ToDoubleSeconds(absl::Now() - warm_start);
  report.index_id = opened->index().manifest().index_id;
  report.documents = opened->index().num_docs();
  report.generation = opened->generation();
  ++generations_;
  Switch(indexes_->Own(std::move(opened)));
  std::fprintf(stderr,
               "tandem-server: serving %s (%llu documents, generation %llu; opened in %.2f s, %llu "
               "lists warmed in %.2f s); the old index goes when its last query ends\n",
               dir.c_str(), static_cast<unsigned long long>(report.documents),
               static_cast<unsigned long long>(report.generation), report.open_seconds,
               static_cast<unsigned long long>(report.lists_warmed), report.warm_seconds);
  return report;
}

void Server::Switch(std::shared_ptr<ServingIndex> serving) {
  metrics_->SetIndex(serving->index());
  metrics_->SetQueueCapacity(serving->executor().queue_capacity());
  if (batch_metrics_ != nullptr) batch_metrics_->Switch(serving->engines().gpu_batching, serving);
  dispatcher_->SwitchTarget(std::shared_ptr<QueryTarget>(serving, &serving->target()));
  absl::MutexLock lock(&serving_mu_);
  serving_ = std::move(serving);
}

void Server::OnReleased(uint64_t generation, const std::string& dir) {
  const std::shared_ptr<ServingIndex> serving = Serving();
  if (serving == nullptr) return;  // the node stops: nothing to report or grow
  std::fprintf(stderr, "tandem-server: released the index at %s (generation %llu)\n", dir.c_str(),
               static_cast<unsigned long long>(generation));
  if (gpu_cache_capacity_ == 0) return;
  const EngineSet::GpuCaches& caches = serving->engines().gpu_caches;
  if (!caches.grow) return;
  if (absl::Status grown = caches.grow(gpu_cache_capacity_); !grown.ok()) {
    std::fprintf(stderr, "tandem-server: the device cache keeps %llu bytes: %s\n",
                 static_cast<unsigned long long>(caches.capacity_bytes()),
                 std::string(grown.message()).c_str());
  }
}

bool Server::Drain(absl::Duration timeout) {
  if (stopped_) return true;
  dispatcher_->StartDraining();
  subscription_service_->StartDraining();
  grpc::HealthCheckServiceInterface* health = grpc_server_->GetHealthCheckService();
  health->SetServingStatus(false);
  health->SetServingStatus(kServiceName, false);
  health->SetServingStatus(kSubscriptionServiceName, false);
  health->SetServingStatus(kIndexServiceName, false);
  const bool drained = dispatcher_->WaitForIdle(absl::Now() + timeout);
  // What is still open now is idle (streams, health watches) or, after a timeout, queries that are
  // cancelled here; their engines see the cancellation and stop.
  grpc_server_->Shutdown(
      absl::ToChronoTime(absl::Now() + (drained ? kShutdownGrace : absl::ZeroDuration())));
  Serving()->executor().Shutdown();
  stopped_ = true;
  return drained;
}

}  // namespace tandem::server
