// File: grpc_listen.h
//
// What a Tandem gRPC server needs to listen, shared by tandem-server and tandem-broker: TLS
// credentials from PEM files, the health and reflection services, a port checked before gRPC sees
// it, and one clear line when binding fails.
//
//   TANDEM_ASSIGN_OR_RETURN(auto credentials, MakeCredentials(options.tls));
//   TANDEM_RETURN_IF_ERROR(CheckListenPort(listen));
//   EnableHealthAndReflection();
//   grpc::ServerBuilder builder;
//   builder.AddListeningPort(listen, credentials, &port);
//   ...
//   TANDEM_ASSIGN_OR_RETURN(server, BuildAndStart(builder, listen, port));
#pragma once

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"

namespace tandem::rpc {

struct TlsOptions {
  std::string cert_file;  // PEM server certificate chain; TLS is on when set
  std::string key_file;   // PEM private key
  // PEM CA bundle; when set, clients must present a certificate it signed (mutual TLS).
  std::string client_ca_file;
};

// Insecure credentials without TLS files; INVALID_ARGUMENT for half a configuration or a file
// that cannot be read.
absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(const TlsOptions& tls);

// "host:port" with the port replaced by `port` (the bound one when 0 was asked for).
std::string WithPort(const std::string& address, int port);

// gRPC takes a port above 65535 modulo 2^16 ("127.0.0.1:99999" listened on 34463): a host:port
// address must have a port from 0 to 65535. Other URIs (unix:PATH) are gRPC's to check.
absl::Status CheckListenPort(const std::string& address);

// gRPC logs why a bind failed; this keeps the one fact an operator needs.
std::string ListenFailure(const std::string& address, const std::string& grpc_log);

// Turns on gRPC's health service and server reflection for the servers built after it.
void EnableHealthAndReflection();

// builder.BuildAndStart(); UNAVAILABLE with ListenFailure's line when it did not bind `listen`.
// `port` is where AddListeningPort writes the bound port.
absl::StatusOr<std::unique_ptr<grpc::Server>> BuildAndStart(grpc::ServerBuilder& builder,
                                                            const std::string& listen,
                                                            const int& port);

}  // namespace tandem::rpc
