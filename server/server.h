// File: server.h
//
// One query node: opens the index, creates the engines, the executor, the metrics endpoint and the
// gRPC server (SearchService, grpc.health.v1 health, server reflection), and drains it on shutdown.
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
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/thread_priority.h"
#include "server/engine_factory.h"
#include "server/request_validation.h"

namespace grpc {
class Server;
}  // namespace grpc
namespace prometheus {
class Exposer;
}  // namespace prometheus

namespace tandem::index {
class Index;
}  // namespace tandem::index
namespace tandem::cost_model {
class CostModel;
}  // namespace tandem::cost_model

namespace tandem::server {

class QueryDispatcher;
class scheduler::QueryExecutor;
class SearchService;
class ServerMetrics;

struct TlsOptions {
  std::string cert_file;  // PEM server certificate chain; TLS is on when set
  std::string key_file;   // PEM private key
  std::string
      client_ca_file;  // PEM CA bundle; when set, clients must present a certificate it signed
};

// Which QueryExecutor serves queries (executor_factory.h).
enum class SchedulerKind {
  kAuto,    // hybrid when a GPU engine serves queries, pool otherwise
  kPool,    // scheduler::PoolQueryExecutor: one FIFO; CPU unless a request asks for the GPU
  kHybrid,  // scheduler::HybridQueryExecutor: three queues, cost-model routing, work stealing
  // HybridQueryExecutor running one query at a time on the processor the cost model says is
  // cheaper, first come first served (the paper's "CPU+GPU serialized" baseline, Figure 7)
  kSerial,
};

struct ServerOptions {
  std::string index_dir;
  std::string listen = "127.0.0.1:50051";         // host:port; port 0 picks a free one
  std::string metrics_listen = "127.0.0.1:9464";  // empty disables the metrics endpoint
  size_t threads = 1;                             // CPU query workers
  // Queries (a batch counts as one) that may wait for a worker; 0: 4 x (CPU workers + GPU queries
  // in flight when a GPU engine serves), about four query times of waiting.
  size_t queue_capacity = 0;
  SchedulerKind scheduler = SchedulerKind::kAuto;
  size_t gpu_threads = 4;  // queries in flight on the GPU (contexts; hybrid: GPU workers)
  // hybrid: threads that answer the GPU workers' queries (HybridQueryExecutor::Options);
  // tandem-server's default (--answer-threads auto) is gpu_threads
  size_t answer_threads = 0;
  // hybrid: CPU workers hand their answers to the answer threads too (HybridQueryExecutor)
  bool answer_cpu_queries = false;
  // hybrid: the CPU workers' priority below the server's (HybridQueryExecutor::Options);
  // tandem-server's default (--cpu-worker-priority) is nice +10
  base::ThreadPriority cpu_worker_priority = {};
  // hybrid: the CPUs the CPU and the GPU workers may run on; empty: any (HybridQueryExecutor)
  std::vector<int> cpu_worker_cpus = {};
  std::vector<int> gpu_worker_cpus = {};
  std::string cost_model_file;  // hybrid: a trained model (tandem-train-cost); empty: heuristic
  absl::Duration default_deadline = absl::Milliseconds(500);  // hybrid: scheduling deadline
  // hybrid: shortest-predicted-first within this bound; a query waiting longer goes first
  absl::Duration max_wait = absl::Milliseconds(20);
  // hybrid: retrain the cost model from live timings after this many queries; 0: never
  size_t cost_model_refine_every = 1024;
  // hybrid: ... and at most once per this interval
  absl::Duration cost_model_refine_interval = absl::Seconds(10);
  RequestLimits limits;
  server::GpuMode gpu = server::GpuMode::kAuto;
  server::GpuWait gpu_wait = server::GpuWait::kAuto;  // how GPU workers wait for the device
  absl::Duration gpu_spin = absl::Microseconds(200);        // spin-then-block: spin this long
  cpu::OrAlgorithm cpu_or = cpu::OrAlgorithm::kMaxScore;    // the CPU engine's OR
  TlsOptions tls;
  int max_receive_message_bytes = 16 << 20;
  int max_send_message_bytes = 256 << 20;
  absl::Duration keepalive_time = absl::Seconds(60);
  absl::Duration keepalive_timeout = absl::Seconds(20);
  absl::Duration debug_query_delay = absl::ZeroDuration();  // testing only
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
  const index::Index& index() const { return *index_; }
  // The admission queue's capacity (ServerOptions::queue_capacity, resolved when it was 0).
  size_t queue_capacity() const { return queue_capacity_; }

  // Health goes NOT_SERVING and new queries get UNAVAILABLE; in-flight queries run to completion
  // for at most `timeout`, then the rest are cancelled and the server stops. Returns whether every
  // in-flight query finished within the timeout. Call once.
  bool Drain(absl::Duration timeout);

 private:
  Server() = default;
  absl::Status Start(const ServerOptions& options);

  std::unique_ptr<index::Index> index_;
  server::EngineSet engines_;
  std::string engine_summary_;
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<cost_model::CostModel> cost_model_;  // outlives the executor that uses it
  std::unique_ptr<scheduler::QueryExecutor> executor_;
  std::string scheduler_summary_;
  std::unique_ptr<QueryDispatcher> dispatcher_;
  std::unique_ptr<SearchService> service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<prometheus::Exposer> exposer_;
  std::string address_;
  std::string metrics_address_;
  size_t queue_capacity_ = 0;
  bool stopped_ = false;
};

}  // namespace tandem::server
