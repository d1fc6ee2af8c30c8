#include "server/engine_factory.h"

#include "gtest/gtest.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

TEST(EngineFactoryTest, CpuAlwaysPresentAndGpuOptional) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex({{"a", "b"}, {"b"}}, dir.path() + "/i", "pfor").ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok()) << index.status();
  auto off = CreateEngines(**index, {.gpu = GpuMode::kOff});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->cpu->name(), "cpu");
  EXPECT_EQ(off->gpu, nullptr);
  auto automatic = CreateEngines(**index, {.gpu = GpuMode::kAuto});
  ASSERT_TRUE(automatic.ok());
  EXPECT_NE(automatic->cpu, nullptr);
  EXPECT_FALSE(automatic->summary.empty());
  if (automatic->gpu == nullptr) {
    // Without a usable GPU engine, requiring one fails with a reason.
    auto required = CreateEngines(**index, {.gpu = GpuMode::kRequired});
    EXPECT_EQ(required.status().code(), absl::StatusCode::kFailedPrecondition);
  }
}

TEST(EngineFactoryTest, GpuWaitNamesAndContexts) {
  EXPECT_EQ(*ParseGpuWait("auto"), GpuWait::kAuto);
  EXPECT_EQ(*ParseGpuWait("spin"), GpuWait::kSpin);
  EXPECT_EQ(*ParseGpuWait("yield"), GpuWait::kYield);
  EXPECT_EQ(*ParseGpuWait("blocking"), GpuWait::kBlocking);
  EXPECT_EQ(*ParseGpuWait("spin-then-block"), GpuWait::kSpinThenBlock);
  for (GpuWait wait : {GpuWait::kAuto, GpuWait::kSpin, GpuWait::kYield, GpuWait::kBlocking,
                       GpuWait::kSpinThenBlock}) {
    EXPECT_EQ(*ParseGpuWait(GpuWaitName(wait)), wait);
  }
  const absl::StatusOr<GpuWait> bad = ParseGpuWait("sleep");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("'sleep'"), std::string::npos);

  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex({{"a", "b"}, {"b"}}, dir.path() + "/i", "pfor").ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(CreateEngines(**index, {.gpu = GpuMode::kAuto, .gpu_contexts = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (absl::Duration spin : {absl::Microseconds(-1), absl::Seconds(2)}) {
    const absl::Status status =
        CreateEngines(**index, {.gpu = GpuMode::kAuto, .gpu_spin = spin}).status();
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(status.message().find("gpu_spin must be 0 to 1s"), std::string::npos);
  }
  // Blocking waits and eight contexts: a GPU engine, when there is one, still answers.
  auto engines = CreateEngines(
      **index, {.gpu = GpuMode::kAuto, .gpu_contexts = 8, .gpu_wait = GpuWait::kBlocking});
  ASSERT_TRUE(engines.ok()) << engines.status();
  if (engines->gpu != nullptr) {
    index::Query query;
    query.terms = {{.term = "b"}};
    query.mode = index::QueryMode::kOr;
    query.k = 10;
    auto result = engines->gpu->Search(query, {});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->hits.size(), 2u);
  }
}

}  // namespace
}  // namespace tandem::server
