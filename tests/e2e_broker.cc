// File: e2e_broker.cc
#include "tests/e2e_broker.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/e2e_fixture.h"

namespace tandem::testing {

std::unique_ptr<ServerProcess> StartNode(const std::string& dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {"--index", dir,   "--threads",        "1",
                                   "--gpu",   "off", "--queue-capacity", "512"};
  args.insert(args.end(), extra.begin(), extra.end());
  absl::StatusOr<std::unique_ptr<ServerProcess>> node = ServerProcess::Start(args);
  EXPECT_TRUE(node.ok()) << node.status();
  return node.ok() ? *std::move(node) : nullptr;
}

std::unique_ptr<ServerProcess> StartBroker(std::vector<std::string> args) {
  args.insert(args.end(), {"--health-interval", "100ms", "--refresh-interval", "100ms",
                           "--health-timeout", "2s"});
  absl::StatusOr<std::unique_ptr<ServerProcess>> broker =
      ServerProcess::Start(args, kE2eTimeout, TANDEM_BROKER_BINARY);
  EXPECT_TRUE(broker.ok()) << broker.status();
  if (!broker.ok()) return nullptr;
  if (!WaitForHealth((*broker)->address(), cli::ServingStatus::kServing,
                     "tandem.v1.SearchService")) {
    ADD_FAILURE() << "tandem-broker did not become SERVING within " << kE2eTimeout;
    return nullptr;
  }
  return *std::move(broker);
}

std::string Addresses(const std::vector<std::unique_ptr<ServerProcess>>& nodes) {
  std::vector<std::string> addresses;
  for (const auto& n : nodes) {
    if (n != nullptr) addresses.push_back(n->address());
  }
  return absl::StrJoin(addresses, ",");
}

}  // namespace tandem::testing
