#include "server/engine_factory.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"
#include "base/status_macros.h"
#include "cpu/daat_engine.h"
#include "scheduler/engine_spread.h"
#if TANDEM_HAVE_GPU
#include <filesystem>

#include "gpu/bitmaps/filter_eval.h"
#include "gpu/device/device.h"
#include "gpu/engine/gpu_engine.h"
#include "gpu/layouts/stored_layouts.h"
#include "match/ccm_matcher.h"
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

bool AbslParseFlag(absl::string_view text, GpuDevices* devices, std::string* error) {
  *devices = {};
  if (text == "all") {
    devices->all = true;
    return true;
  }
  if (text.empty()) return true;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    int device = -1;
    if (!absl::SimpleAtoi(part, &device) || device < 0) {
      *error = absl::StrCat("must be all or device numbers such as 0,1; got '", part, "'");
      return false;
    }
    for (int d : devices->devices) {
      if (d == device) {
        *error = absl::StrCat("device ", device, " is listed twice");
        return false;
      }
    }
    devices->devices.push_back(device);
  }
  return true;
}

std::string AbslUnparseFlag(const GpuDevices& devices) {
  return devices.all ? "all" : absl::StrJoin(devices.devices, ",");
}

std::vector<int> ResolveGpuDevices(const GpuDevices& devices) {
  if (!devices.all) return devices.devices.empty() ? std::vector<int>{0} : devices.devices;
  std::vector<int> all;
#if TANDEM_HAVE_GPU
  for (int d = 0; d < gpu::DeviceCount(); ++d) all.push_back(d);
#endif
  if (all.empty()) all.push_back(0);  // CreateEngines then says why device 0 is unusable
  return all;
}

#if TANDEM_HAVE_GPU
namespace {

// A live segment's GPU engine: device cache bytes per posting of the segment (a transcoded list
// takes about 4 bytes a posting and its search form 4.4: gpu_engine.h), and the batch context's
// scratch (a batch too large for it is split: GpuEngine::SearchBatch).
constexpr uint64_t kSegmentCacheBytesPerPosting = 12;
constexpr uint64_t kSegmentBatchScratchBytes = uint64_t{256} << 20;

// The GPU for filters that combine columns (AND, OR, AND NOT: a field's IN or range is an OR of
// its columns) reading at least min_words compressed words, the CPU for the rest (one column, or
// NOT of one, is a copy or a pass over its words) and for any the device fails on (the errors of
// a bad filter are the compiler's, the same on both).
filter::FilterEvaluator GpuOrCpuFilters(const filter::AttributeIndex& attributes,
                                        std::unique_ptr<gpu::GpuFilterEvaluator> evaluator,
                                        uint64_t min_words) {
  std::shared_ptr<const gpu::GpuFilterEvaluator> gpu = std::move(evaluator);
  return [&attributes, gpu,
          min_words](const filter::FilterNode& filter) -> absl::StatusOr<filter::Bitmap> {
    TANDEM_ASSIGN_OR_RETURN(filter::FilterProgram program,
                            filter::CompileFilter(filter, attributes));
    const bool combines =
        std::any_of(program.ops.begin(), program.ops.end(), [](const filter::FilterOp& op) {
          return op.code == filter::FilterOp::Code::kAnd ||
                 op.code == filter::FilterOp::Code::kOr ||
                 op.code == filter::FilterOp::Code::kAndNot;
        });
    if (combines && filter::FilterProgramWords(program, attributes) >= min_words) {
      absl::StatusOr<filter::Bitmap> docs = gpu->Run(program);
      if (docs.ok()) return docs;
    }
    return filter::EvaluateFilter(filter, attributes);
  };
}

}  // namespace
#endif

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
  if (const filter::AttributeIndex* attributes = index.attributes(); attributes != nullptr) {
    set.filters = [attributes](const filter::FilterNode& filter) {
      return filter::EvaluateFilter(filter, *attributes);
    };
  }
  if (options.gpu == GpuMode::kOff) {
    set.summary = "CPU engine only (GPU turned off)";
    return set;
  }
#if TANDEM_HAVE_GPU
  absl::Status why;
  // One GPU engine per device, each behind its own batch buffer, spread over when several.
  std::vector<std::unique_ptr<index::Engine>> per_device;
  std::vector<const gpu::GpuEngine*> devices;  // each device's engine, inside its buffer
  std::vector<const scheduler::BatchingEngine*> buffers;
  std::vector<std::string> names;
  std::string batching = "one query per launch sequence";
  for (int d : ResolveGpuDevices(options.gpu_devices)) {
    absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice(d);
    if (!device.ok()) {
      why = device.status();
      break;
    }
    gpu::GpuEngineOptions gpu_options{.device = device->device,
                                      .cache_bytes = options.gpu_cache_bytes,
                                      .cache_within_free = options.gpu_cache_within_free,
                                      .num_contexts = options.gpu_contexts,
                                      .host_wait = ToHostWait(options.gpu_wait)};
    gpu_options.batch = {.enabled = options.gpu_batch,
                         .compressed_forms = options.gpu_batch_compressed,
                         .contexts = options.gpu_batching.runners};
    absl::StatusOr<std::unique_ptr<gpu::GpuEngine>> device_engine =
        gpu::GpuEngine::Create(index, gpu_options);
    if (!device_engine.ok()) {
      why = absl::Status(device_engine.status().code(),
                         absl::StrCat("device ", d, ": ", device_engine.status().message()));
      break;
    }
    devices.push_back(device_engine->get());
    absl::StatusOr<std::unique_ptr<index::Engine>> engine =
        std::unique_ptr<index::Engine>(*std::move(device_engine));
    if (engine.ok() && options.gpu_batch) {
      const scheduler::BatchingOptions& b = options.gpu_batching;
      batching = absl::StrCat("batches of up to ", b.threshold, " postings, waiting at most ",
                              absl::FormatDuration(b.max_wait), ", ", b.runners, " at once");
      const gpu::GpuEngine* g = devices.back();
      absl::StatusOr<std::unique_ptr<scheduler::BatchingEngine>> batched =
          scheduler::BatchingEngine::Create(
              *std::move(engine),
              [g](const index::PreparedQuery& query) { return g->BatchWork(query); }, b);
      if (batched.ok()) {
        buffers.push_back(batched->get());
        engine = std::unique_ptr<index::Engine>(*std::move(batched));
      } else {
        engine = batched.status();
      }
    }
    if (!engine.ok()) {
      why = absl::Status(engine.status().code(),
                         absl::StrCat("device ", d, ": ", engine.status().message()));
      break;
    }
    per_device.push_back(*std::move(engine));
    names.push_back(absl::StrCat(d, " ", device->name));
    if (set.gpu_name.empty()) set.gpu_name = device->name;
  }
  if (why.ok() && !per_device.empty()) {
    set.gpu_count = static_cast<int>(per_device.size());
    if (per_device.size() == 1) {
      set.gpu = std::move(per_device[0]);
    } else {
      std::vector<std::unique_ptr<const index::Engine>> engines;
      for (auto& e : per_device) engines.push_back(std::move(e));
      TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<scheduler::EngineSpread> spread,
                              scheduler::EngineSpread::Create(std::move(engines)));
      set.gpu = std::move(spread);
    }
    set.gpu_batching = std::move(buffers);
    gpu::GpuEngineOptions segment_options{.device = devices.front()->device().device,
                                          .cache_within_free = true,
                                          .num_contexts = 2,
                                          .host_wait = ToHostWait(options.gpu_wait)};
    segment_options.batch = {.enabled = options.gpu_batch,
                             .compressed_forms = options.gpu_batch_compressed,
                             .contexts = 1,
                             .scratch_bytes = kSegmentBatchScratchBytes};
    set.segment_engine =
        [segment_options](
            const index::Index& segment) -> absl::StatusOr<std::unique_ptr<index::Engine>> {
      gpu::GpuEngineOptions o = segment_options;
      // Room for every list of the segment, transcoded and with its search form.
      o.cache_bytes =
          (uint64_t{64} << 20) + kSegmentCacheBytesPerPosting * segment.stats().num_postings;
      TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<gpu::GpuEngine> engine,
                              gpu::GpuEngine::Create(segment, o));
      return std::unique_ptr<index::Engine>(std::move(engine));
    };
    // The mean over the devices: the device a query will run on is chosen when it runs.
    set.gpu_resident_fraction = [devices](const index::PreparedQuery& query) {
      double sum = 0;
      for (const gpu::GpuEngine* d : devices) sum += d->ResidentFraction(query);
      return sum / static_cast<double>(devices.size());
    };
    set.gpu_caches = {
        .hottest_terms = [g = devices.front()](size_t max) { return g->HottestTerms(max); },
        .warm = [devices](const std::vector<std::string>& terms,
                          absl::Duration budget) -> absl::StatusOr<uint64_t> {
          uint64_t loaded = 0;
          for (const gpu::GpuEngine* d : devices) {
            // The devices warm one after another: each gets its share of the budget.
            TANDEM_ASSIGN_OR_RETURN(
                uint64_t n, d->Warm(terms, absl::ToChronoNanoseconds(
                                               budget / static_cast<double>(devices.size()))));
            loaded += n;
          }
          return loaded;
        },
        .capacity_bytes =
            [devices] {
              uint64_t smallest = UINT64_MAX;
              for (const gpu::GpuEngine* d : devices) {
                smallest = std::min(smallest, d->cache_stats().capacity_bytes);
              }
              return smallest;
            },
        .grow =
            [devices](uint64_t bytes) {
              for (const gpu::GpuEngine* d : devices) TANDEM_RETURN_IF_ERROR(d->GrowCache(bytes));
              return absl::OkStatus();
            }};
    // The engine opened gpu_layouts.bin if it is there (a bad one fails the engine).
    std::error_code error;
    const bool stored =
        std::filesystem::exists(index.directory() + "/" + gpu::kStoredLayoutsFile, error);
    std::string filters;
    if (const filter::AttributeIndex* attributes = index.attributes(); attributes != nullptr) {
      absl::StatusOr<std::unique_ptr<gpu::GpuFilterEvaluator>> evaluator =
          gpu::GpuFilterEvaluator::Create(*attributes);
      if (evaluator.ok()) {
        set.filters =
            GpuOrCpuFilters(*attributes, std::move(*evaluator), options.gpu_filter_min_words);
        filters = absl::StrCat("; filters of ", options.gpu_filter_min_words,
                               "+ words evaluated on the GPU");
      } else {
        filters = absl::StrCat("; filters on the CPU: ", evaluator.status().message());
      }
    }
    set.summary = absl::StrCat(
        "CPU and GPU engines (", set.gpu_count == 1 ? "" : absl::StrCat(set.gpu_count, " GPUs: "),
        absl::StrJoin(names, ", "), "; ", batching,
        options.gpu_batch && options.gpu_batch_compressed ? ", docIDs searched in SegLRC" : "",
        "; lists ", stored ? "copied from gpu_layouts.bin" : "transcoded at first use",
        "; GPU waits: ", AbslUnparseFlag(options.gpu_wait), filters, ")");
    return set;
  }
  set.gpu_name.clear();
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

absl::StatusOr<std::unique_ptr<match::Matcher>> CreateGpuMatcher(const GpuDevices& devices) {
#if TANDEM_HAVE_GPU
  const int device = ResolveGpuDevices(devices).front();
  TANDEM_RETURN_IF_ERROR(gpu::ProbeDevice(device).status());
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<match::CcmMatcher> matcher,
                          match::CcmMatcher::Create(match::CcmOptions{.device = device}));
  return std::unique_ptr<match::Matcher>(std::move(matcher));
#else
  (void)devices;
  return absl::UnimplementedError(
      "this build has no CUDA support (no CUDA compiler was found when it was configured, or it "
      "was configured with -DTANDEM_ENABLE_GPU=OFF)");
#endif
}

}  // namespace tandem::server
