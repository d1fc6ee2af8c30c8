#include "tests/e2e_certificates.h"

#include <fstream>
#include <iterator>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/e2e_process.h"

namespace tandem::testing {

std::unique_ptr<TestCertificates> TestCertificates::Make(const std::string& openssl,
                                                         const std::vector<Client>& clients) {
  std::unique_ptr<TestCertificates> c(new TestCertificates());
  const std::string d = c->dir_.path();
  const std::string ec = "ec_paramgen_curve:prime256v1";
  std::ofstream(d + "/server.ext") << "subjectAltName=IP:127.0.0.1,DNS:localhost\n";
  std::vector<std::vector<std::string>> steps = {
      {"req", "-x509", "-newkey", "ec", "-pkeyopt", ec, "-nodes", "-keyout", d + "/ca.key", "-out",
       d + "/ca.pem", "-days", "2", "-subj", "/CN=tandem-test-ca"}};
  std::vector<Client> signed_ = {{.name = "server", .subject = "/CN=localhost"}};
  for (const Client& client : clients) {
    std::ofstream(d + "/" + client.name + ".ext") << "extendedKeyUsage=clientAuth\n"
                                                  << client.extensions;
    signed_.push_back(client);
  }
  for (const Client& s : signed_) {
    const std::string base = d + "/" + s.name;
    steps.push_back({"req", "-newkey", "ec", "-pkeyopt", ec, "-nodes", "-keyout", base + ".key",
                     "-out", base + ".csr", "-subj", s.subject});
    steps.push_back({"x509", "-req", "-in", base + ".csr", "-CA", d + "/ca.pem", "-CAkey",
                     d + "/ca.key", "-CAcreateserial", "-out", base + ".pem", "-days", "2",
                     "-extfile", base + ".ext"});
  }
  for (const auto& step : steps) {
    absl::StatusOr<ProcessResult> run = RunProcess(openssl, step);
    if (!run.ok() || run->exit_code != 0) {
      ADD_FAILURE() << "openssl " << step[0] << " failed: " << (run.ok() ? run->err : "");
      return nullptr;
    }
  }
  return c;
}

std::string TestCertificates::read(const std::string& name) const {
  std::ifstream in(path(name));
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace tandem::testing
