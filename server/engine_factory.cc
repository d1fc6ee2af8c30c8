#include "server/engine_factory.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "cpu/daat_engine.h"
#if TANDEM_HAVE_GPU
#include <filesystem>

#include "gpu/gpu_engine.h"
#include "gpu/stored_layouts.h"
#endif

namespace tandem::server {
namespace {

constexpr std::pair<GpuMode, absl::string_view> kGpuModeNames[] = {
    {GpuMode::kAuto, "auto"}, {GpuMode::kOff, "off"}, {GpuMode::kRequired, "required"}};
constexpr std::pair<GpuWait, absl::string_view> kGpuWaitNames[] = {
    {GpuWait::kAuto, "auto"},
    {GpuWait::kSpin, "spin"},
    {GpuWait::kYield, "yield"},
    {GpuWait::kBlocking, "blocking"},
};

template <typename Enum, size_t N>
bool ParseName(const std::pair<Enum, absl::string_view> (&names)[N], absl::string_view text,
               Enum* value, std::string* error) {
  for (const auto& [known, name] : names) {
    if (text == name) {
      *value = known;
      return true;
    }
  }
  std::string expected;
  for (size_t i = 0; i < N; ++i) {
    absl::StrAppend(&expected, i == 0 ? "" : i + 1 == N ? " or " : ", ", names[i].second);
  }
  *error = absl::StrCat("must be ", expected, ", got '", text, "'");
  return false;
}

template <typename Enum, size_t N>
std::string NameOf(const std::pair<Enum, absl::string_view> (&names)[N], Enum value) {
  for (const auto& [known, name] : names) {
    if (known == value) return std::string(name);
  }
  return "auto";
}

#if TANDEM_HAVE_GPU
gpu::GpuHostWait ToHostWait(GpuWait wait) {
  switch (wait) {
    case GpuWait::kSpin:
      return gpu::GpuHostWait::kSpin;
    case GpuWait::kYield:
      return gpu::GpuHostWait::kYield;
    case GpuWait::kBlocking:
      return gpu::GpuHostWait::kBlockingSync;
    case GpuWait::kAuto:
      break;
  }
  return gpu::GpuHostWait::kAuto;
}
#endif

}  // namespace

bool AbslParseFlag(absl::string_view text, GpuMode* mode, std::string* error) {
  return ParseName(kGpuModeNames, text, mode, error);
}
std::string AbslUnparseFlag(GpuMode mode) { return NameOf(kGpuModeNames, mode); }
bool AbslParseFlag(absl::string_view text, GpuWait* wait, std::string* error) {
  return ParseName(kGpuWaitNames, text, wait, error);
}
std::string AbslUnparseFlag(GpuWait wait) { return NameOf(kGpuWaitNames, wait); }

bool BuiltWithGpu() { return TANDEM_HAVE_GPU != 0; }

absl::StatusOr<EngineSet> CreateEngines(const index::Index& index, const EngineOptions& options) {
  EngineSet set;
  if (options.gpu_contexts < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("gpu_threads must be at least 1, got ", options.gpu_contexts));
  }
  if (options.gpu_batch)
    TANDEM_RETURN_IF_ERROR(scheduler::ValidateBatchingOptions(options.gpu_batching));
  TANDEM_ASSIGN_OR_RETURN(set.cpu, cpu::DaatEngine::Create(index, options.cpu));
  if (options.gpu == GpuMode::kOff) {
    set.summary = "CPU engine only (GPU turned off)";
    return set;
  }
#if TANDEM_HAVE_GPU
  absl::Status why;
  absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice();
  if (device.ok()) {
    gpu::GpuEngineOptions gpu_options{.device = device->device,
                                      .cache_bytes = options.gpu_cache_bytes,
                                      .num_contexts = options.gpu_contexts,
                                      .host_wait = ToHostWait(options.gpu_wait)};
    gpu_options.batch = {.enabled = options.gpu_batch,
                         .compressed_forms = options.gpu_batch_compressed,
                         .contexts = options.gpu_batching.runners};
    absl::StatusOr<std::unique_ptr<index::Engine>> engine =
        gpu::CreateGpuEngine(index, gpu_options);
    std::string batching = "one query per launch sequence";
    if (engine.ok() && options.gpu_batch) {
      const scheduler::BatchingOptions& b = options.gpu_batching;
      batching = absl::StrCat("batches of up to ", b.threshold, " postings, waiting at most ",
                              absl::FormatDuration(b.max_wait), ", ", b.runners, " at once");
      absl::StatusOr<std::unique_ptr<scheduler::BatchingEngine>> batched =
          scheduler::BatchingEngine::Create(*std::move(engine), b);
      if (batched.ok()) {
        set.gpu_batching = batched->get();
        engine = std::unique_ptr<index::Engine>(*std::move(batched));
      } else {
        engine = batched.status();
      }
    }
    if (engine.ok()) {
      set.gpu = *std::move(engine);
      // The engine opened gpu_layouts.bin if it is there (a bad one fails the engine).
      std::error_code error;
      const bool stored =
          std::filesystem::exists(index.directory() + "/" + gpu::kStoredLayoutsFile, error);
      set.summary = absl::StrCat(
          "CPU and GPU engines (", device->name, "; ", batching,
          options.gpu_batch && options.gpu_batch_compressed ? ", docIDs searched in SegLRC" : "",
          "; lists ", stored ? "copied from gpu_layouts.bin" : "transcoded at first use",
          "; GPU waits: ", AbslUnparseFlag(options.gpu_wait), ")");
      set.gpu_name = device->name;
      return set;
    }
    why = engine.status();
  } else {
    why = device.status();
  }
#else
  absl::Status why = absl::UnimplementedError(
      "this build has no CUDA support (no CUDA compiler was found when it "
      "was configured, or it was configured with -DTANDEM_ENABLE_GPU=OFF)");
#endif
  if (options.gpu == GpuMode::kRequired) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU engine required but unavailable: ", why.message()));
  }
  set.summary = absl::StrCat("CPU engine only; GPU engine unavailable: ", why.message());
  return set;
}

}  // namespace tandem::server
