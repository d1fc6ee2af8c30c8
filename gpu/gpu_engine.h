// File: gpu_engine.h
//
// The public face of the GPU engine, compilable by plain g++ (no CUDA types): the device probe and the
// engine factory. The pipeline itself (Ding et al. 2009, sections 5-8) lands behind this header; today
// CreateGpuEngine reports UNIMPLEMENTED and the scheduler's factory serves everything on the CPU.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "index/engine.h"
#include "index/index.h"

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

struct GpuEngineOptions {
  int device = 0;
  // Device index cache capacity; 0 means a large fraction of free device memory.
  uint64_t cache_bytes = 0;
};

absl::StatusOr<std::unique_ptr<index::Engine>> CreateGpuEngine(const index::Index& index,
                                                               const GpuEngineOptions& options);

}  // namespace tandem::gpu
