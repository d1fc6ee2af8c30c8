#include "gpu/device.h"

#include <cuda_runtime_api.h>

#include <chrono>

#include "gpu/cuda_status.h"
#include "gpu/stream_wait.h"
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

// SynchronizeStream returns only once the stream's work is done, whether it spins past the end
// of the work, gives up spinning and synchronizes, or does not spin at all.
TEST(StreamWaitTest, ReturnsOnceTheStreamIsDone) {
  EXPECT_EQ(SynchronizeStream(nullptr, {}).code(), absl::StatusCode::kInvalidArgument);
  absl::StatusOr<DeviceInfo> info = ProbeDevice();
  if (!info.ok()) GTEST_SKIP() << "no CUDA device: " << info.status().message();
  ASSERT_EQ(cudaSetDevice(info->device), cudaSuccess);
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  constexpr size_t kBytes = size_t{256} << 20;  // a copy of a few tens of microseconds
  auto src = DeviceBuffer<char>::Allocate(kBytes);
  auto dst = DeviceBuffer<char>::Allocate(kBytes);
  ASSERT_TRUE(src.ok() && dst.ok());
  for (int spin_us : {0, 1, 100000}) {
    SCOPED_TRACE(spin_us);
    for (int i = 0; i < 4; ++i) {
      ASSERT_EQ(cudaMemcpyAsync(dst->data(), src->data(), kBytes, cudaMemcpyDeviceToDevice, stream),
                cudaSuccess);
    }
    const absl::Status done =
        SynchronizeStream(stream, {.spin = std::chrono::microseconds(spin_us)});
    EXPECT_TRUE(done.ok()) << done;
    EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess);
  }
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace tandem::gpu
