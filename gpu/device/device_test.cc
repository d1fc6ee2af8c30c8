#include "gpu/device/device.h"

#include "gtest/gtest.h"

namespace tandem::gpu {
namespace {

TEST(DeviceTest, ProbeDescribesTheDeviceOrSaysWhyNone) {
  absl::StatusOr<DeviceInfo> info = ProbeDevice();
  if (!info.ok()) {
    EXPECT_EQ(info.status().code(), absl::StatusCode::kNotFound);
    EXPECT_FALSE(info.status().message().empty());
    GTEST_SKIP() << "no CUDA device: " << info.status().message();
  }
  EXPECT_FALSE(info->name.empty());
  EXPECT_GT(info->total_bytes, 0u);
  EXPECT_GE(info->compute_major, 7);
}

}  // namespace
}  // namespace tandem::gpu
