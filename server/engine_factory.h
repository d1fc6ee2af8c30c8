// File: engine_factory.h
//
// Chooses and creates the engines a server runs. The only file that knows whether the build has a
// GPU engine (the #ifdef lives here, as Faiss keeps FAISS_ENABLE_GPU out of its CPU code).
//
//   EngineSet engines = *CreateEngines(*index, {.gpu = GpuMode::kAuto});
//   engines.cpu->Search(...);  if (engines.gpu) engines.gpu->Search(...);
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cpu/daat_engine.h"
#include "index/engine.h"
#include "index/index.h"

namespace tandem::server {

enum class GpuMode {
  kOff,       // CPU only
  kAuto,      // GPU when the build has one and a device is present; else CPU only, said once
  kRequired,  // fail when no GPU engine can be created
};

// How a thread waiting for the GPU holds its core (gpu::GpuHostWait; this header stays CUDA-free).
// kSpinThenBlock spins for EngineOptions::gpu_spin, then sleeps.
enum class GpuWait { kAuto, kSpin, kYield, kBlocking, kSpinThenBlock };

struct EngineOptions {
  GpuMode gpu = GpuMode::kAuto;
  cpu::OrAlgorithm cpu_or = cpu::OrAlgorithm::kMaxScore;  // the CPU engine's OR
  uint64_t gpu_cache_bytes = 0;
  int gpu_contexts = 4;  // queries in flight on the GPU at once
  GpuWait gpu_wait = GpuWait::kAuto;
  absl::Duration gpu_spin = absl::Microseconds(200);  // kSpinThenBlock: 0 to 1 s
};

// "auto", "spin", "yield", "blocking" or "spin-then-block" (the server's --gpu-wait); otherwise
// INVALID_ARGUMENT, "must be auto, spin, yield, blocking or spin-then-block, got 'NAME'".
absl::StatusOr<GpuWait> ParseGpuWait(absl::string_view name);
// The name ParseGpuWait takes ("spin-then-block"), for logs and summaries.
absl::string_view GpuWaitName(GpuWait wait);

struct EngineSet {
  std::unique_ptr<index::Engine> cpu;  // always present
  std::unique_ptr<index::Engine> gpu;  // null when the GPU is off or unavailable
  // One line on what was chosen and why ("GPU engine off: no CUDA device").
  std::string summary;
  // The GPU's name ("NVIDIA H100 80GB HBM3") when `gpu` is set, for benchmark and model metadata.
  std::string gpu_name;
};

// Whether this binary was built with the CUDA engine.
bool BuiltWithGpu();

absl::StatusOr<EngineSet> CreateEngines(const index::Index& index, const EngineOptions& options);

}  // namespace tandem::server
