#include "tests/e2e_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

extern char** environ;

namespace tandem::testing {
namespace {

// Reaps `pid` if it has exited; true then, with its exit code (or -signal).
bool TryReap(pid_t pid, int* code) {
  int status = 0;
  const pid_t r = ::waitpid(pid, &status, WNOHANG);
  if (r != pid) return false;
  *code = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
  return true;
}

std::string ReadWhole(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

// fork + execve rather than posix_spawn so the child can ask to be killed when this test process
// dies (PR_SET_PDEATHSIG). Between fork and execve the child calls only async-signal-safe
// functions, as a multi-threaded parent requires.
absl::StatusOr<pid_t> Spawn(const std::string& binary, const std::vector<std::string>& args,
                            int stdin_fd, int stdout_fd, int stderr_fd, int death_signal) {
  std::vector<std::string> argv_storage{binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  if (pid == 0) {
    ::prctl(PR_SET_PDEATHSIG, death_signal);
    if (::getppid() != parent) ::_exit(127);  // the parent died before prctl took effect
    ::dup2(stdin_fd, STDIN_FILENO);
    ::dup2(stdout_fd, STDOUT_FILENO);
    ::dup2(stderr_fd, STDERR_FILENO);
    // A clean signal state: tandem-server blocks SIGTERM itself, and must not inherit blocks.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(binary.c_str(), argv.data(), environ);
    ::_exit(127);
  }
  return pid;
}

absl::StatusOr<ProcessResult> RunProcess(const std::string& binary,
                                         const std::vector<std::string>& args,
                                         absl::Duration timeout, const std::string& input) {
  // stdin from a temporary file and output to temporary files: no pipe can fill up and block.
  const std::string base =
      (std::filesystem::temp_directory_path() /
       absl::StrCat("tandem-e2e-", ::getpid(), "-", absl::ToUnixNanos(absl::Now())))
          .string();
  const std::string in_path = base + ".in", out_path = base + ".out", err_path = base + ".err";
  std::ofstream(in_path) << input;
  const int in_fd = ::open(in_path.c_str(), O_RDONLY | O_CLOEXEC);
  const int out_fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  const int err_fd = ::open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  absl::StatusOr<pid_t> pid = Spawn(binary, args, in_fd, out_fd, err_fd);
  ::close(in_fd);
  ::close(out_fd);
  ::close(err_fd);
  if (!pid.ok()) return pid.status();
  ProcessResult result;
  const absl::Time deadline = absl::Now() + timeout;
  bool done = false;
  while (!(done = TryReap(*pid, &result.exit_code)) && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(5));
  }
  if (!done) {
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, nullptr, 0);
  }
  result.out = ReadWhole(out_path);
  result.err = ReadWhole(err_path);
  for (const std::string& p : {in_path, out_path, err_path}) std::filesystem::remove(p);
  if (!done) {
    return absl::DeadlineExceededError(
        absl::StrCat(binary, " did not finish within ", absl::FormatDuration(timeout)));
  }
  return result;
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(std::vector<std::string> args,
                                                                    absl::Duration timeout,
                                                                    const std::string& binary) {
  auto has_flag = [&args](absl::string_view flag) {
    for (const std::string& a : args) {
      if (a == flag || absl::StartsWith(a, absl::StrCat(flag, "="))) return true;
    }
    return false;
  };
  if (!has_flag("--listen")) args.push_back("--listen=127.0.0.1:0");
  if (!has_flag("--metrics-listen")) args.push_back("--metrics-listen=127.0.0.1:0");

  std::unique_ptr<ServerProcess> server(new ServerProcess());
  server->stderr_path_ =
      (std::filesystem::temp_directory_path() /
       absl::StrCat("tandem-e2e-server-", ::getpid(), "-", absl::ToUnixNanos(absl::Now()), ".err"))
          .string();
  int out_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe failed");
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int err_fd =
      ::open(server->stderr_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  absl::StatusOr<pid_t> pid = Spawn(binary, args, null_fd, out_pipe[1], err_fd);
  ::close(out_pipe[1]);
  ::close(null_fd);
  ::close(err_fd);
  if (!pid.ok()) {
    ::close(out_pipe[0]);
    return pid.status();
  }
  server->pid_ = *pid;
  server->stdout_fd_ = out_pipe[0];

  // Read stdout up to the first newline: "tandem-server listening on A (metrics on M)".
  const std::string name = std::filesystem::path(binary).filename().string();
  std::string line;
  const absl::Time deadline = absl::Now() + timeout;
  while (!absl::StrContains(line, "\n")) {
    const absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) {
      return absl::DeadlineExceededError(
          absl::StrCat(name, " printed no address in time; stderr: ", server->Stderr()));
    }
    pollfd p{.fd = server->stdout_fd_, .events = POLLIN, .revents = 0};
    if (::poll(&p, 1, static_cast<int>(absl::ToInt64Milliseconds(left)) + 1) <= 0) continue;
    char buf[256];
    const ssize_t n = ::read(server->stdout_fd_, buf, sizeof(buf));
    if (n <= 0) {
      std::optional<int> code = server->WaitForExit(timeout);
      return absl::FailedPreconditionError(absl::StrCat(
          name, " exited (", code.value_or(-1), ") before listening; stderr: ", server->Stderr()));
    }
    line.append(buf, static_cast<size_t>(n));
  }
  line = line.substr(0, line.find('\n'));
  const std::string prefix = absl::StrCat(name, " listening on ");
  if (!absl::StartsWith(line, prefix)) {
    return absl::InternalError(absl::StrCat("unexpected first line: '", line, "'"));
  }
  std::vector<std::string> parts = absl::StrSplit(line.substr(prefix.size()), ' ');
  server->address_ = parts.at(0);
  const size_t metrics = line.find("(metrics on ");
  if (metrics != std::string::npos) {
    const size_t start = metrics + std::strlen("(metrics on ");
    server->metrics_address_ = line.substr(start, line.find(')', start) - start);
  }
  return server;
}

ServerProcess::~ServerProcess() {
  if (pid_ > 0 && !exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  if (stdout_fd_ >= 0) ::close(stdout_fd_);
  if (!stderr_path_.empty()) std::filesystem::remove(stderr_path_);
}

void ServerProcess::Signal(int signal) {
  if (!exited_) ::kill(pid_, signal);
}

std::optional<int> ServerProcess::WaitForExit(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (!exited_) {
    if (TryReap(pid_, &exit_code_)) {
      exited_ = true;
      break;
    }
    if (absl::Now() >= deadline) return std::nullopt;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return exit_code_;
}

std::string ServerProcess::Stderr() const { return ReadWhole(stderr_path_); }

}  // namespace tandem::testing
