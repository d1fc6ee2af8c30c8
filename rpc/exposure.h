// File: exposure.h
//
// The guardrail against serving in plaintext to the network. A gRPC listen address that other
// hosts can reach needs TLS; a metrics address that other hosts can reach needs HTTPS and basic
// auth. A server refuses to start otherwise, unless its operator passed --allow-insecure, and then
// it says so loudly in its log. Loopback addresses and Unix sockets are always allowed.
//
//   TANDEM_RETURN_IF_ERROR(CheckExposure(
//       {.program = "tandem-server", .what = "gRPC", .address = listen, .protection = "--tls-cert
//       and --tls-key",
//        .protected_ = !tls.cert_file.empty()},
//       allow_insecure, log));
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "rpc/rate_limited_log.h"

namespace tandem::rpc {

// Whether only this host can connect to `address`, a listen address as the servers take it:
// "host:port", "[ipv6]:port", or gRPC's "unix:PATH" and "unix-abstract:NAME". True for 127.0.0.0/8,
// ::1, "localhost", Unix sockets, and host names that resolve to loopback addresses only; false
// for the wildcard (0.0.0.0, [::], an empty host) and every other address.
bool IsLoopbackAddress(absl::string_view address);

struct Exposure {
  absl::string_view program;     // "tandem-server", the warning's prefix
  absl::string_view what;        // "gRPC", "metrics"
  absl::string_view address;     // the listen address
  absl::string_view protection;  // the flags that protect it ("--tls-cert and --tls-key")
  bool protected_ = false;       // whether they were given
};

// OK when `exposure.address` is loopback or protected. Otherwise FAILED_PRECONDITION naming the
// address and the ways out, unless `allow_insecure`: then OK, and a warning through `log` (null:
// standard error) that the service is open to anyone who can reach the address.
absl::Status CheckExposure(const Exposure& exposure, bool allow_insecure, LogSink log = nullptr);

}  // namespace tandem::rpc
