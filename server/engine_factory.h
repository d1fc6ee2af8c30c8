// File: engine_factory.h
//
// Chooses and creates the engines a node runs, and the GPU matcher of its standing queries. The
// only file that knows whether the build has a GPU engine (the #ifdef lives in engine_factory.cc,
// as Faiss keeps FAISS_ENABLE_GPU out of its CPU code). No gRPC: the cost-model trainer creates
// its engines here too.
//
//   TANDEM_ASSIGN_OR_RETURN(EngineSet engines, CreateEngines(*index, {.gpu = GpuMode::kAuto}));
//   engines.cpu->Search(...);  if (engines.gpu) engines.gpu->Search(...);
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cost_model/cost_features.h"
#include "cpu/daat_engine.h"
#include "filter/filter.h"
#include "index/engine.h"
#include "index/index.h"
#include "match/matcher.h"
#include "scheduler/batching_engine.h"

namespace tandem::server {

enum class GpuMode {
  kOff,       // CPU only
  kAuto,      // GPU when the build has one and a device is present; else CPU only, said once
  kRequired,  // fail when no GPU engine can be created
};
// "auto", "off" or "required" (tandem-server's --gpu).
bool AbslParseFlag(absl::string_view text, GpuMode* mode, std::string* error);
std::string AbslUnparseFlag(GpuMode mode);

// How a thread waiting for the GPU holds its core (gpu::GpuHostWait; this header stays CUDA-free).
enum class GpuWait { kAuto, kSpin, kYield, kBlocking };
// "auto", "spin", "yield" or "blocking" (tandem-server's --tune-gpu-wait).
bool AbslParseFlag(absl::string_view text, GpuWait* wait, std::string* error);
std::string AbslUnparseFlag(GpuWait wait);

// Which GPUs serve queries (`--gpus`): listed device ordinals ("0,1"), every visible one ("all"),
// or, when empty, the first.
struct GpuDevices {
  bool all = false;
  std::vector<int> devices = {};
};
bool AbslParseFlag(absl::string_view text, GpuDevices* devices, std::string* error);
std::string AbslUnparseFlag(const GpuDevices& devices);

// The device ordinals `devices` names on this machine ("all": every visible device; none listed:
// device 0). How many GPU engines CreateEngines makes, so the caller can size its GPU workers.
std::vector<int> ResolveGpuDevices(const GpuDevices& devices);

// Where the GPU's evaluation of a filter that combines columns (about 0.3 ms at 25M documents
// plus 0.1 ns a word) beats the CPU's compressed-domain operations (15-30 ns a word):
// bench/results/filter.json.
inline constexpr uint64_t kDefaultGpuFilterMinWords = 1 << 14;

struct EngineOptions {
  cpu::DaatEngineOptions cpu = {};  // the OR algorithm, block-max AND
  GpuMode gpu = GpuMode::kAuto;
  // The GPUs, each with the whole index's device cache and batch buffer; with several, the GPU
  // engine spreads queries over them (scheduler::EngineSpread).
  GpuDevices gpu_devices = {};
  uint64_t gpu_cache_bytes = 0;  // each device's index cache; 0: 60% of its free memory
  // Each cache at most 60% of the device memory free now, whatever gpu_cache_bytes asks (a node
  // opening a second index beside the one it serves).
  bool gpu_cache_within_free = false;
  int gpu_contexts = 4;  // queries on each GPU's per-query path at once
  GpuWait gpu_wait = GpuWait::kAuto;
  // The batch path (Ao et al. 2011): GPU queries that arrive together run as one launch sequence,
  // formed by scheduler::BatchingEngine; each batch runner has a batch context on the device.
  bool gpu_batch = true;
  // The batch path searches the lists' docIDs compressed in SegLRC: about half the device memory
  // per list, at about three quarters of the AND throughput (gpu/search_form.h).
  bool gpu_batch_compressed = false;
  scheduler::BatchingOptions gpu_batching = {};
  // Filters that combine columns holding at least this many compressed words in all are
  // evaluated on the first GPU (gpu/filter_eval.h), others on the CPU; 0: every combining filter
  // on the GPU.
  uint64_t gpu_filter_min_words = kDefaultGpuFilterMinWords;
};

struct EngineSet {
  std::unique_ptr<index::Engine> cpu;  // always present
  std::unique_ptr<index::Engine> gpu;  // null when the GPU is off or unavailable
  // With GPU batches, each device's batch buffer (for the metrics); else empty.
  std::vector<const scheduler::BatchingEngine*> gpu_batching;
  // The fraction of a query's postings in the GPUs' device caches (the cost model's feature);
  // empty without a GPU engine.
  cost_model::ResidentFractionFn gpu_resident_fraction;
  int gpu_count = 0;  // the GPUs `gpu` runs on
  // One line on what was chosen and why ("GPU engine off: no CUDA device").
  std::string summary;
  // The GPU's name ("NVIDIA H100 80GB HBM3") when `gpu` is set, for benchmark and model metadata.
  std::string gpu_name;
  // How the node evaluates filters: with a GPU engine and an index with attributes, the GPU for
  // filters of at least gpu_filter_min_words words (the CPU when the device fails), else the CPU.
  // Null when the index stores no attributes.
  filter::FilterEvaluator filters;
  // Creates a GPU engine for another index on the first GPU, beside `gpu` (a live index's merged
  // segments, live::DeviceEngines): with the batch path as `gpu` has it, two query contexts, and a
  // device cache within the memory free then. Empty without a GPU engine.
  std::function<absl::StatusOr<std::unique_ptr<index::Engine>>(const index::Index&)> segment_engine;
  // The GPUs' device caches, for a node that loads a new index beside this one
  // (server/serving_index.h); every function is empty without a GPU engine.
  struct GpuCaches {
    // The terms of the lists resident on the devices, most recently used first, at most `max`
    // (the first device's: with several, each holds lists of the same queries).
    std::function<std::vector<std::string>(size_t max)> hottest_terms;
    // Loads those of `terms` the index has on every device while they fit and `budget` lasts,
    // never evicting; the lists loaded, added over the devices.
    std::function<absl::StatusOr<uint64_t>(const std::vector<std::string>& terms,
                                           absl::Duration budget)>
        warm;
    // The smallest device cache's capacity.
    std::function<uint64_t()> capacity_bytes;
    // Grows every device's cache to `bytes` (gpu::GpuEngine::GrowCache).
    std::function<absl::Status(uint64_t bytes)> grow;
  } gpu_caches;
};

// Whether this binary was built with the CUDA engine.
bool BuiltWithGpu();

// INVALID_ARGUMENT for unusable options; FAILED_PRECONDITION when the GPU is required and none can
// be created.
absl::StatusOr<EngineSet> CreateEngines(const index::Index& index, const EngineOptions& options);

// The CCM matcher of standing queries (Margara & Cugola; match/ccm_matcher.h) on the first GPU of
// `devices`. UNIMPLEMENTED in a build without CUDA; the device's error on a machine without it.
absl::StatusOr<std::unique_ptr<match::Matcher>> CreateGpuMatcher(const GpuDevices& devices);

}  // namespace tandem::server
