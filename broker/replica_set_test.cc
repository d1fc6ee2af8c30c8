#include "broker/replica_set.h"

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "broker/scatter_gather.h"
#include "gtest/gtest.h"

namespace tandem::broker {
namespace {

TEST(ReplicaSet, SplitsTargets) {
  auto split = ReplicaSet::SplitTarget("node-1.tandem:50051");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->first, "node-1.tandem");
  EXPECT_EQ(split->second, "50051");
  split = ReplicaSet::SplitTarget("[::1]:7");
  ASSERT_TRUE(split.ok());
  EXPECT_EQ(split->first, "::1");
  for (const char* bad : {"", "host", ":50051", "host:", "host:0", "host:65536", "host:http",
                          "::1:50051", "[::1]50051", "[::1]", "a:1:2"}) {
    EXPECT_EQ(ReplicaSet::SplitTarget(bad).status().code(), absl::StatusCode::kInvalidArgument)
        << bad;
  }
}

TEST(ReplicaSet, ParsesTargetsFiles) {
  auto targets = ReplicaSet::ParseTargetsFile(
      "# shard group a\n  10.0.0.1:50051  \n\n10.0.0.2:50051 # the second\n[::1]:9\n");
  ASSERT_TRUE(targets.ok());
  EXPECT_EQ(*targets, (std::vector<std::string>{"10.0.0.1:50051", "10.0.0.2:50051", "[::1]:9"}));
  targets = ReplicaSet::ParseTargetsFile("10.0.0.1:50051\nnot a target\n");
  ASSERT_FALSE(targets.ok());
  EXPECT_NE(targets.status().message().find("line 2"), std::string::npos)
      << targets.status().message();
}

TEST(ReplicaSet, CreateRefusesBadOptions) {
  EXPECT_EQ(ReplicaSet::Create({}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(ReplicaSet::Create({.targets = {"nohost"}}).status().code(),
            absl::StatusCode::kInvalidArgument);
  ReplicaSetOptions missing_file{.targets_file = "/nonexistent/replicas.txt"};
  absl::StatusOr<std::unique_ptr<ReplicaSet>> set = ReplicaSet::Create(missing_file);
  ASSERT_FALSE(set.ok());
  EXPECT_NE(set.status().message().find("/nonexistent/replicas.txt"), std::string::npos);
  ReplicaSetOptions zero{.targets = {"127.0.0.1:1"}, .health_interval = absl::ZeroDuration()};
  EXPECT_FALSE(ReplicaSet::Create(zero).ok());
  ReplicaSetOptions no_shards{.targets = {"127.0.0.1:1"}, .expected_shards = 0u};
  EXPECT_FALSE(ReplicaSet::Create(no_shards).ok());
  ReplicaSetOptions no_channels{.targets = {"127.0.0.1:1"}, .channels_per_replica = 0};
  EXPECT_FALSE(ReplicaSet::Create(no_channels).ok());
}

TEST(ReplicaSet, NodesThatDoNotAnswerGiveNoShards) {
  // Port 1 on loopback refuses connections: the replica is known, ejected, and no shard exists.
  std::vector<std::string> lines;
  ReplicaSetOptions options{.targets = {"127.0.0.1:1"},
                            .health_timeout = absl::Milliseconds(300),
                            .log = [&lines](const std::string& line) { lines.push_back(line); }};
  absl::StatusOr<std::unique_ptr<ReplicaSet>> set = ReplicaSet::Create(options);
  ASSERT_TRUE(set.ok()) << set.status();
  EXPECT_EQ((*set)->topology()->shards, 0u);
  EXPECT_TRUE((*set)->topology()->collection_id.empty());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("127.0.0.1:1 ejected"), std::string::npos) << lines[0];
  (*set)->CheckNow();
  EXPECT_EQ(lines.size(), 1u);  // said once
}

TEST(ReplicaSet, ReadsTheTargetsFileAgainWhenItChanges) {
  const std::string path = ::testing::TempDir() + "/replicas.txt";
  std::ofstream(path) << "127.0.0.1:1\n";
  std::vector<std::string> lines;
  ReplicaSetOptions options{.targets_file = path,
                            .health_timeout = absl::Milliseconds(300),
                            .refresh_interval = absl::Milliseconds(1),
                            .log = [&lines](const std::string& line) { lines.push_back(line); }};
  absl::StatusOr<std::unique_ptr<ReplicaSet>> set = ReplicaSet::Create(options);
  ASSERT_TRUE(set.ok()) << set.status();
  ASSERT_EQ(lines.size(), 1u);
  std::ofstream(path) << "127.0.0.1:1\n127.0.0.1:2\n";
  absl::SleepFor(absl::Milliseconds(5));
  (*set)->CheckNow();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[1].find("127.0.0.1:2 ejected"), std::string::npos) << lines[1];
  // A file that no longer parses keeps the replicas read before, and says why.
  std::ofstream(path) << "garbage\n";
  absl::SleepFor(absl::Milliseconds(5));
  (*set)->CheckNow();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[2].find("line 1"), std::string::npos) << lines[2];
  std::remove(path.c_str());
}

TEST(ReplicaSet, PickTakesHealthyUntriedReplicas) {
  Topology topology;
  topology.shards = 1;
  topology.replicas.resize(1);
  EXPECT_EQ(ReplicaSet::Pick(topology, 0, {}), nullptr);
  EXPECT_EQ(ReplicaSet::Pick(topology, 5, {}), nullptr);
  // Replica objects that were never checked are not healthy: nothing to pick.
  auto channel = grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
  topology.replicas[0].push_back(std::make_shared<Replica>(
      "127.0.0.1:1", std::vector<std::shared_ptr<grpc::Channel>>{channel}));
  EXPECT_EQ(ReplicaSet::Pick(topology, 0, {}), nullptr);
  EXPECT_EQ(topology.UnservedShards(), std::vector<uint32_t>{0});
}

TEST(HedgePolicy, ParsesFlags) {
  HedgePolicy policy;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("off", &policy, &error));
  EXPECT_EQ(policy.kind, HedgePolicy::Kind::kOff);
  ASSERT_TRUE(AbslParseFlag("5ms", &policy, &error));
  EXPECT_EQ(policy.kind, HedgePolicy::Kind::kFixed);
  EXPECT_EQ(policy.delay, absl::Milliseconds(5));
  EXPECT_EQ(AbslUnparseFlag(policy), "5ms");
  ASSERT_TRUE(AbslParseFlag("auto", &policy, &error));
  EXPECT_EQ(AbslUnparseFlag(policy), "auto");
  EXPECT_FALSE(AbslParseFlag("0ms", &policy, &error));
  EXPECT_FALSE(AbslParseFlag("soon", &policy, &error));
  EXPECT_NE(error.find("auto"), std::string::npos);
}

TEST(LatencyWindow, P95OfTheRecentAnswers) {
  LatencyWindow window;
  for (int i = 0; i < 31; ++i) window.Add(absl::Milliseconds(1));
  EXPECT_FALSE(window.P95().has_value());
  for (int i = 1; i <= 100; ++i) window.Add(absl::Microseconds(i * 10));
  // 131 values: 31 of 1 ms, then 10 us .. 1000 us; the 125th smallest is 1 ms.
  ASSERT_TRUE(window.P95().has_value());
  EXPECT_EQ(*window.P95(), absl::Milliseconds(1));
  // After 512 more answers of 2 us the window forgot the rest.
  for (int i = 0; i < 512; ++i) window.Add(absl::Microseconds(2));
  EXPECT_EQ(*window.P95(), absl::Microseconds(2));
}

}  // namespace
}  // namespace tandem::broker
