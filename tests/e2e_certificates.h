// File: e2e_certificates.h
//
// Certificates the openssl command makes at test time, for the end-to-end tests of TLS: a CA, a
// server certificate for 127.0.0.1 and localhost, and client certificates, all signed by the CA
// and valid for two days, in a temporary directory.
//
//   auto certs = TestCertificates::Make(FindInPath("openssl"),
//                                       {{.name = "client", .subject = "/CN=tandem-test-client"}});
//   server args: --tls-cert certs->path("server.pem") --tls-key certs->path("server.key")
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/temp_dir.h"

namespace tandem::testing {

class TestCertificates {
 public:
  // A client certificate NAME.pem with its key NAME.key.
  struct Client {
    std::string name;
    std::string subject;          // "/CN=alice"
    std::string extensions = "";  // lines besides extendedKeyUsage=clientAuth
  };
  // Null after a failure of the current test (an openssl step failed).
  static std::unique_ptr<TestCertificates> Make(const std::string& openssl,
                                                const std::vector<Client>& clients);

  std::string path(const std::string& name) const { return dir_.path() + "/" + name; }
  std::string read(const std::string& name) const;

 private:
  TestCertificates() = default;
  base::TempDir dir_;
};

}  // namespace tandem::testing
