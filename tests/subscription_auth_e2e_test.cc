// Standing queries under mutual TLS: each interface is bound to the client certificates that name
// it (subject CN or subjectAltName), against the real tandem-server with certificates the openssl
// command makes at test time (a CA, the server, alice by CN and bob by a DNS subjectAltName). A
// client may subscribe, list, watch and unsubscribe only for its own interfaces
// (PERMISSION_DENIED otherwise); without --tls-client-ca the node says any client may act for any
// interface. Skips when openssl is absent.
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "gtest/gtest.h"
#include "tandem/v1/subscription.grpc.pb.h"
#include "tests/e2e_certificates.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using tandem::v1::SubscriptionService;
using ::testing::HasSubstr;

class SubscriptionAuthE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    index_ = E2eIndex::Build({.num_docs = 50}).release();
    ASSERT_NE(index_, nullptr);
  }
  static void TearDownTestSuite() { delete index_; }

  std::unique_ptr<SubscriptionService::Stub> StubFor(const TestCertificates& certs,
                                                     const std::string& client,
                                                     const std::string& address) {
    grpc::SslCredentialsOptions options;
    options.pem_root_certs = certs.read("ca.pem");
    options.pem_cert_chain = certs.read(client + ".pem");
    options.pem_private_key = certs.read(client + ".key");
    return SubscriptionService::NewStub(
        grpc::CreateChannel(address, grpc::SslCredentials(options)));
  }

  static E2eIndex* index_;
  TempDir tmp_;
};

E2eIndex* SubscriptionAuthE2eTest::index_ = nullptr;

grpc::Status Subscribe(SubscriptionService::Stub& stub, const std::string& interface,
                       uint64_t* id = nullptr) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::SubscribeRequest request;
  request.set_interface(interface);
  request.set_predicate_text("year = 2001");
  tandem::v1::SubscribeResponse response;
  grpc::Status status = stub.Subscribe(&context, request, &response);
  if (id != nullptr) *id = response.id();
  return status;
}

grpc::Status List(SubscriptionService::Stub& stub, const std::string& interface,
                  std::vector<std::string>* interfaces) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::ListSubscriptionsRequest request;
  request.set_interface(interface);
  tandem::v1::ListSubscriptionsResponse response;
  grpc::Status status = stub.ListSubscriptions(&context, request, &response);
  interfaces->clear();
  for (const auto& s : response.subscriptions()) interfaces->push_back(s.interface());
  return status;
}

grpc::Status Unsubscribe(SubscriptionService::Stub& stub, uint64_t id) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::UnsubscribeRequest request;
  request.set_id(id);
  tandem::v1::UnsubscribeResponse response;
  return stub.Unsubscribe(&context, request, &response);
}

grpc::Status Watch(SubscriptionService::Stub& stub, const std::string& interface) {
  grpc::ClientContext context;
  SetTimeout(context, absl::Seconds(2));  // an allowed stream stays open: it ends by deadline
  tandem::v1::WatchRequest request;
  request.set_interface(interface);
  auto reader = stub.Watch(&context, request);
  tandem::v1::WatchEvent event;
  while (reader->Read(&event)) {
  }
  return reader->Finish();
}

TEST_F(SubscriptionAuthE2eTest, WithMutualTlsEachInterfaceBelongsToItsCertificate) {
  const std::string openssl = FindInPath("openssl");
  if (openssl.empty()) GTEST_SKIP() << "openssl is not installed; cannot make test certificates";
  auto certs = TestCertificates::Make(
      openssl,
      {{.name = "alice", .subject = "/CN=alice"},
       {.name = "bob", .subject = "/O=tandem-test", .extensions = "subjectAltName=DNS:bob\n"}});
  ASSERT_NE(certs, nullptr);
  absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(
      {"--index", index_->dir(), "--threads", "2", "--subscriptions", tmp_.path() + "/subs",
       "--tls-cert", certs->path("server.pem"), "--tls-key", certs->path("server.key"),
       "--tls-client-ca", certs->path("ca.pem")});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->Stderr(),
              HasSubstr("each interface bound to the client certificates that name it"));
  auto alice = StubFor(*certs, "alice", (*server)->address());
  auto bob = StubFor(*certs, "bob", (*server)->address());

  // Bob (by subjectAltName) may not act for alice (by CN), and neither for a third interface.
  grpc::Status status = Subscribe(*bob, "alice");
  EXPECT_EQ(status.error_code(), grpc::StatusCode::PERMISSION_DENIED) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("identities (bob)"));
  EXPECT_EQ(Subscribe(*alice, "carol").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  uint64_t alices = 0, bobs = 0;
  status = Subscribe(*alice, "alice", &alices);
  ASSERT_TRUE(status.ok()) << status.error_message();
  status = Subscribe(*bob, "bob", &bobs);
  ASSERT_TRUE(status.ok()) << status.error_message();

  std::vector<std::string> listed;
  EXPECT_EQ(List(*bob, "alice", &listed).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(List(*bob, "", &listed).ok());
  EXPECT_THAT(listed, ::testing::ElementsAre("bob"));
  ASSERT_TRUE(List(*alice, "", &listed).ok());
  EXPECT_THAT(listed, ::testing::ElementsAre("alice"));
  EXPECT_EQ(Watch(*bob, "alice").error_code(), grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(Watch(*alice, "alice").error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);

  EXPECT_EQ(Unsubscribe(*bob, alices).error_code(), grpc::StatusCode::PERMISSION_DENIED);
  ASSERT_TRUE(List(*alice, "alice", &listed).ok());
  EXPECT_EQ(listed.size(), 1u);  // still there
  EXPECT_TRUE(Unsubscribe(*alice, alices).ok());
  EXPECT_TRUE(Unsubscribe(*bob, bobs).ok());
  (*server)->Signal(SIGTERM);
  EXPECT_EQ((*server)->WaitForExit(), 0) << (*server)->Stderr();
}

TEST_F(SubscriptionAuthE2eTest, WithoutClientCertificatesTheNodeSaysAnyClientMayActForAny) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> server =
      ServerProcess::Start({"--index", index_->dir(), "--threads", "2"});
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_THAT((*server)->Stderr(),
              HasSubstr("any client may act for any interface (no --tls-client-ca)"));
  auto stub = SubscriptionService::NewStub(NewChannel((*server)->address()));
  uint64_t id = 0;
  ASSERT_TRUE(Subscribe(*stub, "alice", &id).ok());
  EXPECT_TRUE(Unsubscribe(*stub, id).ok());
}

}  // namespace
}  // namespace tandem::testing
