// File: gpu_engine.h
//
// The GPU query engine (Ding et al. 2009, sections 5-8), behind the same index::Engine interface as
// cpu::DaatEngine and answering exactly as it does. Compilable by plain g++: no CUDA types here.
//
//   OR      term at a time into one float accumulator per document (all postings decoded),
//           then a top-k (CUB radix sort or the multi-level max-heap).
//   AND     lists shortest first; for each longer list a Parallel Merge Find (section 7) of the
//           candidates against its blocks' last docIDs picks the only blocks that can intersect,
//           only those decode, the candidates are found in them (binary search of the located
//           block, or the recursive merge-find of section 7), and the frequencies of the final
//           survivors alone are fetched (section 8) and scored in query-term order.
//   AND+OR  AND; when it yields fewer than k hits, OR.
//
// One GpuEngine owns the device: a DeviceIndexCache of transcoded lists (LRU by bytes), document
// length norms, and a pool of query contexts (query_context.h), each a stream plus a scratch arena
// allocated at start, so the query path never calls cudaMalloc. Search is const and thread-safe: a
// call checks a context out (waiting while all are busy). A CUDA failure or an exhausted arena
// returns a Status (RESOURCE_EXHAUSTED for memory), never a partial answer; the scheduler may then
// use the CPU.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<GpuEngine> engine, GpuEngine::Create(index, {}));
//   TANDEM_ASSIGN_OR_RETURN(index::SearchResult r, engine->Search(query, {}));
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/device/device.h"
#include "gpu/layouts/search_range.h"
#include "index/engine.h"
#include "index/index.h"

namespace tandem::gpu {

// How the k best documents are picked from the scored candidates (section 8).
enum class TopKMethod {
  kRadixSort,       // CUB select + radix sort of (flipped score, docID) keys
  kMultiLevelHeap,  // the paper's 2-3 level max-heap over groups of 512
  // The heap for k <= kHeapTopKLimit, else the radix sort. Measured on an H100
  // (bench/results/gpu_decode.json, part "kernels"): over 25M candidates the heap takes 0.31 ms
  // for k = 10 and the sort 1.19 ms, but for k = 1,000 the heap's serial extraction costs 2.5 ms
  // to 1.2 ms.
  kAuto,
};
inline constexpr uint32_t kHeapTopKLimit = 100;

// Per-query choices that may change while the engine runs (GpuEngine::SetTuning).
struct GpuQueryTuning {
  TopKMethod top_k = TopKMethod::kAuto;
  // How the AND finds its candidates in a longer list's decoded blocks (section 7): -1, each
  // candidate binary-searches the one block its Parallel Merge Find located; 0..4, the recursive
  // merge-find against all decoded blocks with that many levels of splitters (gpu/query_ops.h).
  int intersect_levels = -1;
  // Record each stage's device time with CUDA events (stage_times()); an event per stage boundary.
  bool profile_stages = false;
  // How the batch path's AND bounds its searches (Ao et al. 2011, sections 3.2-3.4).
  SearchRange batch_range = SearchRange::kHash16;
};

// The stages of a query whose time stage_times() reports (the paper's Table 3). kCache is host
// time in the device cache (transcoding and copying missing lists); the rest is device time
// between events recorded on the query's stream.
enum class GpuStage { kCache, kDecode, kIntersect, kScore, kTopK };
inline constexpr int kNumGpuStages = 5;
const char* GpuStageName(GpuStage stage);  // "cache", "decode", "intersect", "score", "top_k"

struct GpuStageTimes {
  double ms[kNumGpuStages] = {};
  uint64_t queries = 0;  // profiled queries summed into ms
};

// How a host thread waits for its query's stream (cudaSetDeviceFlags; the setting is the device's,
// so it applies to every engine of the process on that device). kAuto is CUDA's default: spin while
// the process has no more CUDA contexts than logical processors, which is always here. Spinning
// answers a synchronization soonest but holds a core per waiting query; kYield and kBlockingSync
// give it to the CPU engine's workers and the RPC threads.
enum class GpuHostWait { kAuto, kSpin, kYield, kBlockingSync };

// The batch path (Ao et al. 2011): SearchBatch answers many queries with one launch sequence.
struct GpuBatchOptions {
  // Build every list's search form as the device cache loads it (about 4.4 more bytes of device
  // memory per posting); without it SearchBatch runs each query on its own.
  bool enabled = false;
  // Keep the search forms' docIDs in SegLRC and search them in place (Ao et al. 2011, section
  // 4.3): about 1.6 instead of 4.4 more bytes per posting, at some cost in speed.
  bool compressed_forms = false;
  int contexts = 2;                            // batches that may run at once
  uint64_t scratch_bytes = uint64_t{1} << 30;  // device scratch per batch context
  uint64_t host_bytes = uint64_t{64} << 20;    // pinned memory per batch context
};

struct GpuEngineOptions {
  int device = 0;
  // Device index cache capacity; 0 means 60% of the device memory free after the contexts.
  uint64_t cache_bytes = 0;
  // At most 60% of the device memory free after the contexts, whatever cache_bytes asks: an engine
  // created beside another on the same device (a node loading a new index) takes its share of what
  // is free and grows later (GrowCache).
  bool cache_within_free = false;
  // Load every list that fits into the cache at start.
  bool preload = false;
  // Copy lists from the GPU layouts stored beside the index (gpu_layouts.bin, written by
  // `tandem-index gpu-layouts`) when it has them, instead of transcoding them at first use. A file
  // that is damaged or written for another index fails Create.
  bool stored_layouts = true;
  // Queries that may run on the device at once (one stream and scratch arena each).
  int num_contexts = 4;
  // Scratch bytes per context; 0 sizes it from the index (enough for an OR over every document and
  // an AND of up to 16 terms whose shortest list spans the whole collection).
  uint64_t scratch_bytes = 0;
  GpuHostWait host_wait = GpuHostWait::kAuto;
  GpuQueryTuning tuning = {};
  GpuBatchOptions batch = {};
};

// The cache's counters (DeviceIndexCache).
struct GpuCacheStats {
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t bytes_resident = 0;
  uint64_t bytes_copied = 0;
  uint64_t evictions = 0;
  uint64_t lists_resident = 0;
  uint64_t capacity_bytes = 0;
  bool stored_layouts = false;  // lists are copied from gpu_layouts.bin, not transcoded
};

class GpuEngine : public index::Engine {
 public:
  // `index` must outlive the engine. UNAVAILABLE without a device, RESOURCE_EXHAUSTED when the
  // contexts or the cache do not fit in device memory.
  static absl::StatusOr<std::unique_ptr<GpuEngine>> Create(const index::Index& index,
                                                           const GpuEngineOptions& options);
  ~GpuEngine() override;

  absl::string_view name() const override { return "gpu"; }
  const index::Index& index() const override;
  using index::Engine::Search;
  using index::Engine::SearchBatch;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& query,
                                             const index::SearchContext& context) const override;

  // Answers `queries` together, result i for query i (contexts: one per query, or one for all).
  // With the batch path on, the queries that fit it (at most 16 terms, k at most 1,000) run as
  // batches of one launch sequence each, one group of batches per distinct BM25 parameters, average
  // length and filter bitmap (a live index's queries share each segment's), split where a batch
  // would outgrow a batch context; the others, and every query without the batch path, run one by
  // one as Search runs them. A query's context is checked before the batch starts. Answers equal
  // Search's: the same hits and bit-equal scores.
  std::vector<absl::StatusOr<index::SearchResult>> SearchBatch(
      const std::vector<const index::PreparedQuery*>& queries,
      const std::vector<index::SearchContext>& contexts) const override;
  bool batch_path() const;
  // With the batch path on, a query that fits it: the postings its first pass reads
  // (PreparedQuery::pass_postings), what it adds to a batch. nullopt for a query the engine
  // answers alone, and for one that runs no pass.
  std::optional<uint64_t> BatchWork(const index::PreparedQuery& query) const;

  // Fraction of the query's postings whose lists are in the device cache (the cost model's
  // feature), weighted by document frequency; 1 for a query without postings.
  double ResidentFraction(const index::PreparedQuery& query) const;

  // Applies to queries that start after the call. INVALID_ARGUMENT for levels outside -1..4.
  absl::Status SetTuning(const GpuQueryTuning& tuning);
  // Sums over the queries run with profile_stages on since the last reset.
  GpuStageTimes stage_times() const;
  void ResetStageTimes();

  GpuCacheStats cache_stats() const;
  const DeviceInfo& device() const;

  // A node that loads a new index warms the new engine's cache with the old one's hottest lists
  // (by term, since the lexicons differ) and, once the old engine is gone, grows the new cache to
  // the old one's capacity (server/serving_index.h).
  // The terms of the resident lists, most recently used first, at most `max_lists`.
  std::vector<std::string> HottestTerms(size_t max_lists) const;
  // Loads the lists of those of `terms` this index has, in order, until one does not fit or
  // `budget` has passed (a list that needs transcoding takes milliseconds); never evicts. Returns
  // how many lists were loaded.
  absl::StatusOr<uint64_t> Warm(const std::vector<std::string>& terms,
                                std::chrono::steady_clock::duration budget) const;
  // DeviceIndexCache::Grow.
  absl::Status GrowCache(uint64_t capacity_bytes) const;

  struct Impl;  // CUDA resources and the pipeline (gpu_engine.cc)

 private:
  explicit GpuEngine(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::gpu
