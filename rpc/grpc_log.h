// File: grpc_log.h
//
// gRPC reports some failures (a port already in use) only through its own log, as long multi-line
// records. The server routes that log here: while a capture is open (startup) records are kept so
// the caller can turn them into one clear line; otherwise each record goes to stderr prefixed with
// "tandem-server: grpc: ", at most one a second. Protobuf's log, which a client provokes with
// every request whose strings are not UTF-8, passes at most one line a minute.
//
//   GrpcLogCapture capture;                 // installs the router on first use
//   ... builder.BuildAndStart() ...
//   if (absl::StrContains(capture.text(), "Address already in use")) ...
#pragma once

#include <string>

namespace tandem::rpc {

// Installs both routes; GrpcLogCapture installs gRPC's too.
void LimitLibraryLogs();

class GrpcLogCapture {
 public:
  GrpcLogCapture();
  ~GrpcLogCapture();
  GrpcLogCapture(const GrpcLogCapture&) = delete;
  GrpcLogCapture& operator=(const GrpcLogCapture&) = delete;

  // Every record logged since construction, one per line.
  std::string text() const;
};

}  // namespace tandem::rpc
