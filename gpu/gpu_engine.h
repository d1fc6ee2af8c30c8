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
#include "gpu/device.h"
#include "index/index.h"

namespace tandem::gpu {

struct GpuEngineOptions {
  int device = 0;
  // Device index cache capacity; 0 means a large fraction of free device memory.
  uint64_t cache_bytes = 0;
};

absl::StatusOr<std::unique_ptr<index::Engine>> CreateGpuEngine(const index::Index& index,
                                                               const GpuEngineOptions& options);

}  // namespace tandem::gpu
