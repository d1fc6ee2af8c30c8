#include "scheduler/engine_factory.h"

#include "gtest/gtest.h"
#include "tests/test_collection.h"

namespace tandem::scheduler {
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

}  // namespace
}  // namespace tandem::scheduler
