#include "scheduler/engine_factory.h"

#include "absl/strings/str_cat.h"
#include "cpu/daat_engine.h"
#include "index/status_macros.h"
#if TANDEM_HAVE_GPU
#include "gpu/gpu_engine.h"
#endif

namespace tandem::scheduler {

bool BuiltWithGpu() { return TANDEM_HAVE_GPU != 0; }

absl::StatusOr<EngineSet> CreateEngines(const index::Index& index, const EngineOptions& options) {
  EngineSet set;
  TANDEM_ASSIGN_OR_RETURN(set.cpu, cpu::DaatEngine::Create(index));
  if (options.gpu == GpuMode::kOff) {
    set.summary = "CPU engine only (GPU turned off)";
    return set;
  }
#if TANDEM_HAVE_GPU
  absl::Status why;
  absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice();
  if (device.ok()) {
    absl::StatusOr<std::unique_ptr<index::Engine>> engine =
        gpu::CreateGpuEngine(index, {.device = device->device, .cache_bytes = options.gpu_cache_bytes});
    if (engine.ok()) {
      set.gpu = *std::move(engine);
      set.summary = absl::StrCat("CPU and GPU engines (", device->name, ")");
      set.gpu_name = device->name;
      return set;
    }
    why = engine.status();
  } else {
    why = device.status();
  }
#else
  absl::Status why = absl::UnimplementedError("this build has no CUDA support (TANDEM_ENABLE_GPU=OFF)");
#endif
  if (options.gpu == GpuMode::kRequired) {
    return absl::FailedPreconditionError(absl::StrCat("GPU engine required but unavailable: ", why.message()));
  }
  set.summary = absl::StrCat("CPU engine only; GPU engine unavailable: ", why.message());
  return set;
}

}  // namespace tandem::scheduler
