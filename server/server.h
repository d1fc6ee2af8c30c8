// File: server.h
//
// One query node: opens the index, creates the engines, the executor, the standing queries'
// registry, the metrics endpoint and the gRPC server (SearchService, SubscriptionService,
// grpc.health.v1 health, server reflection), and drains it on shutdown.
// Create() does everything that can fail before it returns, so a bad index, an unusable TLS file or
// a port in use is reported at startup with one message, never later.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
//   std::cout << "listening on " << server->address();
//   ... wait for SIGTERM ...
//   server->Drain(absl::Seconds(10));
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "base/memory_breaker.h"
#include "match/subscription_registry.h"
#include "rpc/grpc_listen.h"
#include "server/engine_factory.h"
#include "server/executor_factory.h"
#include "server/query_metrics.h"
#include "server/request_validation.h"

namespace grpc {
class Server;
}  // namespace grpc
namespace prometheus {
class Registry;
}  // namespace prometheus

namespace tandem::index {
class Analyzer;
class Index;
}  // namespace tandem::index

namespace tandem::rpc {
class MetricsEndpoint;
class ProcessMetrics;
}  // namespace tandem::rpc

namespace tandem::server {

class BatchMetrics;
class IndexLifecycle;
class IndexService;
class MemoryMetrics;
class QueryDispatcher;
class ServingIndex;
class SearchService;
class SubscriptionMetrics;
class SubscriptionService;

// The gRPC front end.
struct GrpcOptions {
  std::string listen = "127.0.0.1:50051";  // host:port; port 0 picks a free one
  rpc::TlsOptions tls;
  int max_receive_message_bytes = 16 << 20;
  int max_send_message_bytes = 256 << 20;
  absl::Duration keepalive_time = absl::Seconds(60);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  // Calls one connection may have open at once (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS); more wait
  // in the client and cost the node nothing.
  uint32_t max_concurrent_streams = 256;
  // gRPC's resource quota: memory for connections and calls in transit.
  uint64_t memory_quota_bytes = uint64_t{1} << 30;
  // Nice levels below the query workers for the threads that accept calls (gRPC's, and the
  // metrics endpoint's), 0..19; nothing: kRpcNiceWithoutGpu on a node without a GPU engine, 0 with
  // one (there the CPU workers already run below them; worker_placement.h). Under overload the
  // workers then keep their cores, and refusing the excess takes what is left.
  std::optional<int> rpc_nice;
};

// See GrpcOptions::rpc_nice: measured at three times a CPU-only node's capacity
// (bench/results/unary_overload.json).
inline constexpr int kRpcNiceWithoutGpu = 10;

// The Prometheus endpoint's protection (its address is ServerOptions::metrics_listen; what each
// field means: rpc::MetricsEndpointOptions in metrics_endpoint.h).
struct MetricsSecurity {
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string basic_auth_file;
};

// Standing queries (subscription_service.h): the registry's file, limits and engine, and the
// service's bounds.
struct SubscriptionOptions {
  // path: the subscriptions file (empty: in memory only); limits: what one subscription or
  // document may hold; engine: auto, cpu or gpu (gpu fails to start without a GPU matcher).
  match::RegistryOptions registry;
  // Threads of the CPU matcher, 1..256; 0: one per core.
  int match_threads = 0;
  uint32_t max_match_documents = 1024;
  uint32_t watch_queue = 1024;  // events per Watch stream
  // Bytes the events queued for every Watch stream together may take; beyond, the streams that
  // hold the most lose events first.
  uint64_t watch_queue_bytes = uint64_t{64} << 20;
};

// Everything a node is configured with, each part owned (and validated) by the component that
// uses it; tandem-server fills it from its flags.
struct ServerOptions {
  std::string index_dir;
  // Refuse IndexService calls (FAILED_PRECONDITION): no writes, no loads; SIGHUP still reloads
  // index_dir.
  bool read_only = false;
  // Writes (IndexService.Write): acknowledged operations become searchable within this interval
  // (zero: only at IndexService.Refresh), and are acknowledged once on disk unless !sync_writes.
  absl::Duration refresh_interval = absl::Seconds(1);
  bool sync_writes = true;
  // With a GPU engine, the written index's segments of at least this many documents are searched
  // on the GPU, smaller ones on the CPU (live::DeviceEngines).
  uint32_t live_gpu_min_docs = 1u << 20;
  // A writable index's place in a collection of live shards behind tandem-broker
  // (--live-shard, ParseLiveShard); not with an index cut by tandem-index shard.
  std::optional<tandem::v1::ShardInfo> live_shard;
  std::string metrics_listen = "127.0.0.1:9464";  // empty disables the metrics endpoint
  MetricsSecurity metrics_security;
  GrpcOptions grpc;
  RequestLimits limits;
  // gpu_contexts is taken from scheduler.executor.gpu_threads: one context per GPU worker (at most
  // 4 with the batch path).
  EngineOptions engines;
  SchedulerOptions scheduler;
  SubscriptionOptions subscriptions;
  // The memory circuit breaker (base/memory_breaker.h): the most bytes the responses in flight,
  // the filter cache and the Watch streams' queues may hold together. The caches and queues give
  // way to queries; a query that still does not fit is refused RESOURCE_EXHAUSTED. At least
  // limits.max_response_bytes_in_flight.
  uint64_t memory_breaker_bytes = uint64_t{512} << 20;
  // The filter cache's budget (filter/filter_cache.h), bytes it holds in all.
  uint64_t filter_cache_bytes = uint64_t{256} << 20;
  // Serve gRPC without TLS, or metrics without HTTPS and basic auth, on an address other hosts can
  // reach (rpc/exposure.h); refused otherwise.
  bool allow_insecure = false;
};

class Server {
 public:
  // Errors carry a message fit for one line after "tandem-server: ", e.g.
  // "cannot open index: index file '/x/manifest.bin' ...".
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~Server();

  // The gRPC address actually bound ("127.0.0.1:50051"; the real port when 0 was asked for).
  const std::string& address() const { return address_; }
  // The metrics address actually bound, or "" when disabled.
  const std::string& metrics_address() const { return metrics_address_; }
  // What engines serve queries and why ("CPU engine only (GPU turned off)").
  const std::string& engine_summary() const { return engine_summary_; }
  // Which scheduler dispatches them, and its cost model ("hybrid scheduler (...); cost model:
  // ...").
  const std::string& scheduler_summary() const { return scheduler_summary_; }
  // The standing queries: how many, where they are kept, which engines match them.
  const std::string& subscription_summary() const { return subscription_summary_; }
  // The index served now, with its engines and executor; held, it stays alive after a switch.
  std::shared_ptr<const ServingIndex> serving() const;
  // The admission queue's capacity (ExecutorOptions::queue_capacity, resolved when it was 0).
  size_t queue_capacity() const;

  // Switches the node to the index at `dir` without a restart and without failing a query (Lucene's
  // SearcherManager.maybeRefresh does the same for a new commit point): checks that host memory
  // holds it beside the serving index, opens and checks it, creates its engines (each GPU cache
  // sized to what is free beside the serving one's) and executor, warms its device caches with the
  // serving index's hottest lists, and switches new calls to it. The old index is released on a
  // background thread when its last call is answered; its device memory then goes to the new
  // caches, up to the old capacity. After an error the serving index is unchanged; the codes are
  // IndexService.LoadIndex's (proto/tandem/v1/index.proto). One load at a time: ABORTED while
  // another runs.
  struct LoadReport {
    std::string index_id;
    uint64_t documents = 0;
    uint64_t generation = 0;
    double open_seconds = 0;
    double warm_seconds = 0;
    uint64_t lists_warmed = 0;
  };
  absl::StatusOr<LoadReport> LoadIndex(const std::string& dir);
  // How many indexes loaded before are not yet released (their last calls still running).
  size_t retiring() const;

  // Gives the allocator's free memory back to the system (malloc_trim) when no query is in flight.
  // After a burst (an overload, a large batch) the allocator keeps what the burst freed; the
  // server's main loop calls this every few seconds, so that the node's memory returns to its
  // baseline once the burst is over. Returns whether it trimmed.
  bool TrimMemoryIfIdle();

  // Health goes NOT_SERVING, new queries and subscription calls get UNAVAILABLE and Watch streams
  // end; in-flight queries run to completion for at most `timeout`, then the rest are cancelled
  // and the server stops. Returns whether every in-flight query finished within the timeout. Call
  // once.
  bool Drain(absl::Duration timeout);

 private:
  Server();
  absl::Status Start(const ServerOptions& options);
  std::shared_ptr<ServingIndex> Serving() const;
  absl::Status StartSubscriptions(const ServerOptions& options, const index::Analyzer& analyzer);
  // Makes `serving` the one new calls go to.
  void Switch(std::shared_ptr<ServingIndex> serving);
  // On the retirer's thread, after an old index is destroyed.
  void OnReleased(uint64_t generation, const std::string& dir);

  // First: every holder of its accounts (the indexes' filter caches, the dispatcher, the
  // subscription service) releases into it as it goes.
  std::unique_ptr<base::MemoryBreaker> memory_breaker_;
  base::MemoryBreaker::Account* responses_ = nullptr;
  base::MemoryBreaker::Account* filter_cache_ = nullptr;  // every index's filter cache
  base::MemoryBreaker::Account* watch_queues_ = nullptr;  // the subscription service's
  ServerOptions options_;
  std::unique_ptr<IndexLifecycle> indexes_;  // destroys old indexes; stopped last
  mutable absl::Mutex serving_mu_;
  std::shared_ptr<ServingIndex> serving_ ABSL_GUARDED_BY(serving_mu_);
  absl::Mutex load_mu_;       // one LoadIndex at a time
  uint64_t generations_ = 1;  // guarded by load_mu_ after Start
  // Each GPU cache's capacity when the node started: what a cache created small beside an old
  // index grows back to once that one is released. 0 without a GPU engine.
  uint64_t gpu_cache_capacity_ = 0;
  std::string engine_summary_;
  std::unique_ptr<index::Analyzer> subscription_analyzer_;
  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<QueryMetrics> metrics_;
  std::string scheduler_summary_;
  std::unique_ptr<QueryDispatcher> dispatcher_;
  std::unique_ptr<SearchService> service_;
  std::unique_ptr<IndexService> index_service_;
  std::unique_ptr<match::SubscriptionRegistry> subscriptions_;
  std::unique_ptr<SubscriptionMetrics> subscription_metrics_;
  std::unique_ptr<SubscriptionService> subscription_service_;
  std::string subscription_summary_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::shared_ptr<BatchMetrics> batch_metrics_;  // with GPU batches; scraped by the endpoint
  std::shared_ptr<MemoryMetrics> memory_metrics_;
  std::shared_ptr<rpc::ProcessMetrics> process_metrics_;
  std::unique_ptr<rpc::MetricsEndpoint> metrics_endpoint_;
  std::string address_;
  std::string metrics_address_;
  bool stopped_ = false;
};

}  // namespace tandem::server
