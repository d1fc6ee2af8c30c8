// File: device_test_util.h
//
// The fixture of the tests that launch query operations directly (and_step_test.cc,
// merge_find_test.cc): a stream of their own and device memory for ScratchArenas, as a
// QueryContext would hold. Every test skips when there is no CUDA device.
//
//   class MergeFindTest : public ArenaTest<16u << 20> {};
//   ScratchArena arena(arena_memory_.data(), kArenaBytes);
#pragma once

#include <cstddef>

#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gtest/gtest.h"

namespace tandem::gpu {

template <size_t kBytes>
class ArenaTest : public ::testing::Test {
 protected:
  static constexpr size_t kArenaBytes = kBytes;

  void SetUp() override {
    absl::StatusOr<DeviceInfo> device = ProbeDevice();
    if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().message();
    auto stream = CudaStream::Create();
    ASSERT_TRUE(stream.ok());
    stream_ = *std::move(stream);
    auto arena = DeviceBuffer<char>::Allocate(kArenaBytes);
    ASSERT_TRUE(arena.ok());
    arena_memory_ = *std::move(arena);
  }

  CudaStream stream_;
  DeviceBuffer<char> arena_memory_;
};

}  // namespace tandem::gpu
