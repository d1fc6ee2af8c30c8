#include "clients/cli/channel.h"

#include "absl/strings/str_cat.h"
#include "base/read_file.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"

namespace tandem::cli {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& address,
                                                           const ChannelTls& tls) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);
  std::shared_ptr<grpc::ChannelCredentials> credentials;
  const bool use_tls = tls.enabled || !tls.ca_file.empty() || !tls.cert_file.empty();
  if (!use_tls) {
    credentials = grpc::InsecureChannelCredentials();
  } else {
    if (tls.cert_file.empty() != tls.key_file.empty()) {
      return absl::InvalidArgumentError("--tls-cert and --tls-key go together");
    }
    grpc::SslCredentialsOptions ssl;
    if (!tls.ca_file.empty()) {
      absl::StatusOr<std::string> ca = base::ReadFile(tls.ca_file, "TLS CA");
      if (!ca.ok()) return ca.status();
      ssl.pem_root_certs = *std::move(ca);
    }
    if (!tls.cert_file.empty()) {
      absl::StatusOr<std::string> cert = base::ReadFile(tls.cert_file, "TLS certificate");
      if (!cert.ok()) return cert.status();
      absl::StatusOr<std::string> key = base::ReadFile(tls.key_file, "TLS key");
      if (!key.ok()) return key.status();
      ssl.pem_cert_chain = *std::move(cert);
      ssl.pem_private_key = *std::move(key);
    }
    credentials = grpc::SslCredentials(ssl);
    if (!tls.server_name.empty()) args.SetSslTargetNameOverride(tls.server_name);
  }
  return grpc::CreateCustomChannel(address, credentials, args);
}

}  // namespace tandem::cli
