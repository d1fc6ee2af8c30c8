// File: metrics_endpoint.h
//
// The Prometheus scrape endpoint: GET /metrics in the text exposition format 0.0.4, over HTTP or
// HTTPS, with optional HTTP basic auth, on GNU libmicrohttpd.
//
// Why not prometheus-cpp's own Exposer: it serves through CivetWeb, and Debian 12's CivetWeb 1.15
// cannot speak TLS with OpenSSL 3 (it looks up SSL_get_peer_certificate, which OpenSSL 3 no longer
// exports, and its worker dies on the null function pointer at the first TLS request).
// libmicrohttpd (Debian's, TLS through GnuTLS) serves both plain and TLS scrapes here, so there is
// one endpoint whatever the configuration.
//
// Connections are served by a small thread pool polling with poll(2), so idle or half-open
// connections hold no thread. Scrapes must keep answering whatever other clients do:
//   - a connection its client closed is released at once, whatever it sent. Not with epoll:
//     libmicrohttpd 0.9.75's edge-triggered epoll loop misses the end of a request that was cut
//     short (a request line, then close), and such a connection kept its slot until its idle
//     timeout; 1,000 of them kept /metrics blind for 75 s. Level-triggered poll sees it at once.
//   - a connection idle for `idle_timeout` is closed: short, since a client that sends a byte now
//     and then (a slow-header client) is bounded only by it and by the next limit;
//   - one client address holds at most `max_connections_per_client`, and all clients together
//     `max_connections`, so one client cannot take every slot from the scraper.
// (prometheus-cpp's Exposer is not used; see above. Its CivetWeb has the same knobs:
// num_threads, request_timeout_ms, and no per-client limit.)
//
//   TANDEM_ASSIGN_OR_RETURN(auto endpoint, MetricsEndpoint::Start(
//       {.listen = "127.0.0.1:9464", .tls_cert_file = "node.pem", .tls_key_file = "node.key"},
//       {registry}));
//   endpoint->port();  // the bound port (the one the OS chose when listen asked for port 0)
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

struct MHD_Daemon;
struct MHD_Connection;

namespace prometheus {
class Collectable;
}  // namespace prometheus

namespace tandem::rpc {

class MetricsDaemonLog;

struct MetricsEndpointOptions {
  // "host:port" or "[ipv6]:port"; host is a numeric address or a name resolved at start.
  std::string listen = {};
  // PEM files of the endpoint's certificate chain and private key; both or neither. With them,
  // the endpoint speaks HTTPS only (TLS 1.2 or later).
  std::string tls_cert_file = {};
  std::string tls_key_file = {};
  // A file of one line "user:password", readable by its owner only: scrapes must authenticate.
  std::string basic_auth_file = {};
  absl::Duration idle_timeout = absl::Seconds(2);  // whole seconds, at least 1
  int max_connections = 256;
  // A Prometheus server needs one or two; more from one address is a client to keep in check.
  int max_connections_per_client = 8;
  int threads = 2;
};

class MetricsEndpoint {
 public:
  // Serves the metrics of `collectables` (held weakly: one that is gone is skipped). Fails with a
  // message naming the address, file or setting at fault.
  static absl::StatusOr<std::unique_ptr<MetricsEndpoint>> Start(
      const MetricsEndpointOptions& options,
      std::vector<std::weak_ptr<prometheus::Collectable>> collectables);

  ~MetricsEndpoint();
  MetricsEndpoint(const MetricsEndpoint&) = delete;
  MetricsEndpoint& operator=(const MetricsEndpoint&) = delete;

  int port() const { return port_; }
  bool tls() const { return !cert_.empty(); }

  // The exposition text of every collectable, as a scrape returns it.
  std::string Scrape() const;

 private:
  MetricsEndpoint() = default;
  int Answer(MHD_Connection* connection, const char* url, const char* method,
             size_t* upload_data_size, void** request_state);

  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  std::string cert_, key_;                 // PEM, alive as long as the daemon
  std::string user_, password_;            // empty user: no authentication
  std::unique_ptr<MetricsDaemonLog> log_;  // outlives daemon_, which logs through it
  MHD_Daemon* daemon_ = nullptr;
  int port_ = 0;
};

}  // namespace tandem::rpc
