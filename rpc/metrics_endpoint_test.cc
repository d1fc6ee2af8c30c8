// Tests of MetricsEndpoint's start-up checks and of what a scrape holds; scrapes over HTTP and
// HTTPS, basic auth and slow clients are tested end to end (tests/e2e_startup_test.cc,
// tests/server_e2e_test.cc).
#include "rpc/metrics_endpoint.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"

namespace tandem::rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string TestFile(const std::string& name, const std::string& contents, mode_t mode = 0600) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/metrics_endpoint_test_", name);
  std::ofstream(path, std::ios::trunc) << contents;
  ::chmod(path.c_str(), mode);
  return path;
}

// A TCP connection to 127.0.0.1:`port` from `from` (a loopback address), or -1.
int Connect(int port, const char* from = "127.0.0.1") {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in local{};
  local.sin_family = AF_INET;
  ::inet_pton(AF_INET, from, &local.sin_addr);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0 ||
      ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// GET /metrics from 127.0.0.1, giving up after 10 s; the status line, or "" when none came.
std::string ScrapeStatus(int port) {
  const int fd = Connect(port);
  if (fd < 0) return "";
  timeval tv{.tv_sec = 10, .tv_usec = 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  const std::string request = "GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n";
  ::send(fd, request.data(), request.size(), MSG_NOSIGNAL);
  std::string reply;
  char buf[4096];
  for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) reply.append(buf, n);
  ::close(fd);
  return reply.substr(0, reply.find("\r\n"));
}

// Clients that send part of a request line and close, as fast as they can: each is released at
// once, so a scrape right after them answers at once (with epoll, each kept its slot for the idle
// timeout and the endpoint stayed blind for over a minute).
TEST(MetricsEndpointTest, HalfSentRequestsThatCloseAreReleasedAtOnce) {
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
      MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  for (int i = 0; i < 1000; ++i) {
    const int fd = Connect(port);
    ASSERT_GE(fd, 0);
    const std::string partial = "GET /metrics HTTP/1.1\r\n";
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    ::close(fd);
  }
  const absl::Time start = absl::Now();
  EXPECT_EQ(ScrapeStatus(port), "HTTP/1.1 200 OK");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

// One client address that opens many connections and sends a request slowly holds at most
// max_connections_per_client; the others are closed at once, and a scraper elsewhere is served.
TEST(MetricsEndpointTest, OneClientCannotTakeEverySlot) {
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint = MetricsEndpoint::Start(
      {.listen = "127.0.0.1:0", .max_connections = 32, .max_connections_per_client = 4}, {});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  const int port = (*endpoint)->port();
  std::vector<int> slow;
  for (int i = 0; i < 64; ++i) {
    const int fd = Connect(port, "127.0.0.2");
    if (fd < 0) GTEST_SKIP() << "cannot connect from 127.0.0.2";
    ::send(fd, "GET /met", 8, MSG_NOSIGNAL);
    slow.push_back(fd);
  }
  const absl::Time start = absl::Now();
  EXPECT_EQ(ScrapeStatus(port), "HTTP/1.1 200 OK");
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  // The connections past the client's limit are closed by the endpoint (EOF or a reset).
  int closed = 0;
  for (int fd : slow) {
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    char byte;
    if (::poll(&p, 1, 1000) == 1 && ::recv(fd, &byte, 1, MSG_DONTWAIT) <= 0) ++closed;
    ::close(fd);
  }
  EXPECT_GE(closed, 64 - 4);
}

TEST(MetricsEndpointTest, ScrapesEveryLiveCollectableAndReportsItsPort) {
  auto registry = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter()
      .Name("tandem_test_total")
      .Help("a test")
      .Register(*registry)
      .Add({{"kind", "a"}})
      .Increment(3);
  auto gone = std::make_shared<prometheus::Registry>();
  prometheus::BuildCounter().Name("tandem_gone_total").Help("gone").Register(*gone).Add({});
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
      MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {registry, gone});
  ASSERT_TRUE(endpoint.ok()) << endpoint.status();
  EXPECT_GT((*endpoint)->port(), 0);
  EXPECT_FALSE((*endpoint)->tls());
  EXPECT_THAT((*endpoint)->Scrape(), HasSubstr("tandem_gone_total"));
  gone.reset();
  const std::string scrape = (*endpoint)->Scrape();
  EXPECT_THAT(scrape, HasSubstr("tandem_test_total{kind=\"a\"} 3"));
  EXPECT_THAT(scrape, Not(HasSubstr("tandem_gone_total")));
}

TEST(MetricsEndpointTest, BadListenAddressesAreInvalidArguments) {
  for (const char* listen : {"9464", "127.0.0.1:", ":9464", "::1:9464", "127.0.0.1:65536",
                             "127.0.0.1:-1", "127.0.0.1:+80", "127.0.0.1:http"}) {
    absl::StatusOr<std::unique_ptr<MetricsEndpoint>> endpoint =
        MetricsEndpoint::Start({.listen = listen}, {});
    ASSERT_FALSE(endpoint.ok()) << listen;
    EXPECT_EQ(endpoint.status().code(), absl::StatusCode::kInvalidArgument) << listen;
    EXPECT_THAT(std::string(endpoint.status().message()),
                HasSubstr(absl::StrCat("cannot serve metrics on '", listen, "'")));
  }
  EXPECT_TRUE(MetricsEndpoint::Start({.listen = "[::1]:0"}, {}).ok() ||
              !std::filesystem::exists("/proc/net/if_inet6"));
}

TEST(MetricsEndpointTest, ABusyPortIsUnavailable) {
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> first =
      MetricsEndpoint::Start({.listen = "127.0.0.1:0"}, {});
  ASSERT_TRUE(first.ok()) << first.status();
  const std::string listen = absl::StrCat("127.0.0.1:", (*first)->port());
  absl::StatusOr<std::unique_ptr<MetricsEndpoint>> second =
      MetricsEndpoint::Start({.listen = listen}, {});
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(second.status().message()),
              HasSubstr(absl::StrCat("cannot serve metrics on ", listen, ": ")));
}

TEST(MetricsEndpointTest, TlsNeedsACertificateAndItsKey) {
  const std::string cert = TestFile("cert.pem", "not a certificate\n");
  const std::string empty = TestFile("empty.pem", "");
  auto status = [](const MetricsEndpointOptions& options) {
    return MetricsEndpoint::Start(options, {}).status();
  };
  EXPECT_THAT(std::string(status({.listen = "127.0.0.1:0", .tls_cert_file = cert}).message()),
              HasSubstr("needs both --metrics-tls-cert and --metrics-tls-key"));
  EXPECT_THAT(std::string(status({.listen = "127.0.0.1:0", .tls_key_file = cert}).message()),
              HasSubstr("needs both"));
  EXPECT_EQ(status({.listen = "127.0.0.1:0", .tls_cert_file = empty, .tls_key_file = empty}).code(),
            absl::StatusCode::kInvalidArgument);
  const absl::Status garbage =
      status({.listen = "127.0.0.1:0", .tls_cert_file = cert, .tls_key_file = cert});
  EXPECT_EQ(garbage.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(std::string(garbage.message()), HasSubstr("with TLS: "));
  EXPECT_EQ(
      status({.listen = "127.0.0.1:0", .tls_cert_file = cert + ".absent", .tls_key_file = cert})
          .code(),
      absl::StatusCode::kNotFound);
}

TEST(MetricsEndpointTest, TheBasicAuthFileIsChecked) {
  auto status = [](const std::string& file) {
    return MetricsEndpoint::Start({.listen = "127.0.0.1:0", .basic_auth_file = file}, {}).status();
  };
  EXPECT_TRUE(status(TestFile("auth-ok", "user:pass\n")).ok());
  EXPECT_THAT(std::string(status(TestFile("auth-open", "user:pass\n", 0644)).message()),
              HasSubstr("chmod 600 it"));
  for (const char* bad : {"nocolon\n", ":pass\n", "user:\n", "a:b\nc:d\n"}) {
    EXPECT_THAT(std::string(status(TestFile("auth-bad", bad)).message()),
                HasSubstr("must hold one line \"user:password\""))
        << bad;
  }
  EXPECT_EQ(status(TestFile("auth-ok", "") + ".absent").code(), absl::StatusCode::kNotFound);
}

TEST(MetricsEndpointTest, LimitsMustBePositive) {
  EXPECT_EQ(
      MetricsEndpoint::Start({.listen = "127.0.0.1:0", .max_connections = 0}, {}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MetricsEndpoint::Start({.listen = "127.0.0.1:0", .threads = 0}, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(MetricsEndpoint::Start({.listen = "127.0.0.1:0", .max_connections_per_client = 0}, {})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      MetricsEndpoint::Start({.listen = "127.0.0.1:0", .idle_timeout = absl::Milliseconds(10)}, {})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem::rpc
