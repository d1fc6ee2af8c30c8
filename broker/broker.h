// File: broker.h
//
// tandem-broker: the query broker of Ding et al. 2009, Figure 1, in front of the query nodes. It
// serves the node's tandem.v1.SearchService (BrokerService) and IndexService (BrokerIndexService:
// writes to live shards), grpc.health.v1 (SERVING while every shard has a healthy replica, so a
// load balancer or Kubernetes sends no query to a broker that could only answer degraded) and
// reflection, and Prometheus metrics; it finds and checks its replicas (ReplicaSet) and drains on
// shutdown. Create() does everything that can fail before it
// returns: bad options, an unreadable replicas file, a port in use.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Broker> broker, Broker::Create(options));
//   std::cout << "listening on " << broker->address();
//   ... wait for SIGTERM ...
//   broker->Drain(absl::Seconds(10));
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "broker/broker_index_service.h"
#include "broker/broker_metrics.h"
#include "broker/broker_service.h"
#include "broker/replica_set.h"
#include "broker/result_cache.h"
#include "broker/scatter_gather.h"
#include "broker/timer_queue.h"
#include "rpc/grpc_listen.h"

namespace grpc {
class Server;
}  // namespace grpc
namespace prometheus {
class Registry;
}  // namespace prometheus

namespace tandem::rpc {
class MetricsEndpoint;
class ProcessMetrics;
}  // namespace tandem::rpc

namespace tandem::broker {

struct BrokerOptions {
  std::string listen = "127.0.0.1:50050";
  rpc::TlsOptions tls;
  std::string metrics_listen = "127.0.0.1:9465";  // empty: no metrics endpoint
  // HTTPS and basic auth of the metrics endpoint, as the node's (rpc::MetricsEndpointOptions).
  std::string metrics_tls_cert_file;
  std::string metrics_tls_key_file;
  std::string metrics_basic_auth_file;
  ReplicaSetOptions replicas;
  ScatterGatherOptions fanout;
  ResultCacheOptions cache;
  BrokerServiceOptions service;
  int max_receive_message_bytes = 16 << 20;
  int max_send_message_bytes = 256 << 20;
  // As the node's ServerOptions::allow_insecure (rpc/exposure.h).
  bool allow_insecure = false;
};

class Broker {
 public:
  static absl::StatusOr<std::unique_ptr<Broker>> Create(BrokerOptions options);
  ~Broker();

  const std::string& address() const { return address_; }
  const std::string& metrics_address() const { return metrics_address_; }
  std::shared_ptr<const Topology> topology() const { return replicas_->topology(); }

  // Health NOT_SERVING, then waits up to `timeout` for the calls in flight and stops.
  void Drain(absl::Duration timeout);

 private:
  Broker() = default;
  absl::Status Start(BrokerOptions options);
  void OnCheck(const Topology& topology);

  std::shared_ptr<prometheus::Registry> registry_;
  std::unique_ptr<BrokerMetrics> metrics_;
  std::unique_ptr<ReplicaSet> replicas_;
  std::unique_ptr<TimerQueue> timers_;
  std::unique_ptr<ScatterGather> fanout_;
  std::unique_ptr<ResultCache> cache_;
  std::unique_ptr<BrokerService> service_;
  std::unique_ptr<BrokerIndexService> index_service_;
  std::shared_ptr<rpc::ProcessMetrics> process_metrics_;
  std::unique_ptr<rpc::MetricsEndpoint> metrics_endpoint_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::string address_;
  std::string metrics_address_;
  std::atomic<bool> draining_{false};
};

}  // namespace tandem::broker
