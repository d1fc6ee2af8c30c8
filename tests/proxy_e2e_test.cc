// Query-node replicas behind the shipped proxies, end to end: three tandem-server processes serving
// one index behind nginx (deploy/nginx/nginx.conf) or HAProxy (deploy/haproxy/haproxy.cfg), each
// started by the test from its shipped file, read from the source tree, with only what a local,
// unprivileged run needs changed (the replicas' addresses, a free loopback port, pid, log and temp
// paths). Checks that every answer through the proxy equals a directly called node's (documents,
// order, scores bit for bit, external ids) for AND, OR and AND+OR through Search and SearchStream;
// that each replica answers a fair share of the calls (its tandem_queries_total); and that after
// one replica is killed (SIGKILL) queries still succeed: through nginx at once (it retries a call
// whose connection fails on the next replica), through HAProxy once its gRPC health check has
// marked the replica DOWN. A proxy that is not installed skips its test.
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/casts.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/e2e_clients.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

extern char** environ;

namespace tandem::testing {
namespace {

using tandem::v1::QueryMode;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

constexpr int kReplicas = 3;

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// The proxy's binary: in PATH, else in /usr/sbin (where Debian puts both, and which a user's PATH
// may lack); "" when it is not installed.
std::string FindProxy(const std::string& name) {
  std::string path = FindInPath(name);
  if (path.empty() && ::access(("/usr/sbin/" + name).c_str(), X_OK) == 0)
    path = "/usr/sbin/" + name;
  return path;
}

// A loopback port nothing listens on now.
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  int port = -1;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
    port = ntohs(addr.sin_port);
  }
  ::close(fd);
  return port;
}

// `text` with `from` replaced by `to`; fails the test when `from` is not in it (the shipped file
// changed under the test).
std::string ReplaceExactlyOnce(const std::string& text, const std::string& from,
                               const std::string& to) {
  const size_t at = text.find(from);
  if (at == std::string::npos || text.find(from, at + 1) != std::string::npos) {
    ADD_FAILURE() << "expected exactly one '" << from << "' in the shipped configuration";
    return text;
  }
  std::string out = text;
  out.replace(at, from.size(), to);
  return out;
}

// The shipped file's lines that name the documentation replicas ("server ... 192.0.2.N:50051 ...")
// replaced by one line per address, made by `line` from the first such line.
std::string ReplaceServers(const std::string& text, const std::vector<std::string>& addresses,
                           const std::function<std::string(const std::string& shipped, int i,
                                                           const std::string& address)>& line) {
  std::vector<std::string> out;
  int found = 0;
  for (const std::string& l : std::vector<std::string>(absl::StrSplit(text, '\n'))) {
    const absl::string_view stripped = absl::StripLeadingAsciiWhitespace(l);
    if (absl::StartsWith(stripped, "server ") && absl::StrContains(l, "192.0.2.")) {
      if (found++ == 0) {
        for (size_t i = 0; i < addresses.size(); ++i) {
          out.push_back(line(l, static_cast<int>(i), addresses[i]));
        }
      }
      continue;
    }
    out.push_back(l);
  }
  EXPECT_EQ(found, kReplicas) << "the shipped configuration's replica lines changed";
  return absl::StrJoin(out, "\n");
}

std::string ShippedFile(const std::string& relative) {
  const std::string path = absl::StrCat(TANDEM_SOURCE_DIR, "/", relative);
  std::string text = ReadWhole(path);
  EXPECT_FALSE(text.empty()) << path << " is missing or empty";
  return text;
}

// deploy/nginx/nginx.conf for `replicas`, listening on 127.0.0.1:`port`, its pid, error log and
// temp files under `dir`. The compiled-in temp paths (/var/lib/nginx) need root; each temp path is
// set only where nginx was built with its module.
std::string NginxConfig(const std::string& binary, const std::vector<std::string>& replicas,
                        int port, const std::string& dir) {
  std::string conf = ShippedFile("deploy/nginx/nginx.conf");
  conf = ReplaceServers(conf, replicas, [](const std::string& shipped, int, const std::string& a) {
    // "        server 192.0.2.11:50051 max_fails=2 fail_timeout=10s;": keep the parameters.
    const size_t at = shipped.find("192.0.2.");
    const size_t end = shipped.find_first_of(" ;", at);
    return absl::StrCat(shipped.substr(0, at), a, shipped.substr(end));
  });
  conf = ReplaceExactlyOnce(conf, "listen 50050 http2;",
                            absl::StrCat("listen 127.0.0.1:", port, " http2;"));
  absl::StatusOr<ProcessResult> version = RunProcess(binary, {"-V"});
  const std::string built = version.ok() ? version->err : "";
  std::string temp_paths = absl::StrCat("    client_body_temp_path ", dir, "/client_body;\n");
  for (const char* module : {"proxy", "fastcgi", "uwsgi", "scgi"}) {
    if (!absl::StrContains(built, absl::StrCat("--without-http_", module, "_module"))) {
      absl::StrAppend(&temp_paths, "    ", module, "_temp_path ", dir, "/", module, ";\n");
    }
  }
  conf = ReplaceExactlyOnce(conf, "\nhttp {\n", "\nhttp {\n" + temp_paths);
  return absl::StrCat("pid ", dir, "/nginx.pid;\nerror_log ", dir, "/error.log info;\n", conf);
}

// deploy/haproxy/haproxy.cfg for `replicas` (servers replica-a, -b, -c as shipped), bound to
// 127.0.0.1:`port`.
std::string HaproxyConfig(const std::vector<std::string>& replicas, int port) {
  std::string conf = ShippedFile("deploy/haproxy/haproxy.cfg");
  conf =
      ReplaceServers(conf, replicas, [](const std::string& shipped, int i, const std::string& a) {
        const size_t at = shipped.find("server ");
        return absl::StrCat(shipped.substr(0, at), "server replica-", std::string(1, 'a' + i), " ",
                            a);
      });
  return ReplaceExactlyOnce(conf, "bind :50050 proto h2",
                            absl::StrCat("bind 127.0.0.1:", port, " proto h2"));
}

// A proxy running in the foreground under a small sh that the test starts, its stdout and stderr
// in `log`. SIGTERM to the sh, from the destructor or as its PDEATHSIG when the test dies, is
// passed on to the proxy (nginx: fast shutdown of master and workers; HAProxy: stop), which the sh
// then waits for: nginx's workers would outlive a master killed outright.
class ProxyProcess {
 public:
  ProxyProcess(const std::string& binary, const std::vector<std::string>& args,
               const std::string& log)
      : log_(log) {
    std::vector<std::string> shell_args{
        "-c", "trap 'kill -TERM $p 2>/dev/null' TERM; \"$0\" \"$@\" & p=$!; wait $p; wait $p",
        binary};
    shell_args.insert(shell_args.end(), args.begin(), args.end());
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    absl::StatusOr<pid_t> pid = Spawn("/bin/sh", shell_args, null_fd, log_fd, log_fd, SIGTERM);
    EXPECT_TRUE(pid.ok()) << pid.status();
    pid_ = pid.ok() ? *pid : -1;
    ::close(null_fd);
    ::close(log_fd);
  }
  ~ProxyProcess() {
    if (pid_ <= 0 || exited_) return;
    ::kill(pid_, SIGTERM);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (!Exited() && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
    if (!exited_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }

  bool Exited() {
    int status = 0;
    if (!exited_ && pid_ > 0 && ::waitpid(pid_, &status, WNOHANG) == pid_) exited_ = true;
    return exited_ || pid_ <= 0;
  }
  std::string Log() const { return ReadWhole(log_); }

 private:
  std::string log_;
  pid_t pid_ = -1;
  bool exited_ = false;
};

bool Serving(const std::string& address) {
  auto health = grpc::health::v1::Health::NewStub(NewChannel(address));
  grpc::ClientContext context;
  SetTimeout(context, absl::Seconds(1));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service("tandem.v1.SearchService");
  grpc::health::v1::HealthCheckResponse response;
  return health->Check(&context, request, &response).ok() &&
         response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

// AND, OR and AND+OR queries over the collection's frequent terms (so AND finds documents), k from
// 5 to 100, text and weighted terms.
std::vector<SearchRequest> Queries(int n) {
  const QueryMode modes[] = {tandem::v1::QUERY_MODE_AND, tandem::v1::QUERY_MODE_OR,
                             tandem::v1::QUERY_MODE_AND_OR};
  const uint32_t ks[] = {10, 5, 100, 37};
  std::vector<SearchRequest> queries;
  for (int i = 0; i < n; ++i) {
    SearchRequest r;
    r.set_mode(modes[i % 3]);
    r.set_k(ks[(i / 3) % 4]);
    if (i % 4 == 3) {
      for (int t = 0; t < 3; ++t) {
        tandem::v1::WeightedTerm* term = r.mutable_terms()->add_terms();
        term->set_term(absl::StrCat("t", (i * 7 + t * 3) % 12));
        term->set_weight(0.5f + static_cast<float>(t));
      }
    } else {
      r.set_text(absl::StrCat("t", i % 10, " t", (i * 3 + 1) % 15, " t", (i * 5 + 2) % 40));
    }
    r.set_request_id(absl::StrCat("q", i));
    queries.push_back(r);
  }
  return queries;
}

// `via_proxy` holds `direct`'s answer: the same documents in the same order, scores bit for bit,
// the same external ids.
void ExpectSameAnswer(const SearchResponse& via_proxy, const SearchResponse& direct) {
  EXPECT_EQ(via_proxy.request_id(), direct.request_id());
  EXPECT_EQ(via_proxy.stats().executed_mode(), direct.stats().executed_mode());
  ASSERT_EQ(via_proxy.hits_size(), direct.hits_size());
  for (int i = 0; i < direct.hits_size(); ++i) {
    EXPECT_EQ(via_proxy.hits(i).docid(), direct.hits(i).docid()) << "rank " << i;
    EXPECT_EQ(absl::bit_cast<uint32_t>(via_proxy.hits(i).score()),
              absl::bit_cast<uint32_t>(direct.hits(i).score()))
        << "rank " << i << ": " << via_proxy.hits(i).score() << " vs " << direct.hits(i).score();
    EXPECT_EQ(via_proxy.hits(i).external_id(), direct.hits(i).external_id()) << "rank " << i;
  }
}

// The unary queries, then a stream; each replica's share of the unary calls (a stream is one call,
// on one replica).
constexpr int kUnary = 60;
constexpr int kStreamed = 30;

class ProxyE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { index_ = E2eIndex::Build({.num_docs = 3000}).release(); }
  static void TearDownTestSuite() { delete index_; }

  std::unique_ptr<ServerProcess> StartNode() {
    absl::StatusOr<std::unique_ptr<ServerProcess>> node = ServerProcess::Start(
        {"--index", index_->dir(), "--threads", "1", "--gpu", "off", "--queue-capacity", "512"});
    EXPECT_TRUE(node.ok()) << node.status();
    return node.ok() ? *std::move(node) : nullptr;
  }

  // The replicas behind the proxy and a node outside it, whose answers are the reference.
  void StartNodes() {
    direct_node_ = StartNode();
    ASSERT_NE(direct_node_, nullptr);
    direct_ = NewStub(direct_node_->address());
    for (int r = 0; r < kReplicas; ++r) {
      replicas_.push_back(StartNode());
      ASSERT_NE(replicas_.back(), nullptr);
    }
  }
  std::vector<std::string> ReplicaAddresses() const {
    std::vector<std::string> addresses;
    for (const auto& r : replicas_) addresses.push_back(r->address());
    return addresses;
  }

  // Starts the proxy and waits until a health check through it answers SERVING.
  void StartProxy(const std::string& binary, const std::vector<std::string>& args) {
    proxy_ = std::make_unique<ProxyProcess>(binary, args, tmp_.path() + "/proxy.log");
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!Serving(proxy_address_)) {
      ASSERT_FALSE(proxy_->Exited()) << binary << " exited:\n" << proxy_->Log();
      ASSERT_LT(absl::Now(), deadline) << binary << " never answered; its log:\n" << proxy_->Log();
      absl::SleepFor(absl::Milliseconds(50));
    }
  }

  SearchResponse Direct(const SearchRequest& request) {
    SearchResponse response;
    grpc::Status status = CallSearch(*direct_, request, &response, absl::Seconds(10));
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  // Each query through the proxy by Search, compared with the direct node's answer. Returns the
  // number of hits seen; every mode among `queries` must find some (no comparing empty answers).
  int SearchAll(const std::vector<SearchRequest>& queries) {
    auto stub = NewStub(proxy_address_);
    std::map<int, int> hits_by_mode;
    int hits = 0;
    for (const SearchRequest& q : queries) {
      SCOPED_TRACE(q.ShortDebugString());
      SearchResponse response;
      grpc::Status status = CallSearch(*stub, q, &response, absl::Seconds(10));
      hits_by_mode[q.mode()] += 0;
      EXPECT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
      if (!status.ok()) continue;
      ExpectSameAnswer(response, Direct(q));
      hits += response.hits_size();
      hits_by_mode[q.mode()] += response.hits_size();
    }
    for (const auto& [mode, n] : hits_by_mode) {
      EXPECT_GT(n, 0) << tandem::v1::QueryMode_Name(static_cast<QueryMode>(mode));
    }
    return hits;
  }

  // The queries through the proxy in one SearchStream call, each answer compared with the direct
  // node's.
  void StreamAll(const std::vector<SearchRequest>& queries) {
    auto stub = NewStub(proxy_address_);
    grpc::ClientContext context;
    SetTimeout(context, absl::Seconds(20));
    auto stream = stub->SearchStream(&context);
    for (const SearchRequest& q : queries) ASSERT_TRUE(stream->Write(q));
    stream->WritesDone();
    tandem::v1::SearchStreamResponse answer;
    size_t i = 0;
    while (stream->Read(&answer)) {
      ASSERT_LT(i, queries.size());
      SCOPED_TRACE(queries[i].ShortDebugString());
      EXPECT_EQ(answer.request_id(), queries[i].request_id());
      ExpectSameAnswer(answer.response(), Direct(queries[i]));
      ++i;
    }
    EXPECT_EQ(i, queries.size());
    grpc::Status status = stream->Finish();
    EXPECT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
  }

  // Each live replica's tandem_queries_total (all labels), once their sum reaches `total`: a
  // counter can move just after its answer reached the client. -1 for a killed replica.
  std::vector<double> QueriesPerReplica(double total) {
    std::vector<double> counts(replicas_.size(), -1);
    const absl::Time deadline = absl::Now() + absl::Seconds(10);
    while (true) {
      double sum = 0;
      for (size_t r = 0; r < replicas_.size(); ++r) {
        if (killed_ == static_cast<int>(r)) continue;
        absl::StatusOr<std::string> scrape = HttpGet(replicas_[r]->metrics_address(), "/metrics");
        EXPECT_TRUE(scrape.ok()) << scrape.status();
        counts[r] = scrape.ok() ? MetricSum(*scrape, "tandem_queries_total") : 0;
        sum += counts[r];
      }
      if (sum >= total || absl::Now() >= deadline) break;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return counts;
  }

  // Every live replica answered at least half of an even share of `total` calls, and together
  // exactly `total` beyond `before`.
  void ExpectFairShares(const std::vector<double>& before, double total) {
    const int live = kReplicas - (killed_ >= 0 ? 1 : 0);
    double prior = 0;
    for (size_t r = 0; r < before.size(); ++r) {
      if (killed_ != static_cast<int>(r)) prior += before[r];
    }
    const std::vector<double> after = QueriesPerReplica(prior + total);
    double sum = 0;
    std::string shares;
    for (size_t r = 0; r < after.size(); ++r) {
      if (killed_ == static_cast<int>(r)) continue;
      const double share = after[r] - before[r];
      sum += share;
      absl::StrAppend(&shares, shares.empty() ? "" : ", ", "replica ", r, ": ", share);
      EXPECT_GE(share, total / live / 2) << "replica " << r << " answered too few";
    }
    EXPECT_EQ(sum, total) << shares;
    std::cout << "  calls per replica: " << shares << std::endl;
  }

  // Starts the nodes and picks a free port for the proxy (proxy_address_).
  void StartNodesAndPickProxyPort(int* port) {
    ASSERT_NO_FATAL_FAILURE(StartNodes());
    *port = FreePort();
    ASSERT_GT(*port, 0);
    proxy_address_ = absl::StrCat("127.0.0.1:", *port);
  }

  // kUnary queries through the proxy spread fairly over the replicas, the first kStreamed of them
  // on a stream, then the first replica killed; `before`: the replicas' counts before the kill.
  void ServeThenKillFirstReplica(std::vector<SearchRequest>* queries, std::vector<double>* before) {
    *queries = Queries(kUnary);
    const std::vector<double> start = QueriesPerReplica(0);
    EXPECT_GT(SearchAll(*queries), 0);
    ExpectFairShares(start, kUnary);
    StreamAll(std::vector<SearchRequest>(queries->begin(), queries->begin() + kStreamed));
    *before = QueriesPerReplica(kUnary + kStreamed);
    ASSERT_NO_FATAL_FAILURE(KillReplica(0));
  }

  // 30 more queries through the proxy with the first replica dead, spread fairly over the others
  // beyond their counts `before`, then on a stream.
  void ServeWithoutTheFirstReplica(const std::vector<double>& before) {
    const std::vector<SearchRequest> all = Queries(kUnary + 30);
    const std::vector<SearchRequest> more(all.begin() + kUnary, all.end());
    EXPECT_GT(SearchAll(more), 0);
    ExpectFairShares(before, 30);
    StreamAll(more);
  }

  void KillReplica(int r) {
    replicas_[r]->Signal(SIGKILL);
    ASSERT_TRUE(replicas_[r]->WaitForExit().has_value());
    killed_ = r;
  }

  void DumpOnFailure() {
    if (HasFailure() && proxy_ != nullptr) ADD_FAILURE() << "the proxy's log:\n" << proxy_->Log();
  }

  static E2eIndex* index_;
  TempDir tmp_;
  std::unique_ptr<ServerProcess> direct_node_;
  std::unique_ptr<tandem::v1::SearchService::Stub> direct_;
  std::vector<std::unique_ptr<ServerProcess>> replicas_;
  int killed_ = -1;
  std::string proxy_address_;
  std::unique_ptr<ProxyProcess> proxy_;
};

E2eIndex* ProxyE2eTest::index_ = nullptr;

TEST_F(ProxyE2eTest, Nginx) {
  const std::string nginx = FindProxy("nginx");
  if (nginx.empty()) GTEST_SKIP() << "nginx is not installed (not in PATH nor /usr/sbin)";
  int port = 0;
  ASSERT_NO_FATAL_FAILURE(StartNodesAndPickProxyPort(&port));
  const std::string conf = tmp_.path() + "/nginx.conf";
  std::ofstream(conf) << NginxConfig(nginx, ReplicaAddresses(), port, tmp_.path());
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(StartProxy(nginx, {"-c", conf, "-p", tmp_.path(), "-g", "daemon off;"}));

  // Then a replica dies: its connections fail, and nginx (grpc_next_upstream error) sends those
  // calls to the next replica, so none fails, from the first call on.
  std::vector<SearchRequest> queries;
  std::vector<double> before;
  ASSERT_NO_FATAL_FAILURE(ServeThenKillFirstReplica(&queries, &before));
  ServeWithoutTheFirstReplica(before);
  // The calls that reached the dead replica were refused there, then retried: not a lucky miss.
  const std::string error_log = ReadWhole(tmp_.path() + "/error.log");
  EXPECT_TRUE(absl::StrContains(error_log, replicas_[0]->address()) &&
              absl::StrContains(error_log, "Connection refused"))
      << error_log;
  if (HasFailure()) ADD_FAILURE() << "nginx's error log:\n" << error_log;
  DumpOnFailure();
}

TEST_F(ProxyE2eTest, Haproxy) {
  const std::string haproxy = FindProxy("haproxy");
  if (haproxy.empty()) GTEST_SKIP() << "haproxy is not installed (not in PATH nor /usr/sbin)";
  int port = 0;
  ASSERT_NO_FATAL_FAILURE(StartNodesAndPickProxyPort(&port));
  const std::string conf = tmp_.path() + "/haproxy.cfg";
  std::ofstream(conf) << HaproxyConfig(ReplicaAddresses(), port);
  ASSERT_FALSE(HasFailure());
  ASSERT_NO_FATAL_FAILURE(StartProxy(haproxy, {"-f", conf, "-db"}));

  // Then a replica dies: HAProxy's health check marks it DOWN (fall 2 x inter 2s), then every call
  // goes to the others. Calls in between that are sent to it find its connection refused and are
  // redispatched to another server (retry-on conn-failure, option redispatch): none fails.
  std::vector<SearchRequest> queries;
  std::vector<double> before;
  ASSERT_NO_FATAL_FAILURE(ServeThenKillFirstReplica(&queries, &before));
  const absl::Time killed = absl::Now();
  const absl::Time deadline = killed + absl::Seconds(15);
  // Calls while it dies, from another thread, so that the log is watched meanwhile.
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0}, failed{0};
  std::string first_error;
  std::thread caller([&] {
    auto stub = NewStub(proxy_address_);
    while (!stop.load()) {
      SearchResponse response;
      const absl::Time start = absl::Now();
      grpc::Status status =
          CallSearch(*stub, queries[(ok + failed) % kUnary], &response, absl::Seconds(10));
      if (status.ok()) {
        ++ok;
      } else if (failed++ == 0) {
        first_error = absl::StrCat(status.error_code(), " \"", status.error_message(), "\" after ",
                                   absl::FormatDuration(absl::Now() - start));
      }
      absl::SleepFor(absl::Milliseconds(20));
    }
  });
  bool down_seen = false;
  while (!(down_seen = absl::StrContains(proxy_->Log(), "replica-a is DOWN")) &&
         absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  const absl::Duration to_down = absl::Now() - killed;
  stop = true;
  caller.join();
  ASSERT_TRUE(down_seen) << "replica-a never marked DOWN; log:\n" << proxy_->Log();
  std::cout << "  replica-a DOWN after " << absl::FormatDuration(to_down) << "; " << failed
            << " of " << ok + failed << " calls meanwhile failed"
            << (first_error.empty() ? "" : ", the first: ") << first_error << std::endl;
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_GT(ok.load(), 10);
  // The survivors answered every call that succeeded.
  ServeWithoutTheFirstReplica(QueriesPerReplica(before[1] + before[2] + ok));
  DumpOnFailure();
}

}  // namespace
}  // namespace tandem::testing
