// End-to-end tests of how tandem-server starts: failures (missing or damaged index, port in use,
// bad flags, a required GPU that is absent) exit 1 with exactly one line on stderr; TLS and mutual
// TLS through gRPC's SSL credentials, with certificates made by the openssl command.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tandem/v1/index.grpc.pb.h"
#include "tests/e2e_certificates.h"
#include "tests/e2e_clients.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"
#include "tests/e2e_suites.h"

namespace tandem::testing {
namespace {

using tandem::v1::SearchResponse;
using ::testing::HasSubstr;
using ::testing::StartsWith;

class StartupE2eTest : public IndexE2eTest {};

// Startup failures: exit status 1 and exactly one line on stderr.
void ExpectStartupFailure(const std::vector<std::string>& args, const std::string& message) {
  absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_SERVER_BINARY, args);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 1) << run->err;
  EXPECT_THAT(run->err, StartsWith("tandem-server: "));
  EXPECT_THAT(run->err, HasSubstr(message));
  EXPECT_EQ(std::count(run->err.begin(), run->err.end(), '\n'), 1) << run->err;
  EXPECT_TRUE(absl::EndsWith(run->err, "\n"));
  EXPECT_EQ(run->out, "");
}

// A listening TCP socket on an ephemeral loopback port, held for the test.
class HeldPort {
 public:
  HeldPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), len), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  ~HeldPort() { ::close(fd_); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }

 private:
  int fd_ = -1;
  int port_ = 0;
};

// A flag that does not parse: exit status 2 and one line naming the flag as written, with dashes.
void ExpectBadFlag(const std::vector<std::string>& args, const std::string& message) {
  absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_SERVER_BINARY, args);
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 2) << run->err;
  EXPECT_EQ(run->err, absl::StrCat("tandem-server: ", message, "\n"));
  EXPECT_EQ(run->out, "");
}

TEST_F(StartupE2eTest, MalformedFlagsExitTwoNamingTheFlag) {
  ExpectBadFlag({"--gpu", "maybe"}, "--gpu: must be auto, off or required, got 'maybe'");
  ExpectBadFlag({"--scheduler=fifo"},
                "--scheduler: must be auto, pool, hybrid or serial, got 'fifo'");
  ExpectBadFlag({"--tune-gpu-wait", "sleep"},
                "--tune-gpu-wait: must be auto, spin, yield or blocking, got 'sleep'");
  ExpectBadFlag({"--tune-dispatch", "lockfree"},
                "--tune-dispatch: must be locked or combining, got 'lockfree'");
  ExpectBadFlag({"--tune-answer-threads", "-1"},
                "--tune-answer-threads: must be auto or a number >= 0, got '-1'");
  ExpectBadFlag({"--tune-answer-threads", "many"},
                "--tune-answer-threads: must be auto or a number >= 0, got 'many'");
  ExpectBadFlag({"--tune-cpu-worker-cpus", "3-1"},
                "--tune-cpu-worker-cpus: '3-1' in a CPU list runs backwards (write it low-high)");
  ExpectBadFlag(
      {"--tune-gpu-worker-cpus", "0,,1"},
      "--tune-gpu-worker-cpus: empty item in the CPU list '0,,1' (a list reads like 0-3,8)");
  ExpectBadFlag({"--threads", "-2"}, "--threads: invalid value '-2'");
  ExpectBadFlag({"--tune-cost-model-refine-every", "-1"},
                "--tune-cost-model-refine-every: invalid value '-1'");
  ExpectBadFlag({"--tune-max-wait", "soon"}, "--tune-max-wait: invalid value 'soon'");
  ExpectBadFlag({"--gpu-threads", "many"},
                "--gpu-threads: must be auto or a number >= 0, got 'many'");
  ExpectBadFlag({"--tune-gpu-batch-wait", "soon"}, "--tune-gpu-batch-wait: invalid value 'soon'");
  ExpectBadFlag({"--tune-gpu-batch-threshold", "-1"},
                "--tune-gpu-batch-threshold: invalid value '-1'");
  ExpectBadFlag({"--index"}, "--index: needs a value");
  ExpectBadFlag({"--cpu-or", "bmw"},
                "--cpu-or: OR algorithm must be one of maxscore, block-max-maxscore, wand, "
                "block-max-wand, exhaustive; got 'bmw'");
}

// --help prints the usage and the flags an operator sets, with dashes, at most 30 of them;
// --helpfull adds the expert and tuning flags under their owners' titles; --version the commit.
TEST_F(StartupE2eTest, HelpAndVersion) {
  absl::StatusOr<ProcessResult> help = RunProcess(TANDEM_SERVER_BINARY, {"--help"});
  ASSERT_TRUE(help.ok()) << help.status();
  EXPECT_EQ(help->exit_code, 0);
  EXPECT_THAT(help->out, StartsWith("tandem-server serves a Tandem index over gRPC"));
  for (const char* flag : {"--index", "--listen (default: 127.0.0.1:50051)", "--metrics-listen",
                           "--gpu (default: auto)", "--scheduler (default: auto)"}) {
    EXPECT_THAT(help->out, HasSubstr(flag));
  }
  auto count_flags = [](const std::string& text) {
    int flags = 0;
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      flags += absl::StartsWith(line, "  --");
    }
    return flags;
  };
  EXPECT_GE(count_flags(help->out), 10);
  EXPECT_LE(count_flags(help->out), 30);
  EXPECT_THAT(help->out, ::testing::Not(HasSubstr("--tune-")));
  EXPECT_THAT(help->out, ::testing::Not(HasSubstr("testing")));
  EXPECT_THAT(help->out, ::testing::Not(HasSubstr("metrics_listen")));

  absl::StatusOr<ProcessResult> full = RunProcess(TANDEM_SERVER_BINARY, {"--helpfull"});
  ASSERT_TRUE(full.ok()) << full.status();
  EXPECT_EQ(full->exit_code, 0);
  EXPECT_GT(count_flags(full->out), count_flags(help->out));
  for (const char* text :
       {"\nScheduler:\n", "--tune-max-wait (default: 20ms)", "\nGPU engine:\n",
        "--tune-gpu-batch-wait", "\nRequest limits:\n", "--max-batch (default: 1024)"}) {
    EXPECT_THAT(full->out, HasSubstr(text));
  }

  absl::StatusOr<ProcessResult> version = RunProcess(TANDEM_SERVER_BINARY, {"--version"});
  ASSERT_TRUE(version.ok()) << version.status();
  EXPECT_EQ(version->exit_code, 0);
  EXPECT_THAT(version->out, StartsWith("tandem-server 0."));
  EXPECT_THAT(version->out, HasSubstr("(commit "));
}

// Options that parse but cannot be used: exit status 1 and one line saying which and why.
TEST_F(StartupE2eTest, StartupFailuresExitNonZeroWithOneLine) {
  ExpectStartupFailure({"--listen", "127.0.0.1:0"}, "--index is required");
  // gRPC would listen on a port above 65535 modulo 2^16.
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--listen", "127.0.0.1:99999"},
                       "cannot listen on 127.0.0.1:99999: the port must be a number from 0 to "
                       "65535");
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--listen", "127.0.0.1:port"},
                       "the port must be a number from 0 to 65535");
  ExpectStartupFailure({"--index", "/nonexistent/tandem-index", "--listen", "127.0.0.1:0"},
                       "cannot open index: ");
  ExpectStartupFailure({"--index", index_->dir(), "--scheduler", "hybrid", "--tune-max-wait",
                        "-5ms", "--listen", "127.0.0.1:0"},
                       "max_wait must not be negative");
  ExpectStartupFailure({"--index", index_->dir(), "--scheduler", "hybrid",
                        "--tune-cost-model-refine-interval", "-1s", "--listen", "127.0.0.1:0"},
                       "refine interval must not be negative");
  ExpectStartupFailure({"--index", index_->dir(), "--scheduler", "hybrid",
                        "--tune-default-deadline", "0s", "--listen", "127.0.0.1:0"},
                       "default_deadline must be positive");
  ExpectStartupFailure({"--index", index_->dir(), "--scheduler", "hybrid", "--tune-cpu-worker-cpus",
                        "1023", "--listen", "127.0.0.1:0"},
                       "cpu_worker_cpus: CPU 1023 is not one this process may run on");
  ExpectStartupFailure({"--index", index_->dir(), "--gpu-threads", "0", "--listen", "127.0.0.1:0"},
                       "gpu_threads must be at least 1");
  // The GPU batch options are checked with or without a GPU.
  ExpectStartupFailure(
      {"--index", index_->dir(), "--tune-gpu-batch-threshold", "0", "--listen", "127.0.0.1:0"},
      "the batch threshold must be at least 1 posting");
  ExpectStartupFailure(
      {"--index", index_->dir(), "--tune-gpu-batch-wait", "-1ms", "--listen", "127.0.0.1:0"},
      "the batch wait must not be negative, got -1ms");
  ExpectStartupFailure(
      {"--index", index_->dir(), "--tune-gpu-batch-runners", "0", "--listen", "127.0.0.1:0"},
      "batch runners must be at least 1, got 0");
  ExpectStartupFailure({"--index", index_->dir(), "--max-batch", "0", "--listen", "127.0.0.1:0"},
                       "max_batch must be at least 1");
  ExpectStartupFailure({"--index", index_->dir(), "--drain-timeout", "-1s"},
                       "--drain-timeout must not be negative");
  ExpectStartupFailure({"--index", index_->dir(), "unexpected"},
                       "unexpected argument 'unexpected'");
  ExpectStartupFailure({"--index", index_->dir(), "--scheduler", "hybrid", "--cost-model",
                        "/nonexistent/cost-model.txt", "--listen", "127.0.0.1:0"},
                       "cannot load cost model: ");
  ExpectStartupFailure({"--index", index_->dir(), "--tls-cert", "/nonexistent.pem", "--tls-key",
                        "/nonexistent.key", "--listen", "127.0.0.1:0"},
                       "cannot read TLS certificate '/nonexistent.pem'");
  HeldPort taken;
  ExpectStartupFailure(
      {"--index", index_->dir(), "--listen", taken.address(), "--metrics-listen", "127.0.0.1:0"},
      absl::StrCat("cannot listen on ", taken.address(), ": address already in use"));
  ExpectStartupFailure(
      {"--index", index_->dir(), "--listen", "127.0.0.1:0", "--metrics-listen", taken.address()},
      absl::StrCat("cannot serve metrics on ", taken.address()));
}

TEST_F(StartupE2eTest, DamagedIndexFailsAtStartup) {
  TempDir tmp;
  const std::string copy = tmp.path() + "/index";
  std::filesystem::copy(index_->dir(), copy);
  const std::string postings = copy + "/postings.bin";
  const auto size = std::filesystem::file_size(postings);
  {
    std::fstream f(postings, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(size / 2));
    char c = 0;
    f.get(c);
    f.seekp(static_cast<std::streamoff>(size / 2));
    f.put(static_cast<char>(c ^ 0x5a));
  }
  ExpectStartupFailure({"--index", copy, "--listen", "127.0.0.1:0", "--metrics-listen", ""},
                       "cannot open index: ");
}

TEST_F(StartupE2eTest, GpuRequiredWithoutGpuFailsAtStartup) {
  absl::StatusOr<ProcessResult> run =
      RunProcess(TANDEM_SERVER_BINARY,
                 {"--index", index_->dir(), "--gpu", "required", "--listen", "127.0.0.1:0",
                  "--metrics-listen", "", "--drain-timeout", "0s"},
                 absl::Seconds(20));
  if (!run.ok()) GTEST_SKIP() << "the server started: this machine has a GPU engine";
  EXPECT_EQ(run->exit_code, 1);
  EXPECT_THAT(run->err, HasSubstr("cannot create engines: GPU engine required"));
  EXPECT_EQ(std::count(run->err.begin(), run->err.end(), '\n'), 1) << run->err;
}

grpc::Status SearchOver(const std::shared_ptr<grpc::ChannelCredentials>& credentials,
                        const std::string& address) {
  auto stub = tandem::v1::SearchService::NewStub(grpc::CreateChannel(address, credentials));
  SearchResponse response;
  return CallSearch(*stub, TextRequest("t1"), &response, absl::Seconds(20));
}

// Each thread of process `pid`: its name and nice value (/proc/PID/task/TID/stat, field 19).
std::vector<std::pair<std::string, int>> ThreadNices(pid_t pid) {
  std::vector<std::pair<std::string, int>> threads;
  const std::string tasks = absl::StrCat("/proc/", pid, "/task");
  for (const auto& task : std::filesystem::directory_iterator(tasks)) {
    std::ifstream in(task.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "tid (name) state ppid ...": fields after the name's closing parenthesis.
    const size_t close = stat.rfind(')');
    const size_t open = stat.find('(');
    if (close == std::string::npos || open == std::string::npos) continue;
    const std::vector<std::string> fields =
        absl::StrSplit(stat.substr(close + 2), ' ', absl::SkipEmpty());
    int nice = 0;
    if (fields.size() > 16 && absl::SimpleAtoi(fields[16], &nice)) {
      threads.emplace_back(stat.substr(open + 1, close - open - 1), nice);
    }
  }
  return threads;
}

// Without a GPU the threads that accept calls run 10 nice levels below the query workers, so that
// under overload the workers keep their cores; --tune-rpc-nice sets the gap.
TEST_F(StartupE2eTest, RpcThreadsRunBelowTheQueryWorkers) {
  for (const auto& [flag, gap] : std::vector<std::pair<std::string, int>>{{"auto", 10}, {"4", 4}}) {
    SCOPED_TRACE(flag);
    auto server = Start({"--gpu", "off", "--threads", "2", "--tune-rpc-nice", flag});
    ASSERT_NE(server, nullptr);
    // A query, so that gRPC has started every thread a call needs.
    auto stub = NewStub(server->address());
    SearchResponse response;
    ASSERT_TRUE(CallSearch(*stub, TextRequest("t1"), &response, kE2eTimeout).ok());
    auto expect_nices = [&, gap = gap] {
      // A worker names itself once it first runs, which on a busy machine can come after another
      // worker answered the query: until then it carries its creator's name and priority.
      const absl::Time deadline = absl::Now() + kE2eTimeout;
      auto named_workers = [&] {
        int n = 0;
        for (const auto& [name, nice] : ThreadNices(server->pid())) n += name == "tandem-worker";
        return n;
      };
      while (named_workers() < 2 && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(10));
      int workers = 0, others = 0;
      for (const auto& [name, nice] : ThreadNices(server->pid())) {
        if (name == "tandem-worker" || name == "tandem-indexes") {
          // The lifecycle thread creates the workers of an index loaded later: their priority.
          EXPECT_EQ(nice, 0) << name;
          if (name == "tandem-worker") ++workers;
        } else if (name == "tandem-refresh" || name == "tandem-merge") {
          EXPECT_EQ(nice, 10) << name;  // the live index's refresh and merges, below the workers
        } else {
          EXPECT_EQ(nice, gap) << name;  // gRPC's threads, the metrics endpoint's, the main thread
          ++others;
        }
      }
      EXPECT_EQ(workers, 2);
      EXPECT_GT(others, 3);
    };
    expect_nices();
    // An index loaded over gRPC (whose threads run below) gets workers at the workers' priority.
    auto index_service = tandem::v1::IndexService::NewStub(NewChannel(server->address()));
    grpc::ClientContext load_context;
    SetTimeout(load_context, kE2eTimeout);
    tandem::v1::LoadIndexRequest load;
    load.set_path(index_->dir());
    tandem::v1::LoadIndexResponse loaded;
    ASSERT_TRUE(index_service->LoadIndex(&load_context, load, &loaded).ok());
    const absl::Time deadline = absl::Now() + kE2eTimeout;
    while (server->Stderr().find("released the index") == std::string::npos &&
           absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(20));
    }
    expect_nices();
  }
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--tune-rpc-nice", "20"},
                       "rpc_nice must be between 0 and 19 nice levels, got 20");
}

// --cpu-or picks the CPU engine's OR algorithm: the startup line names it, and every algorithm
// answers as the exhaustive union does.
TEST_F(StartupE2eTest, CpuOrAlgorithmIsChosenByFlag) {
  std::vector<std::vector<std::pair<uint32_t, float>>> answers;
  for (const std::string algorithm : {"exhaustive", "block-max-wand", "block-max-maxscore"}) {
    SCOPED_TRACE(algorithm);
    auto server = Start({"--gpu", "off", "--cpu-or", algorithm});
    ASSERT_NE(server, nullptr);
    auto stub = NewStub(server->address());
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    SearchResponse response;
    ASSERT_TRUE(
        stub->Search(&context, TextRequest("t1 t2 t3 t5", tandem::v1::QUERY_MODE_OR, 20), &response)
            .ok());
    ASSERT_GT(response.hits_size(), 0);
    std::vector<std::pair<uint32_t, float>> hits;
    for (const auto& h : response.hits()) hits.emplace_back(h.docid(), h.score());
    answers.push_back(std::move(hits));
    EXPECT_THAT(server->Stderr(), HasSubstr("; CPU OR by " + algorithm + ";"));
  }
  EXPECT_EQ(answers[1], answers[0]);
  EXPECT_EQ(answers[2], answers[0]);
}

// --metrics-basic-auth-file: scrapes without the user and password get 401; a file others may
// read is refused at startup.
TEST_F(StartupE2eTest, MetricsBasicAuth) {
  TempDir dir;
  const std::string file = dir.path() + "/metrics-auth";
  std::ofstream(file) << "prometheus:s3cret-pass\n";
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  {
    auto server = Start(
        {"--gpu", "off", "--metrics-listen", "127.0.0.1:0", "--metrics-basic-auth-file", file});
    ASSERT_NE(server, nullptr);
    absl::StatusOr<std::string> scrape =
        HttpGet(server->metrics_address(), "/metrics", "prometheus:s3cret-pass");
    ASSERT_TRUE(scrape.ok()) << scrape.status();
    EXPECT_THAT(*scrape, HasSubstr("tandem_build_info"));
    for (const char* wrong : {"", "prometheus:wrong", "other:s3cret-pass", "prometheus:"}) {
      absl::StatusOr<std::string> refused = HttpGet(server->metrics_address(), "/metrics", wrong);
      ASSERT_FALSE(refused.ok()) << wrong;
      EXPECT_THAT(std::string(refused.status().message()), HasSubstr("401")) << wrong;
    }
  }
  ASSERT_EQ(::chmod(file.c_str(), 0640), 0);
  ExpectStartupFailure(
      {"--index", index_->dir(), "--gpu", "off", "--metrics-basic-auth-file", file},
      "may be read by others than its owner; chmod 600 it");
  std::ofstream(file, std::ios::trunc) << "no-colon\n";
  ASSERT_EQ(::chmod(file.c_str(), 0600), 0);
  ExpectStartupFailure(
      {"--index", index_->dir(), "--gpu", "off", "--metrics-basic-auth-file", file},
      "must hold one line \"user:password\"");
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--metrics-basic-auth-file",
                        dir.path() + "/absent"},
                       "cannot read the metrics basic-auth file");
}

TEST_F(StartupE2eTest, TlsAndMutualTls) {
  const std::string openssl = FindInPath("openssl");
  if (openssl.empty()) GTEST_SKIP() << "openssl is not installed; cannot make test certificates";
  auto certs =
      TestCertificates::Make(openssl, {{.name = "client", .subject = "/CN=tandem-test-client"}});
  ASSERT_NE(certs, nullptr);

  grpc::SslCredentialsOptions ca_only;
  ca_only.pem_root_certs = certs->read("ca.pem");
  grpc::SslCredentialsOptions with_client = ca_only;
  with_client.pem_cert_chain = certs->read("client.pem");
  with_client.pem_private_key = certs->read("client.key");

  {
    auto server =
        Start({"--tls-cert", certs->path("server.pem"), "--tls-key", certs->path("server.key")});
    ASSERT_NE(server, nullptr);
    grpc::Status s = SearchOver(grpc::SslCredentials(ca_only), server->address());
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(SearchOver(grpc::InsecureChannelCredentials(), server->address()).ok());
  }
  {
    auto server = Start({"--tls-cert", certs->path("server.pem"), "--tls-key",
                         certs->path("server.key"), "--tls-client-ca", certs->path("ca.pem")});
    ASSERT_NE(server, nullptr);
    grpc::Status s = SearchOver(grpc::SslCredentials(with_client), server->address());
    EXPECT_TRUE(s.ok()) << s.error_message();
    EXPECT_FALSE(SearchOver(grpc::SslCredentials(ca_only), server->address()).ok())
        << "a client without a certificate must be refused";
    EXPECT_FALSE(SearchOver(grpc::InsecureChannelCredentials(), server->address()).ok());

    absl::StatusOr<ProcessResult> cli =
        RunProcess(TANDEM_CLI_BINARY,
                   {"--server", server->address(), "--tls-ca", certs->path("ca.pem"), "--tls-cert",
                    certs->path("client.pem"), "--tls-key", certs->path("client.key"), "health"});
    ASSERT_TRUE(cli.ok()) << cli.status();
    EXPECT_EQ(cli->out, "SERVING\n") << cli->err;
    EXPECT_EQ(cli->exit_code, 0);
  }
}

// --metrics-tls-cert/--metrics-tls-key: /metrics over HTTPS only (TLS 1.2 or later), with basic
// auth on top; a certificate without its key, or a key of another certificate, fails at startup.
TEST_F(StartupE2eTest, MetricsOverTls) {
  const std::string openssl = FindInPath("openssl");
  const std::string curl = FindInPath("curl");
  if (openssl.empty() || curl.empty()) {
    GTEST_SKIP() << "openssl or curl is not installed; cannot make certificates or scrape";
  }
  auto certs =
      TestCertificates::Make(openssl, {{.name = "client", .subject = "/CN=tandem-test-client"}});
  ASSERT_NE(certs, nullptr);
  const std::string auth = certs->path("metrics-auth");
  std::ofstream(auth) << "prometheus:s3cret-pass\n";
  ASSERT_EQ(::chmod(auth.c_str(), 0600), 0);
  {
    auto server = Start({"--gpu", "off", "--metrics-listen", "127.0.0.1:0", "--metrics-tls-cert",
                         certs->path("server.pem"), "--metrics-tls-key", certs->path("server.key"),
                         "--metrics-basic-auth-file", auth});
    ASSERT_NE(server, nullptr);
    const std::string url = absl::StrCat("https://", server->metrics_address(), "/metrics");
    // curl -s prints the body; -w the status on a last line.
    const auto scrape = [&](std::vector<std::string> extra) {
      std::vector<std::string> args = {
          "-s", "--max-time", "10", "--cacert", certs->path("ca.pem"), "-w", "\n%{http_code}"};
      args.insert(args.end(), extra.begin(), extra.end());
      return RunProcess(curl, args);
    };
    absl::StatusOr<ProcessResult> ok = scrape({"-u", "prometheus:s3cret-pass", url});
    ASSERT_TRUE(ok.ok()) << ok.status();
    EXPECT_EQ(ok->exit_code, 0) << ok->err;
    EXPECT_THAT(ok->out, HasSubstr("tandem_build_info"));
    EXPECT_TRUE(absl::EndsWith(ok->out, "\n200")) << ok->out.substr(ok->out.size() - 40);

    absl::StatusOr<ProcessResult> no_auth = scrape({url});
    ASSERT_TRUE(no_auth.ok());
    EXPECT_TRUE(absl::EndsWith(no_auth->out, "\n401")) << no_auth->out;
    absl::StatusOr<ProcessResult> wrong = scrape({"-u", "prometheus:wrong", url});
    ASSERT_TRUE(wrong.ok());
    EXPECT_TRUE(absl::EndsWith(wrong->out, "\n401")) << wrong->out;
    absl::StatusOr<ProcessResult> elsewhere =
        scrape({"-u", "prometheus:s3cret-pass",
                absl::StrCat("https://", server->metrics_address(), "/other")});
    ASSERT_TRUE(elsewhere.ok());
    EXPECT_TRUE(absl::EndsWith(elsewhere->out, "\n404")) << elsewhere->out;
    absl::StatusOr<ProcessResult> post =
        scrape({"-u", "prometheus:s3cret-pass", "-X", "POST", url});
    ASSERT_TRUE(post.ok());
    EXPECT_TRUE(absl::EndsWith(post->out, "\n405")) << post->out;

    // No certificate chain the client trusts, an old TLS version, or plain HTTP: no metrics.
    absl::StatusOr<ProcessResult> untrusted =
        RunProcess(curl, {"-s", "--max-time", "10", "-u", "prometheus:s3cret-pass", url});
    ASSERT_TRUE(untrusted.ok());
    EXPECT_NE(untrusted->exit_code, 0);
    absl::StatusOr<ProcessResult> old_tls =
        scrape({"--tlsv1.1", "--tls-max", "1.1", "-u", "prometheus:s3cret-pass", url});
    ASSERT_TRUE(old_tls.ok());
    EXPECT_NE(old_tls->exit_code, 0) << old_tls->out;
    EXPECT_FALSE(HttpGet(server->metrics_address(), "/metrics", "prometheus:s3cret-pass").ok());
  }
  ExpectStartupFailure(
      {"--index", index_->dir(), "--gpu", "off", "--metrics-tls-cert", certs->path("server.pem")},
      "metrics TLS needs both --metrics-tls-cert and --metrics-tls-key");
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--metrics-listen", "127.0.0.1:0",
                        "--metrics-tls-cert", certs->path("server.pem"), "--metrics-tls-key",
                        certs->path("client.key")},
                       "cannot serve metrics on 127.0.0.1:0 with TLS");
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--metrics-tls-cert",
                        certs->path("absent.pem"), "--metrics-tls-key", certs->path("server.key")},
                       "cannot read metrics TLS certificate");
  ExpectStartupFailure(
      {"--index", index_->dir(), "--gpu", "off", "--metrics-listen", "127.0.0.1:99999"},
      "the port is not a number from 0 to 65535");
}

// An address other hosts can reach needs TLS for gRPC, and HTTPS with basic auth for /metrics;
// --allow-insecure starts anyway, with a warning in the log for each unprotected service.
TEST_F(StartupE2eTest, NetworkAddressesNeedProtectionOrAllowInsecure) {
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--listen", "0.0.0.0:0"},
                       "refusing to serve gRPC in plaintext on 0.0.0.0:0 without protection");
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--listen", "[::]:0",
                        "--metrics-listen", "127.0.0.1:0"},
                       "refusing to serve gRPC in plaintext on [::]:0");
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--listen", "127.0.0.1:0",
                        "--metrics-listen", "0.0.0.0:0"},
                       "refusing to serve metrics on 0.0.0.0:0 without protection");
  // Basic auth without HTTPS would send its password in the clear: not protection.
  TempDir dir;
  const std::string auth = dir.path() + "/metrics-auth";
  std::ofstream(auth) << "prometheus:s3cret-pass\n";
  ASSERT_EQ(::chmod(auth.c_str(), 0600), 0);
  ExpectStartupFailure({"--index", index_->dir(), "--gpu", "off", "--listen", "127.0.0.1:0",
                        "--metrics-listen", "0.0.0.0:0", "--metrics-basic-auth-file", auth},
                       "--metrics-tls-cert, --metrics-tls-key and --metrics-basic-auth-file");

  auto server = Start({"--gpu", "off", "--listen", "0.0.0.0:0", "--metrics-listen", "0.0.0.0:0",
                       "--allow-insecure"});
  ASSERT_NE(server, nullptr);
  const std::string port = server->address().substr(server->address().rfind(':') + 1);
  grpc::Status s = SearchOver(grpc::InsecureChannelCredentials(), "127.0.0.1:" + port);
  EXPECT_TRUE(s.ok()) << s.error_message();
  EXPECT_THAT(server->Stderr(), HasSubstr("tandem-server: WARNING: serving gRPC in plaintext on "
                                          "0.0.0.0:0 WITHOUT PROTECTION (--allow-insecure)"));
  EXPECT_THAT(server->Stderr(),
              HasSubstr("tandem-server: WARNING: serving metrics on 0.0.0.0:0 WITHOUT PROTECTION"));
  // Loopback needs no flag and logs no warning.
  auto local = Start({"--gpu", "off"});
  ASSERT_NE(local, nullptr);
  EXPECT_THAT(local->Stderr(), ::testing::Not(HasSubstr("WARNING")));
}

}  // namespace
}  // namespace tandem::testing
