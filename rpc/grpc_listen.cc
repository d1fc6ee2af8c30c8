// File: grpc_listen.cc
#include "rpc/grpc_listen.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "base/status_macros.h"
#include "grpc/health/v1/health.pb.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/security/server_credentials.h"
#include "rpc/grpc_log.h"

namespace tandem::rpc {

absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> MakeCredentials(const TlsOptions& tls) {
  if (tls.cert_file.empty() && tls.key_file.empty()) {
    if (!tls.client_ca_file.empty()) {
      return absl::InvalidArgumentError("--tls-client-ca needs --tls-cert and --tls-key");
    }
    return grpc::InsecureServerCredentials();
  }
  if (tls.cert_file.empty() || tls.key_file.empty()) {
    return absl::InvalidArgumentError("TLS needs both --tls-cert and --tls-key");
  }
  grpc::SslServerCredentialsOptions ssl;
  grpc::SslServerCredentialsOptions::PemKeyCertPair pair;
  TANDEM_ASSIGN_OR_RETURN(pair.cert_chain, base::ReadFile(tls.cert_file, "TLS certificate"));
  TANDEM_ASSIGN_OR_RETURN(pair.private_key, base::ReadFile(tls.key_file, "TLS key"));
  ssl.pem_key_cert_pairs.push_back(std::move(pair));
  if (!tls.client_ca_file.empty()) {
    TANDEM_ASSIGN_OR_RETURN(ssl.pem_root_certs,
                            base::ReadFile(tls.client_ca_file, "TLS client CA"));
    ssl.client_certificate_request = GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(ssl);
}

std::string WithPort(const std::string& address, int port) {
  const size_t colon = address.rfind(':');
  const std::string host = colon == std::string::npos ? address : address.substr(0, colon);
  return absl::StrCat(host, ":", port);
}

absl::Status CheckListenPort(const std::string& address) {
  if (absl::StartsWith(address, "unix:") || absl::StartsWith(address, "unix-abstract:")) {
    return absl::OkStatus();
  }
  const size_t colon = address.rfind(':');
  const std::string port = colon == std::string::npos ? "" : address.substr(colon + 1);
  int value = -1;
  if (port.empty() || port.find_first_not_of("0123456789") != std::string::npos ||
      !absl::SimpleAtoi(port, &value) || value > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot listen on ", address, ": the port must be a number from 0 to 65535"));
  }
  return absl::OkStatus();
}

std::string ListenFailure(const std::string& address, const std::string& grpc_log) {
  if (absl::StrContains(grpc_log, "Address already in use")) {
    return absl::StrCat("cannot listen on ", address, ": address already in use");
  }
  if (absl::StrContains(grpc_log, "Cannot assign requested address")) {
    return absl::StrCat("cannot listen on ", address, ": address not available on this host");
  }
  return absl::StrCat("cannot listen on ", address, ": invalid address or port");
}

void EnableHealthAndReflection() {
  grpc::EnableDefaultHealthCheckService(true);
  // gRPC's health service has no generated code; this file's descriptor, linked in by naming it,
  // lets reflection describe it (proto/grpc/health/v1/health.proto).
  (void)grpc::health::v1::HealthCheckRequest::descriptor();
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
}

absl::StatusOr<std::unique_ptr<grpc::Server>> BuildAndStart(grpc::ServerBuilder& builder,
                                                            const std::string& listen,
                                                            const int& port) {
  GrpcLogCapture capture;
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (server == nullptr || port == 0) {
    return absl::UnavailableError(ListenFailure(listen, capture.text()));
  }
  return server;
}

}  // namespace tandem::rpc
