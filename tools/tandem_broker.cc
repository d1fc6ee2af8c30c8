// tandem-broker: the query broker in front of Tandem's query nodes. It serves the node's
// tandem.v1.SearchService, fans each query out to one replica of every shard and merges their
// top-k exactly; grpc.health.v1, reflection, and Prometheus metrics over HTTP. --help lists the
// flags an operator sets; --helpfull adds the expert and tuning ones (tandem_broker_expert.h).
//
// On startup it prints one line to stdout, "tandem-broker listening on HOST:PORT (metrics on
// HOST:PORT)". SIGTERM or SIGINT drains (health NOT_SERVING, calls in flight finish within
// --drain-timeout) and exits 0. Startup failures print one line to stderr and exit 1; a
// malformed flag exits 2.
#include <signal.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "base/app.h"
#include "base/read_file.h"
#include "broker/broker.h"
#include "grpcpp/security/credentials.h"
#include "tools/serve_main.h"
#include "tools/tandem_broker_expert.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50050", "Address of the broker's gRPC service.");
ABSL_FLAG(std::string, metrics_listen, "127.0.0.1:9465",
          "Address of the Prometheus endpoint (/metrics); empty for none.");
ABSL_FLAG(std::string, metrics_tls_cert, "",
          "PEM certificate chain: /metrics is served over HTTPS only (TLS 1.2 or later).");
ABSL_FLAG(std::string, metrics_tls_key, "", "PEM private key of --metrics-tls-cert.");
ABSL_FLAG(std::string, metrics_basic_auth_file, "",
          "A file of one line user:password (mode 600): scrapes must authenticate.");
ABSL_FLAG(std::vector<std::string>, replicas, {},
          "Query nodes, host:port,host:port,... A host name stands for every address it resolves "
          "to (re-resolved every --refresh-interval). Each node says which shard it serves.");
ABSL_FLAG(std::string, replicas_file, "",
          "A file of query nodes, one host:port per line (# comments), re-read when it changes.");
ABSL_FLAG(uint32_t, shards, 0,
          "Use only nodes of a collection cut into this many shards; 0: the collection most "
          "nodes serve.");
ABSL_FLAG(bool, global_stats, false,
          "Score every query with the whole collection's BM25 statistics, gathered from one "
          "replica of each shard first (one more round trip): for shards that are live indexes "
          "written through this broker (tandem-server --live-shard).");
ABSL_FLAG(absl::Duration, default_deadline, absl::Milliseconds(500),
          "Deadline of a call that comes without one.");
ABSL_FLAG(uint64_t, cache_entries, 10000, "Result cache entries; 0 turns the cache off.");
ABSL_FLAG(uint64_t, cache_bytes, uint64_t{64} << 20, "Result cache bytes, keys and answers.");
ABSL_FLAG(absl::Duration, cache_ttl, absl::Seconds(10), "How long a cached answer is served.");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(10),
          "On SIGTERM, how long calls in flight may take to finish.");
ABSL_FLAG(std::string, tls_cert, "", "PEM certificate chain: the broker's service speaks TLS.");
ABSL_FLAG(std::string, tls_key, "", "PEM private key of --tls-cert.");
ABSL_FLAG(std::string, tls_client_ca, "",
          "PEM CA bundle: clients must present a certificate it signed (mutual TLS).");
ABSL_FLAG(bool, allow_insecure, false,
          "Serve gRPC without TLS, or /metrics without HTTPS and basic auth, on an address other "
          "hosts can reach (not loopback); without it the broker refuses to start so exposed, "
          "and with it it logs a warning. Only for a network you trust.");
ABSL_FLAG(std::string, replica_tls_ca, "",
          "PEM CA bundle that signed the nodes' certificates: the broker calls them over TLS.");
ABSL_FLAG(std::string, replica_tls_cert, "",
          "PEM certificate chain the broker presents to nodes that require client certificates.");
ABSL_FLAG(std::string, replica_tls_key, "", "PEM private key of --replica-tls-cert.");

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "tandem-broker: %s\n", message.c_str());
  return 1;
}

absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> ReplicaCredentials() {
  const std::string ca = absl::GetFlag(FLAGS_replica_tls_ca);
  const std::string cert = absl::GetFlag(FLAGS_replica_tls_cert);
  const std::string key = absl::GetFlag(FLAGS_replica_tls_key);
  if (ca.empty()) {
    if (!cert.empty() || !key.empty()) {
      return absl::InvalidArgumentError(
          "--replica-tls-cert and --replica-tls-key need "
          "--replica-tls-ca");
    }
    return std::shared_ptr<grpc::ChannelCredentials>();
  }
  if (cert.empty() != key.empty()) {
    return absl::InvalidArgumentError("--replica-tls-cert and --replica-tls-key go together");
  }
  grpc::SslCredentialsOptions ssl;
  absl::StatusOr<std::string> roots = tandem::base::ReadFile(ca, "replica TLS CA");
  if (!roots.ok()) return roots.status();
  ssl.pem_root_certs = *std::move(roots);
  if (!cert.empty()) {
    absl::StatusOr<std::string> chain = tandem::base::ReadFile(cert, "replica TLS certificate");
    if (!chain.ok()) return chain.status();
    absl::StatusOr<std::string> private_key = tandem::base::ReadFile(key, "replica TLS key");
    if (!private_key.ok()) return private_key.status();
    ssl.pem_cert_chain = *std::move(chain);
    ssl.pem_private_key = *std::move(private_key);
  }
  return grpc::SslCredentials(ssl);
}

}  // namespace

int main(int argc, char** argv) {
  const sigset_t stop_signals = tandem::tools::PrepareToServe({SIGTERM, SIGINT});

  const std::vector<std::string> positional = tandem::base::ParseCommandLineOrExit(
      argc, argv,
      {.name = "tandem-broker",
       .usage = "tandem-broker fans queries out to Tandem query nodes (one replica of every "
                "shard) and merges their top-k.\n"
                "  tandem-broker --replicas HOST:PORT,... | --replicas-file FILE "
                "[--listen 127.0.0.1:50050] [--metrics-listen 127.0.0.1:9465]",
       .main_file = __FILE__,
       .groups = tandem::tools::BrokerExpertFlagGroups()});
  if (!positional.empty()) return Fail(absl::StrCat("unexpected argument '", positional[0], "'"));

  absl::StatusOr<std::shared_ptr<grpc::ChannelCredentials>> replica_credentials =
      ReplicaCredentials();
  if (!replica_credentials.ok()) return Fail(std::string(replica_credentials.status().message()));
  tandem::broker::BrokerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.metrics_listen = absl::GetFlag(FLAGS_metrics_listen);
  options.allow_insecure = absl::GetFlag(FLAGS_allow_insecure);
  options.metrics_tls_cert_file = absl::GetFlag(FLAGS_metrics_tls_cert);
  options.metrics_tls_key_file = absl::GetFlag(FLAGS_metrics_tls_key);
  options.metrics_basic_auth_file = absl::GetFlag(FLAGS_metrics_basic_auth_file);
  options.tls = {.cert_file = absl::GetFlag(FLAGS_tls_cert),
                 .key_file = absl::GetFlag(FLAGS_tls_key),
                 .client_ca_file = absl::GetFlag(FLAGS_tls_client_ca)};
  options.replicas.targets = absl::GetFlag(FLAGS_replicas);
  options.replicas.targets_file = absl::GetFlag(FLAGS_replicas_file);
  if (const uint32_t shards = absl::GetFlag(FLAGS_shards); shards > 0) {
    options.replicas.expected_shards = shards;
  }
  options.replicas.health_interval = absl::GetFlag(FLAGS_health_interval);
  options.replicas.health_timeout = absl::GetFlag(FLAGS_health_timeout);
  options.replicas.refresh_interval = absl::GetFlag(FLAGS_refresh_interval);
  options.replicas.credentials = *replica_credentials;
  options.replicas.channels_per_replica =
      static_cast<int>(std::min<uint32_t>(absl::GetFlag(FLAGS_replica_channels), 1000));
  options.fanout = {
      .deadline_budget = absl::GetFlag(FLAGS_deadline_budget),
      .hedge = absl::GetFlag(FLAGS_hedge_after),
      .max_attempts = static_cast<int>(std::min<uint32_t>(absl::GetFlag(FLAGS_max_attempts), 16))};
  options.cache = {.max_entries = absl::GetFlag(FLAGS_cache_entries),
                   .max_bytes = absl::GetFlag(FLAGS_cache_bytes),
                   .ttl = absl::GetFlag(FLAGS_cache_ttl)};
  options.service = {.default_deadline = absl::GetFlag(FLAGS_default_deadline),
                     .max_batch = absl::GetFlag(FLAGS_max_batch),
                     .global_stats = absl::GetFlag(FLAGS_global_stats)};
  const absl::Duration drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  if (drain_timeout < absl::ZeroDuration()) return Fail("--drain-timeout must not be negative");

  absl::StatusOr<std::unique_ptr<tandem::broker::Broker>> broker =
      tandem::broker::Broker::Create(options);
  if (!broker.ok()) return Fail(std::string(broker.status().message()));
  const std::shared_ptr<const tandem::broker::Topology> topology = (*broker)->topology();
  if (topology->shards == 0) {
    std::fprintf(stderr,
                 "tandem-broker: no node has answered yet; queries get UNAVAILABLE "
                 "until one does\n");
  } else {
    const std::vector<uint32_t> unserved = topology->UnservedShards();
    std::fprintf(
        stderr, "tandem-broker: %u shard(s) of collection %s; %s\n", topology->shards,
        topology->collection_id.c_str(),
        unserved.empty()
            ? "every shard has a replica"
            : absl::StrCat("no replica yet for shard(s) ", absl::StrJoin(unserved, ", ")).c_str());
  }
  tandem::tools::AnnounceListening("tandem-broker", (*broker)->address(),
                                   (*broker)->metrics_address());

  int signal_number = 0;
  sigwait(&stop_signals, &signal_number);
  tandem::tools::AnnounceDrain("tandem-broker", signal_number, drain_timeout);
  (*broker)->Drain(drain_timeout);
  broker->reset();
  std::fprintf(stderr, "tandem-broker: stopped\n");
  return 0;
}
