#include "rpc/grpc_log.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "google/protobuf/stubs/logging.h"
#include "grpc/support/log.h"
#include "rpc/rate_limited_log.h"

namespace tandem::rpc {
namespace {

struct LogState {
  absl::Mutex mu;
  int captures = 0;
  std::string captured;
};

LogState& State() {
  static LogState* state = new LogState();  // never destroyed: gRPC may log during exit
  return *state;
}

void Route(gpr_log_func_args* args) {
  LogState& state = State();
  absl::MutexLock lock(&state.mu);
  if (state.captures > 0) {
    state.captured.append(args->message).push_back('\n');
    return;
  }
  // A client can provoke some records (a broken connection); they must not flood the log.
  static RateLimitedLog* limited = new RateLimitedLog(absl::Seconds(1), nullptr);
  limited->Log(absl::StrCat("tandem-server: grpc: ", args->message));
}

void RouteProtobuf(google::protobuf::LogLevel level, const char* /*filename*/, int /*line*/,
                   const std::string& message) {
  // Every request whose strings are not UTF-8 makes protobuf log an error: at most one a minute.
  static RateLimitedLog* limited = new RateLimitedLog(absl::Minutes(1), nullptr);
  if (level == google::protobuf::LOGLEVEL_FATAL) {
    std::fprintf(stderr, "tandem-server: protobuf: %s\n", message.c_str());
    return;
  }
  limited->Log(absl::StrCat("tandem-server: protobuf: ", message));
}

}  // namespace

void LimitLibraryLogs() {
  gpr_set_log_function(&Route);
  google::protobuf::SetLogHandler(&RouteProtobuf);
}

GrpcLogCapture::GrpcLogCapture() {
  LogState& state = State();
  absl::MutexLock lock(&state.mu);
  if (state.captures++ == 0) state.captured.clear();
  gpr_set_log_function(&Route);
}

GrpcLogCapture::~GrpcLogCapture() {
  LogState& state = State();
  absl::MutexLock lock(&state.mu);
  --state.captures;
}

std::string GrpcLogCapture::text() const {
  LogState& state = State();
  absl::MutexLock lock(&state.mu);
  return state.captured;
}

}  // namespace tandem::rpc
