// File: e2e_process.h
//
// Child processes for end-to-end tests: the real tandem-server binary, started on ephemeral ports
// and found through the one line it prints on stdout, and one-shot commands (tandem-cli, promtool)
// run to completion with their output captured. Children die with the test process (PDEATHSIG), so
// a crashed test leaves no server behind.
//
//   auto server = ServerProcess::Start({"--index", dir, "--threads", "2"});
//   grpc::CreateChannel((*server)->address(), ...);
//   (*server)->Signal(SIGTERM);
//   EXPECT_EQ((*server)->WaitForExit(absl::Seconds(60)), 0);
#pragma once

#include <sys/types.h>

#include <csignal>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace tandem::testing {

// Generous limit for anything that should take well under a second on an idle machine: the tests
// share two cores with builds.
inline constexpr absl::Duration kE2eTimeout = absl::Seconds(60);

struct ProcessResult {
  int exit_code = -1;  // -signal when killed by a signal
  std::string out;
  std::string err;
};

// Starts `binary` (a path) with `args` and the given standard streams, with a clean signal mask; it
// gets `death_signal` when this test process dies, so that a crashed test leaves no server behind.
absl::StatusOr<pid_t> Spawn(const std::string& binary, const std::vector<std::string>& args,
                            int stdin_fd, int stdout_fd, int stderr_fd, int death_signal = SIGKILL);

// Runs `binary` (a path, e.g. from FindInPath) to completion with `args` and `input` on stdin.
// DEADLINE_EXCEEDED (after killing it) when it outlives `timeout`.
absl::StatusOr<ProcessResult> RunProcess(const std::string& binary,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout = kE2eTimeout,
                                         const std::string& input = "");

class ServerProcess {
 public:
  // Starts tandem-server (or `binary`, another program that prints "NAME listening on A (metrics
  // on M)" first: tandem-broker) with `args` plus --listen/--metrics-listen on 127.0.0.1:0
  // (unless `args` sets them) and waits for that line. On failure, the error carries its stderr.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      std::vector<std::string> args, absl::Duration timeout = kE2eTimeout,
      const std::string& binary = TANDEM_SERVER_BINARY);
  // Kills the server (SIGKILL) if it still runs.
  ~ServerProcess();

  const std::string& address() const { return address_; }
  const std::string& metrics_address() const { return metrics_address_; }
  pid_t pid() const { return pid_; }

  void Signal(int signal);
  // The exit code (-signal when killed by one), or nullopt if it still runs after `timeout`.
  std::optional<int> WaitForExit(absl::Duration timeout = kE2eTimeout);
  // Everything it wrote to stderr so far.
  std::string Stderr() const;

 private:
  ServerProcess() = default;

  pid_t pid_ = -1;
  bool exited_ = false;
  int exit_code_ = -1;
  int stdout_fd_ = -1;
  std::string stderr_path_;
  std::string address_;
  std::string metrics_address_;
};

}  // namespace tandem::testing
