#include "server/grpc_log.h"

#include <cstdio>

#include "absl/synchronization/mutex.h"
#include "grpc/support/log.h"

namespace tandem::server {
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
  std::fprintf(stderr, "tandem-server: grpc: %s\n", args->message);
}

}  // namespace

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

}  // namespace tandem::server
