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

// The first usable CUDA device, or NOT_FOUND (with the CUDA runtime's reason) when there is none.
absl::StatusOr<DeviceInfo> ProbeDevice();

}  // namespace tandem::gpu
