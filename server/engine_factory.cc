#include "server/engine_factory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "cpu/daat_engine.h"
#include "base/status_macros.h"
#if TANDEM_HAVE_GPU
#include "gpu/gpu_engine.h"
#endif

namespace tandem::server {

bool BuiltWithGpu() { return TANDEM_HAVE_GPU != 0; }

namespace {
// Each wait and the name --gpu-wait gives it.
constexpr std::pair<GpuWait, absl::string_view> kGpuWaitNames[] = {
    {GpuWait::kAuto, "auto"},
    {GpuWait::kSpin, "spin"},
    {GpuWait::kYield, "yield"},
    {GpuWait::kBlocking, "blocking"},
    {GpuWait::kSpinThenBlock, "spin-then-block"},
};
}  // namespace

absl::StatusOr<GpuWait> ParseGpuWait(absl::string_view name) {
  for (const auto& [wait, wait_name] : kGpuWaitNames) {
    if (name == wait_name) return wait;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("must be auto, spin, yield, blocking or spin-then-block, got '", name, "'"));
}

absl::string_view GpuWaitName(GpuWait wait) {
  for (const auto& [known, name] : kGpuWaitNames) {
    if (known == wait) return name;
  }
  return "auto";
}

#if TANDEM_HAVE_GPU
namespace {
gpu::GpuHostWait ToHostWait(GpuWait wait) {
  switch (wait) {
    case GpuWait::kSpin:
      return gpu::GpuHostWait::kSpin;
    case GpuWait::kYield:
      return gpu::GpuHostWait::kYield;
    case GpuWait::kBlocking:
      return gpu::GpuHostWait::kBlockingSync;
    case GpuWait::kSpinThenBlock:
      return gpu::GpuHostWait::kSpinThenBlock;
    case GpuWait::kAuto:
      break;
  }
  return gpu::GpuHostWait::kAuto;
}
}  // namespace
#endif

absl::StatusOr<EngineSet> CreateEngines(const index::Index& index, const EngineOptions& options) {
  EngineSet set;
  if (options.gpu_contexts < 1) return absl::InvalidArgumentError("gpu_contexts must be >= 1");
  if (options.gpu_spin < absl::ZeroDuration() || options.gpu_spin > absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_spin must be 0 to 1s, got ", absl::FormatDuration(options.gpu_spin)));
  }
  TANDEM_ASSIGN_OR_RETURN(set.cpu,
                          cpu::DaatEngine::Create(index, {.or_algorithm = options.cpu_or}));
  if (options.gpu == GpuMode::kOff) {
    set.summary = "CPU engine only (GPU turned off)";
    return set;
  }
#if TANDEM_HAVE_GPU
  absl::Status why;
  absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice();
  if (device.ok()) {
    absl::StatusOr<std::unique_ptr<index::Engine>> engine =
        gpu::CreateGpuEngine(index, {.device = device->device,
                                     .cache_bytes = options.gpu_cache_bytes,
                                     .num_contexts = options.gpu_contexts,
                                     .host_wait = ToHostWait(options.gpu_wait),
                                     .spin_before_block = absl::ToChronoMicroseconds(
                                         options.gpu_spin)});
    if (engine.ok()) {
      set.gpu = *std::move(engine);
      set.summary = absl::StrCat(
          "CPU and GPU engines (", device->name, "; GPU waits: ", GpuWaitName(options.gpu_wait),
          options.gpu_wait == GpuWait::kSpinThenBlock
              ? absl::StrCat(", spinning ", absl::FormatDuration(options.gpu_spin), " first")
              : "",
          ")");
      set.gpu_name = device->name;
      return set;
    }
    why = engine.status();
  } else {
    why = device.status();
  }
#else
  absl::Status why =
      absl::UnimplementedError("this build has no CUDA support (TANDEM_ENABLE_GPU=OFF)");
#endif
  if (options.gpu == GpuMode::kRequired) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU engine required but unavailable: ", why.message()));
  }
  set.summary = absl::StrCat("CPU engine only; GPU engine unavailable: ", why.message());
  return set;
}

}  // namespace tandem::server
