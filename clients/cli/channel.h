// File: channel.h
//
// The gRPC channel tandem-cli talks over: plaintext by default, TLS when a CA or a client
// certificate is given (mutual TLS when both --tls-cert and --tls-key are), with no limit on
// response size so a large batch's answer is never cut off by the client.
//
//   TANDEM_ASSIGN_OR_RETURN(auto channel, MakeChannel("127.0.0.1:50051", tls));
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/channel.h"

namespace tandem::cli {

struct ChannelTls {
  bool enabled = false;     // TLS with the system's roots unless ca_file is set
  std::string ca_file;      // PEM roots to verify the server with
  std::string cert_file;    // PEM client certificate chain, for mutual TLS
  std::string key_file;     // PEM client key
  std::string server_name;  // expected name in the server certificate, when not the host
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                           const ChannelTls& tls);

}  // namespace tandem::cli
