// File: device.h
//
// The CUDA device probe, in plain C++ (implemented in device.cu). Kept free of index types so the
// CUDA translation units need no C++20 headers.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace tandem::gpu {

struct DeviceInfo {
  int device = 0;
  std::string name;
  uint64_t total_bytes = 0;
  uint64_t free_bytes = 0;
  int compute_major = 0;
  int compute_minor = 0;
};

// CUDA device `device` (0: the first), or NOT_FOUND (with the CUDA runtime's reason) when it is not
// there or not usable.
absl::StatusOr<DeviceInfo> ProbeDevice(int device = 0);

// The CUDA devices visible to this process (CUDA_VISIBLE_DEVICES applies); 0 when there is none or
// no driver.
int DeviceCount();

}  // namespace tandem::gpu
