// File: e2e_suites.h
//
// The two shapes of end-to-end suite that share their set-up: tests that each start the servers
// they need over one index built for the suite (IndexE2eTest), and tests that all ask one server
// of that index, started once for the suite (ServedIndexE2eTest). Building the index and starting
// a server take most of a test's time, so each is done once per suite.
//
//   class StartupE2eTest : public IndexE2eTest {};
//   TEST_F(StartupE2eTest, ServesAfterStart) {
//     auto server = Start({"--threads", "1"});
//     ASSERT_NE(server, nullptr);
//   }
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {

class IndexE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { index_ = E2eIndex::Build().release(); }
  static void TearDownTestSuite() {
    delete index_;
    index_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(index_, nullptr); }

  // A tandem-server of the index with `args` after --index; null, the test failed, when it does
  // not start.
  std::unique_ptr<ServerProcess> Start(std::vector<std::string> args) {
    args.insert(args.begin(), {"--index", index_->dir()});
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(args);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  static inline E2eIndex* index_ = nullptr;
};

class ServedIndexE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    index_ = E2eIndex::Build().release();
    ASSERT_NE(index_, nullptr);
    auto server = ServerProcess::Start({"--index", index_->dir(), "--threads", "2"});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = server->release();
  }
  static void TearDownTestSuite() {
    delete server_;
    delete index_;
    server_ = nullptr;
    index_ = nullptr;
  }
  void SetUp() override { ASSERT_NE(server_, nullptr); }

  static inline E2eIndex* index_ = nullptr;
  static inline ServerProcess* server_ = nullptr;
};

}  // namespace tandem::testing
