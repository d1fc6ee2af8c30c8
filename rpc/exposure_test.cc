#include "rpc/exposure.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::rpc {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;

TEST(IsLoopbackAddressTest, EveryInterfaceAndOtherHostsAreNotLoopback) {
  for (const char* address : {"0.0.0.0:50051", "[::]:50051", ":50051", "10.0.0.5:50051",
                              "192.168.1.2:0", "[2001:db8::1]:9464", "[::ffff:10.0.0.1]:1",
                              "ipv4:0.0.0.0:1", "dns:///0.0.0.0:1", "no-port", "128.0.0.1:1"}) {
    EXPECT_FALSE(IsLoopbackAddress(address)) << address;
  }
}

TEST(IsLoopbackAddressTest, LoopbackAddressesAndUnixSocketsAre) {
  for (const char* address : {"127.0.0.1:50051", "127.1.2.3:0", "[::1]:9464", "localhost:1",
                              "LocalHost:1", "[::ffff:127.0.0.1]:1", "ipv4:127.0.0.1:1",
                              "ipv6:[::1]:1", "unix:/tmp/tandem.sock", "unix-abstract:tandem"}) {
    EXPECT_TRUE(IsLoopbackAddress(address)) << address;
  }
}

struct Logged {
  std::vector<std::string> lines;
  LogSink sink() {
    return [this](absl::string_view line) { lines.emplace_back(line); };
  }
};

TEST(CheckExposureTest, RefusesAnUnprotectedNetworkAddressNamingTheWaysOut) {
  Logged log;
  const absl::Status status = CheckExposure({.program = "tandem-server",
                                             .what = "gRPC",
                                             .address = "0.0.0.0:50051",
                                             .protection = "--tls-cert and --tls-key"},
                                            /*allow_insecure=*/false, log.sink());
  EXPECT_EQ(status.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(status.message(), HasSubstr("0.0.0.0:50051"));
  EXPECT_THAT(status.message(), HasSubstr("--tls-cert and --tls-key"));
  EXPECT_THAT(status.message(), HasSubstr("--allow-insecure"));
  EXPECT_THAT(status.message(), HasSubstr("127.0.0.1"));
  EXPECT_THAT(log.lines, IsEmpty());
}

TEST(CheckExposureTest, AllowsAnUnprotectedNetworkAddressWhenToldAndWarnsLoudly) {
  Logged log;
  EXPECT_TRUE(CheckExposure({.program = "tandem-broker",
                             .what = "metrics",
                             .address = "[::]:9465",
                             .protection = "--metrics-tls-cert"},
                            /*allow_insecure=*/true, log.sink())
                  .ok());
  ASSERT_THAT(log.lines, SizeIs(1));
  EXPECT_THAT(log.lines[0], HasSubstr("tandem-broker: WARNING"));
  EXPECT_THAT(log.lines[0], HasSubstr("metrics on [::]:9465 WITHOUT PROTECTION"));
}

TEST(CheckExposureTest, LoopbackOrProtectedNeedsNothingAndLogsNothing) {
  Logged log;
  for (bool allow : {false, true}) {
    EXPECT_TRUE(CheckExposure({.what = "gRPC", .address = "127.0.0.1:0", .protected_ = false},
                              allow, log.sink())
                    .ok());
    EXPECT_TRUE(CheckExposure({.what = "gRPC", .address = "0.0.0.0:0", .protected_ = true}, allow,
                              log.sink())
                    .ok());
  }
  EXPECT_THAT(log.lines, IsEmpty());
}

}  // namespace
}  // namespace tandem::rpc
