#include "rpc/metrics_endpoint.h"

#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string_view>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "prometheus/collectable.h"
#include "prometheus/text_serializer.h"
#include "rpc/rate_limited_log.h"

namespace tandem::rpc {

// libmicrohttpd's log lines: kept while the daemon starts (they say why it did not), rate-limited
// to standard error afterwards (a scanner's failed TLS handshakes must not flood the log).
class MetricsDaemonLog {
 public:
  void Add(const std::string& line) {
    if (started_.load(std::memory_order_acquire)) {
      log_.Log(absl::StrCat("tandem-server: metrics endpoint: ", line));
    } else {
      absl::StrAppend(&start_messages_, start_messages_.empty() ? "" : "; ", line);
    }
  }
  void Started() { started_.store(true, std::memory_order_release); }
  const std::string& start_messages() const { return start_messages_; }

 private:
  std::atomic<bool> started_{false};
  std::string start_messages_;  // written only before Started(), by the starting thread
  RateLimitedLog log_{absl::Minutes(1), nullptr};
};

namespace {

constexpr char kMetricsPath[] = "/metrics";
constexpr char kContentType[] = "text/plain; version=0.0.4; charset=utf-8";
constexpr char kRealm[] = "tandem-server metrics";
// TLS 1.2 and 1.3 only, with GnuTLS's secure defaults.
constexpr char kTlsPriorities[] = "SECURE:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2";

// "user:password" from `path`, which only its owner may read.
absl::StatusOr<std::pair<std::string, std::string>> ReadBasicAuth(const std::string& path) {
  struct stat info;
  if (::stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat("cannot read the metrics basic-auth file '", path,
                                            "': ", std::strerror(errno)));
  }
  if ((info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("the metrics basic-auth file '", path,
                     "' may be read by others than its owner; chmod 600 it"));
  }
  TANDEM_ASSIGN_OR_RETURN(std::string text, base::ReadFile(path, "metrics basic-auth file"));
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  const size_t colon = text.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size() ||
      text.find('\n') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("the metrics basic-auth file '", path,
                                                   "' must hold one line \"user:password\""));
  }
  return std::make_pair(text.substr(0, colon), text.substr(colon + 1));
}

// Equal strings, in a time that does not depend on where they differ.
bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

// The socket address of "host:port" or "[v6]:port".
absl::StatusOr<sockaddr_storage> ResolveListen(const std::string& listen) {
  const auto invalid = [&listen](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot serve metrics on '", listen, "': ", why,
                     " (expected host:port or [ipv6]:port, port 0-65535)"));
  };
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return invalid("no port");
  std::string host = listen.substr(0, colon);
  const std::string port_text = listen.substr(colon + 1);
  int port = -1;
  if (!absl::SimpleAtoi(port_text, &port) || port < 0 || port > 65535 ||
      port_text.find_first_not_of("0123456789") != std::string::npos) {
    return invalid("the port is not a number from 0 to 65535");
  }
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string::npos) {
    return invalid("an IPv6 address needs brackets");
  }
  if (host.empty()) return invalid("no host");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int rc = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); rc != 0) {
    return invalid(absl::StrCat("cannot resolve the host: ", ::gai_strerror(rc)));
  }
  sockaddr_storage address{};
  std::memcpy(&address, found->ai_addr, found->ai_addrlen);
  ::freeaddrinfo(found);
  return address;
}

void LogFromDaemon(void* cls, const char* format, va_list args) {
  char line[512];
  std::vsnprintf(line, sizeof(line), format, args);
  std::string text(line);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  static_cast<MetricsDaemonLog*>(cls)->Add(text);
}

MHD_Result QueueText(MHD_Connection* connection, unsigned int status, const std::string& text,
                     const char* content_type = "text/plain; charset=utf-8") {
  MHD_Response* response = MHD_create_response_from_buffer(
      text.size(), const_cast<char*>(text.data()), MHD_RESPMEM_MUST_COPY);
  if (response == nullptr) return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, content_type);
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) {
    MHD_add_response_header(response, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  }
  const MHD_Result queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

}  // namespace

absl::StatusOr<std::unique_ptr<MetricsEndpoint>> MetricsEndpoint::Start(
    const MetricsEndpointOptions& options,
    std::vector<std::weak_ptr<prometheus::Collectable>> collectables) {
  if (options.tls_cert_file.empty() != options.tls_key_file.empty()) {
    return absl::InvalidArgumentError(
        "metrics TLS needs both --metrics-tls-cert and --metrics-tls-key");
  }
  if (options.max_connections < 1 || options.max_connections_per_client < 1 ||
      options.threads < 1 || options.idle_timeout < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        "the metrics endpoint needs at least one connection, one per client, one thread and a 1 s "
        "idle timeout");
  }
  std::unique_ptr<MetricsEndpoint> endpoint(new MetricsEndpoint());
  endpoint->log_ = std::make_unique<MetricsDaemonLog>();
  endpoint->collectables_ = std::move(collectables);
  if (!options.basic_auth_file.empty()) {
    TANDEM_ASSIGN_OR_RETURN(auto credentials, ReadBasicAuth(options.basic_auth_file));
    endpoint->user_ = std::move(credentials.first);
    endpoint->password_ = std::move(credentials.second);
  }
  TANDEM_ASSIGN_OR_RETURN(const sockaddr_storage address, ResolveListen(options.listen));

  // poll(2), not epoll: see the header (closed connections released at once).
  unsigned int flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
  if (address.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  std::vector<MHD_OptionItem> items = {
      // First, so that libmicrohttpd logs nothing on its own.
      {MHD_OPTION_EXTERNAL_LOGGER, reinterpret_cast<intptr_t>(&LogFromDaemon),
       endpoint->log_.get()},
      {MHD_OPTION_SOCK_ADDR, 0, const_cast<sockaddr_storage*>(&address)},
      {MHD_OPTION_THREAD_POOL_SIZE, static_cast<intptr_t>(options.threads), nullptr},
      {MHD_OPTION_CONNECTION_LIMIT, static_cast<intptr_t>(options.max_connections), nullptr},
      {MHD_OPTION_PER_IP_CONNECTION_LIMIT,
       static_cast<intptr_t>(options.max_connections_per_client), nullptr},
      {MHD_OPTION_CONNECTION_TIMEOUT,
       static_cast<intptr_t>(absl::ToInt64Seconds(options.idle_timeout)), nullptr},
  };
  if (!options.tls_cert_file.empty()) {
    TANDEM_ASSIGN_OR_RETURN(endpoint->cert_,
                            base::ReadFile(options.tls_cert_file, "metrics TLS certificate"));
    TANDEM_ASSIGN_OR_RETURN(endpoint->key_,
                            base::ReadFile(options.tls_key_file, "metrics TLS key"));
    if (endpoint->cert_.empty() || endpoint->key_.empty()) {
      return absl::InvalidArgumentError("the metrics TLS certificate or key file is empty");
    }
    flags |= MHD_USE_TLS;
    items.push_back({MHD_OPTION_HTTPS_MEM_CERT, 0, endpoint->cert_.data()});
    items.push_back({MHD_OPTION_HTTPS_MEM_KEY, 0, endpoint->key_.data()});
    items.push_back({MHD_OPTION_HTTPS_PRIORITIES, 0, const_cast<char*>(kTlsPriorities)});
  }
  items.push_back({MHD_OPTION_END, 0, nullptr});

  MetricsEndpoint* self = endpoint.get();
  endpoint->daemon_ = MHD_start_daemon(
      flags, 0, nullptr, nullptr,
      [](void* cls, MHD_Connection* connection, const char* url, const char* method,
         const char* /*version*/, const char* /*upload_data*/, size_t* upload_data_size,
         void** request_state) -> MHD_Result {
        return static_cast<MetricsEndpoint*>(cls)->Answer(connection, url, method, upload_data_size,
                                                          request_state) != 0
                   ? MHD_YES
                   : MHD_NO;
      },
      self, MHD_OPTION_ARRAY, items.data(), MHD_OPTION_END);
  endpoint->log_->Started();
  if (endpoint->daemon_ == nullptr) {
    const std::string why = endpoint->log_->start_messages().empty()
                                ? std::string("the address is in use or not on this host")
                                : endpoint->log_->start_messages();
    return absl::UnavailableError(absl::StrCat("cannot serve metrics on ", options.listen,
                                               endpoint->tls() ? " with TLS" : "", ": ", why));
  }
  const MHD_DaemonInfo* info = MHD_get_daemon_info(endpoint->daemon_, MHD_DAEMON_INFO_BIND_PORT);
  endpoint->port_ = info != nullptr ? info->port : 0;
  return endpoint;
}

MetricsEndpoint::~MetricsEndpoint() {
  if (daemon_ != nullptr) MHD_stop_daemon(daemon_);
}

std::string MetricsEndpoint::Scrape() const {
  std::vector<prometheus::MetricFamily> families;
  for (const auto& weak : collectables_) {
    if (std::shared_ptr<prometheus::Collectable> collectable = weak.lock()) {
      std::vector<prometheus::MetricFamily> collected = collectable->Collect();
      families.insert(families.end(), std::make_move_iterator(collected.begin()),
                      std::make_move_iterator(collected.end()));
    }
  }
  return prometheus::TextSerializer().Serialize(families);
}

int MetricsEndpoint::Answer(MHD_Connection* connection, const char* url, const char* method,
                            size_t* upload_data_size, void** request_state) {
  // libmicrohttpd calls once when the headers are in, then once per piece of a body, then once
  // more: answer on the second call, ignoring any body a client sent with its GET.
  static int headers_seen;
  if (*request_state == nullptr) {
    *request_state = &headers_seen;
    return MHD_YES;
  }
  if (*upload_data_size != 0) {
    *upload_data_size = 0;
    return MHD_YES;
  }
  const std::string_view verb(method);
  if (verb != MHD_HTTP_METHOD_GET && verb != MHD_HTTP_METHOD_HEAD) {
    return QueueText(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD are served\n");
  }
  if (!user_.empty()) {
    char* password = nullptr;
    char* user = MHD_basic_auth_get_username_password(connection, &password);
    // Both compared, whichever differs, so that the time tells nothing.
    const bool user_ok = user != nullptr && ConstantTimeEquals(user, user_);
    const bool password_ok = password != nullptr && ConstantTimeEquals(password, password_);
    if (user != nullptr) MHD_free(user);
    if (password != nullptr) MHD_free(password);
    if (!(user_ok && password_ok)) {
      const std::string body = "authentication required\n";
      MHD_Response* response = MHD_create_response_from_buffer(
          body.size(), const_cast<char*>(body.data()), MHD_RESPMEM_MUST_COPY);
      if (response == nullptr) return MHD_NO;
      const MHD_Result queued = MHD_queue_basic_auth_fail_response(connection, kRealm, response);
      MHD_destroy_response(response);
      return queued;
    }
  }
  if (std::string_view(url) != kMetricsPath) {
    return QueueText(connection, MHD_HTTP_NOT_FOUND,
                     absl::StrCat("not found; metrics are at ", kMetricsPath, "\n"));
  }
  return QueueText(connection, MHD_HTTP_OK, Scrape(), kContentType);
}

}  // namespace tandem::rpc
