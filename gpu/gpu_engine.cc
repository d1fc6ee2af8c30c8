// The GPU engine's host orchestration (Ding et al. 2009, sections 5-8): resolves the query on the
// host exactly as cpu::DaatEngine does, then runs the device stages of gpu/query_ops.h and
// gpu/decode.h on a checked-out query context. Compiled by g++ (C++20): it touches index::Index;
// everything that launches kernels sits in the .cu files behind plain-typed headers.
#include "gpu/gpu_engine.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpu/cuda_status.h"
#include "gpu/decode.h"
#include "gpu/device_index_cache.h"
#include "gpu/query_ops.h"
#include "gpu/scratch_arena.h"
#include "gpu/stage_timer.h"
#include "gpu/stream_wait.h"
#include "index/bm25.h"
#include "index/query.h"
#include "base/status_macros.h"

namespace tandem::gpu {
namespace {

using index::Query;
using index::QueryMode;
using index::QueryStats;
using index::SearchContext;
using index::SearchResult;

// AND terms the default scratch size provides for when the shortest list spans the collection.
constexpr uint64_t kDefaultAndTerms = 16;

// One query's device resources: a stream, a scratch arena and pinned memory for the top-k keys.
struct QueryContext {
  cudaStream_t stream = nullptr;
  void* arena_memory = nullptr;
  ScratchArena arena;
  uint64_t* host_keys = nullptr;  // pinned, TopKHostWords(index::kMaxK); also the count reads
  StageTimer timer;
  GpuQueryTuning tuning;  // the engine's tuning when the query checked the context out
  StreamWait wait;        // how the query's thread waits for the stream

  ~QueryContext() {
    if (stream != nullptr) {
      cudaStreamSynchronize(stream);
      cudaStreamDestroy(stream);
    }
    if (arena_memory != nullptr) cudaFree(arena_memory);
    if (host_keys != nullptr) cudaFreeHost(host_keys);
  }
};

// A resolved query term: its list on the device and weight(t) * idf(t).
struct DeviceTerm {
  std::shared_ptr<const DeviceList> list;
  float weighted_idf = 0.0f;
};

absl::Status DecodeWholeList(const DeviceList& list, uint32_t* out, cudaStream_t stream) {
  return list.codec == GpuCodec::kPFor ? DecodePForList(list.pfor, DecodeOutput::kDocids, out, stream)
                                       : DecodeRiceList(list.rice, DecodeOutput::kDocids, out, stream);
}

absl::Status DecodeBlocksInPlace(const DeviceList& list, const uint32_t* entries,
                                 uint32_t max_entries, const uint32_t* device_count, uint32_t* out,
                                 cudaStream_t stream) {
  return list.codec == GpuCodec::kPFor
             ? DecodePForBlocksInPlace(list.pfor, entries, max_entries, device_count,
                                       DecodeOutput::kDocids, out, stream)
             : DecodeRiceBlocksInPlace(list.rice, entries, max_entries, device_count,
                                       DecodeOutput::kDocids, out, stream);
}

absl::Status DecodeSelectedBlocks(const DeviceList& list, const uint32_t* blocks, uint32_t count,
                                  uint32_t* out, cudaStream_t stream) {
  return list.codec == GpuCodec::kPFor
             ? DecodePForBlocks(list.pfor, blocks, count, DecodeOutput::kDocids, out, stream)
             : DecodeRiceBlocks(list.rice, blocks, count, DecodeOutput::kDocids, out, stream);
}

// The top-k stage the options pick; both give identical hits.
bool UseHeap(TopKMethod method, uint32_t k) {
  return method == TopKMethod::kMultiLevelHeap ||
         (method == TopKMethod::kAuto && k <= kHeapTopKLimit);
}
absl::StatusOr<std::vector<DeviceHit>> SelectTopK(TopKMethod method, const float* scores,
                                                  const uint32_t* docs, uint32_t n, uint32_t k,
                                                  QueryContext& qc, uint64_t* num_scored) {
  return UseHeap(method, k)
             ? TopKHeap(scores, docs, n, k, qc.host_keys, num_scored, qc.arena, qc.stream, qc.wait)
             : TopKRadix(scores, docs, n, k, qc.host_keys, num_scored, qc.arena, qc.stream,
                         qc.wait);
}
absl::StatusOr<std::vector<DeviceHit>> SelectTopKOfKeys(TopKMethod method, uint64_t* keys,
                                                        uint32_t n, uint32_t k, QueryContext& qc,
                                                        uint64_t* num_scored) {
  return UseHeap(method, k)
             ? TopKHeapKeys(keys, n, k, qc.host_keys, num_scored, qc.arena, qc.stream, qc.wait)
             : TopKRadixKeys(keys, n, k, qc.host_keys, num_scored, qc.arena, qc.stream, qc.wait);
}

absl::Status CheckTuning(const GpuQueryTuning& tuning) {
  if (tuning.intersect_levels < kLocatedBlockSearch ||
      tuning.intersect_levels > kMaxMergeFindLevels) {
    return absl::InvalidArgumentError(absl::StrCat("intersect_levels must be -1..",
                                                   kMaxMergeFindLevels, ", got ",
                                                   tuning.intersect_levels));
  }
  return absl::OkStatus();
}

std::vector<index::Hit> ToHits(const std::vector<DeviceHit>& device_hits) {
  std::vector<index::Hit> hits;
  hits.reserve(device_hits.size());
  for (const DeviceHit& h : device_hits) hits.push_back({h.docid, h.score});
  return hits;
}

}  // namespace

struct GpuEngine::Impl {
  const index::Index& index;
  GpuEngineOptions options;
  DeviceInfo info;
  DeviceBuffer<uint32_t> doc_lengths;   // num_docs
  DeviceBuffer<float> default_norms;    // the index's table for its own BM25 parameters
  DeviceBuffer<uint32_t> iota;          // 0, 1, ..., num_docs - 1: posting positions
  std::unique_ptr<DeviceIndexCache> cache;

  std::mutex mu;
  std::condition_variable available;
  std::vector<std::unique_ptr<QueryContext>> contexts;
  std::vector<QueryContext*> idle;
  GpuQueryTuning tuning;  // guarded by mu

  mutable std::mutex stage_mu;
  GpuStageTimes stage_totals;  // guarded by stage_mu

  explicit Impl(const index::Index& i) : index(i) {}

  QueryContext* Acquire() {
    std::unique_lock<std::mutex> lock(mu);
    available.wait(lock, [this] { return !idle.empty(); });
    QueryContext* c = idle.back();
    idle.pop_back();
    c->tuning = tuning;
    return c;
  }
  void Release(QueryContext* c) {
    {
      std::lock_guard<std::mutex> lock(mu);
      idle.push_back(c);
    }
    available.notify_one();
  }

  absl::StatusOr<std::vector<index::Hit>> RunOr(const std::vector<DeviceTerm>& terms,
                                                const float* norms, uint32_t k,
                                                const SearchContext& ctx, QueryContext& qc,
                                                QueryStats& stats) const;
  absl::StatusOr<std::vector<index::Hit>> RunAnd(const std::vector<DeviceTerm>& terms,
                                                 const float* norms, uint32_t k,
                                                 const SearchContext& ctx, QueryContext& qc,
                                                 QueryStats& stats) const;
};

// Exhaustive OR, term at a time in query-term order, so every accumulator adds the same floats in
// the same order as the CPU engine's document-at-a-time sum.
absl::StatusOr<std::vector<index::Hit>> GpuEngine::Impl::RunOr(
    const std::vector<DeviceTerm>& terms, const float* norms, uint32_t k,
    const SearchContext& ctx, QueryContext& qc, QueryStats& stats) const {
  const uint32_t num_docs = index.num_docs();
  uint32_t longest = 0;
  for (const DeviceTerm& t : terms) longest = std::max(longest, t.list->num_postings);
  const size_t mark = qc.arena.mark();
  TANDEM_ASSIGN_OR_RETURN(float* acc, qc.arena.Take<float>(num_docs));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * docids, qc.arena.Take<uint32_t>(longest));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * tf, qc.arena.Take<uint32_t>(longest));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(acc, 0, sizeof(float) * num_docs, qc.stream));
  qc.timer.Mark(GpuStage::kScore);
  for (const DeviceTerm& t : terms) {
    TANDEM_RETURN_IF_ERROR(ctx.Check());
    const DeviceList& list = *t.list;
    TANDEM_RETURN_IF_ERROR(DecodeWholeList(list, docids, qc.stream));
    qc.timer.Mark(GpuStage::kDecode);
    TANDEM_RETURN_IF_ERROR(FetchFreqs(list.freqs, iota.data(), list.num_postings, tf, qc.stream));
    TANDEM_RETURN_IF_ERROR(
        AccumulateTerm(docids, tf, list.num_postings, t.weighted_idf, norms, acc, qc.stream));
    qc.timer.Mark(GpuStage::kScore);
    stats.postings_decoded += list.num_postings;
    stats.blocks_decoded += list.num_blocks;
  }
  uint64_t scored = 0;
  TANDEM_ASSIGN_OR_RETURN(std::vector<DeviceHit> hits,
                          SelectTopK(qc.tuning.top_k, acc, nullptr, num_docs, k, qc, &scored));
  qc.timer.Mark(GpuStage::kTopK);
  stats.documents_scored += scored;
  qc.arena.Rollback(mark);
  return ToHits(hits);
}

// Ranked AND (sections 7 and 8). Candidates start as the shortest list; each longer list keeps the
// candidates it holds, decoding only the blocks its Parallel Merge Find selects. Posting positions
// ride along with the survivors, so frequencies are fetched for the final survivors only, and
// scores are summed in query-term order as on the CPU.
//
// With the located-block search (the default) the candidate count stays on the device between
// lists: each list is six launches (locate, decode in place, search, scan, compact) sized for an
// upper bound of the count, and the host reads the survivors' count once, before scoring. The
// merge-find search needs the exact count on the host for its launch shapes and synchronizes per
// list. A query's launches are what bounds the GPU's AND throughput (the CUDA driver serializes
// launches from all threads), so they are kept few: 13 launches and copies and 2 synchronizations
// for two terms, 19 and 2 for three (with compacted block selections and a count read back per
// list: 26 and 3, 41 and 4).
absl::StatusOr<std::vector<index::Hit>> GpuEngine::Impl::RunAnd(
    const std::vector<DeviceTerm>& terms, const float* norms, uint32_t k,
    const SearchContext& ctx, QueryContext& qc, QueryStats& stats) const {
  const size_t num_terms = terms.size();
  std::vector<size_t> order(num_terms);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return terms[a].list->num_postings < terms[b].list->num_postings;
  });
  std::vector<uint32_t> row_of(num_terms);  // term (query order) → row of the positions matrix

  const DeviceList& lead = *terms[order[0]].list;
  const uint32_t stride = lead.num_postings;
  const size_t mark = qc.arena.mark();
  TANDEM_ASSIGN_OR_RETURN(uint32_t * cand, qc.arena.Take<uint32_t>(stride));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * cand_next, qc.arena.Take<uint32_t>(stride));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * pos, qc.arena.Take<uint32_t>(uint64_t{stride} * num_terms));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * pos_next,
                          qc.arena.Take<uint32_t>(uint64_t{stride} * num_terms));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * device_n, qc.arena.Take<uint32_t>(1));
  uint32_t* const pinned_count = reinterpret_cast<uint32_t*>(qc.host_keys);
  TANDEM_RETURN_IF_ERROR(DecodeWholeList(lead, cand, qc.stream));
  qc.timer.Mark(GpuStage::kDecode);
  stats.postings_decoded += lead.num_postings;
  stats.blocks_decoded += lead.num_blocks;
  row_of[order[0]] = 0;
  uint32_t n = stride;        // the candidate count; an upper bound while n_on_device
  bool n_on_device = false;   // *device_n holds the exact count
  bool row0_implicit = true;  // the lead's positions are the candidates' indices, not yet in pos

  const bool located = qc.tuning.intersect_levels == kLocatedBlockSearch;
  for (size_t j = 1; j < num_terms && n > 0; ++j) {
    TANDEM_RETURN_IF_ERROR(ctx.Check());
    const DeviceList& list = *terms[order[j]].list;
    row_of[order[j]] = static_cast<uint32_t>(j);
    const size_t step_mark = qc.arena.mark();
    const uint32_t rows = static_cast<uint32_t>(j + 1);
    // Upper bound: the decode covers at most min(candidates, blocks) blocks.
    const uint32_t most_blocks = std::min(n, list.num_blocks);
    if (located) {
      const uint32_t* count_in = n_on_device ? device_n : nullptr;
      TANDEM_ASSIGN_OR_RETURN(uint32_t * cand_block, qc.arena.Take<uint32_t>(n));
      TANDEM_ASSIGN_OR_RETURN(uint32_t * entries, qc.arena.Take<uint32_t>(n));
      TANDEM_ASSIGN_OR_RETURN(
          uint32_t * decoded, qc.arena.Take<uint32_t>(uint64_t{list.num_blocks} * list.block_size));
      TANDEM_RETURN_IF_ERROR(LocateCandidateBlocks(cand, n, count_in, list.bases, list.num_blocks,
                                                   cand_block, entries, qc.stream));
      qc.timer.Mark(GpuStage::kIntersect);
      TANDEM_RETURN_IF_ERROR(DecodeBlocksInPlace(list, entries, n, count_in, decoded, qc.stream));
      qc.timer.Mark(GpuStage::kDecode);
      TANDEM_RETURN_IF_ERROR(SearchInPlaceAndCompact(
          cand, n, count_in, cand_block, decoded, list.block_size, list.num_blocks,
          list.num_postings, pos, pos_next, rows, stride, row0_implicit, cand_next, device_n,
          qc.arena, qc.stream));
      qc.timer.Mark(GpuStage::kIntersect);
      n = std::min(n, list.num_postings);
      n_on_device = true;
    } else {
      if (n_on_device) {
        TANDEM_ASSIGN_OR_RETURN(n, ReadDeviceCount(device_n, pinned_count, qc.stream, qc.wait));
        n_on_device = false;
        if (n == 0) break;
      }
      if (row0_implicit) {
        TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(pos, iota.data(), sizeof(uint32_t) * stride,
                                                    cudaMemcpyDeviceToDevice, qc.stream));
      }
      TANDEM_ASSIGN_OR_RETURN(
          BlockSelection selection,
          SelectBlocks(cand, n, list.bases, list.num_blocks, qc.arena, qc.stream));
      qc.timer.Mark(GpuStage::kIntersect);
      TANDEM_ASSIGN_OR_RETURN(
          uint32_t * decoded,
          qc.arena.Take<uint32_t>(uint64_t{selection.max_selected} * list.block_size));
      TANDEM_RETURN_IF_ERROR(DecodeSelectedBlocks(list, selection.selected,
                                                  selection.max_selected, decoded, qc.stream));
      qc.timer.Mark(GpuStage::kDecode);
      TANDEM_ASSIGN_OR_RETURN(
          n, IntersectAndCompact(cand, n, selection, decoded, list.block_size, list.num_blocks,
                                 list.num_postings, qc.tuning.intersect_levels, pos, pos_next,
                                 rows, stride, cand_next, qc.arena, qc.stream, qc.wait));
      qc.timer.Mark(GpuStage::kIntersect);
    }
    row0_implicit = false;
    stats.blocks_decoded += most_blocks;
    stats.postings_decoded += uint64_t{most_blocks} * list.block_size;
    std::swap(cand, cand_next);
    std::swap(pos, pos_next);
    qc.arena.Rollback(step_mark);
  }
  if (n_on_device) {
    TANDEM_ASSIGN_OR_RETURN(n, ReadDeviceCount(device_n, pinned_count, qc.stream, qc.wait));
  }
  std::vector<index::Hit> hits;
  if (n > 0) {
    std::vector<AndScoreTerm> score_terms(num_terms);
    for (size_t q = 0; q < num_terms; ++q) {
      score_terms[q].freqs = terms[q].list->freqs;
      score_terms[q].positions = row0_implicit ? nullptr : pos + uint64_t{row_of[q]} * stride;
      score_terms[q].weighted_idf = terms[q].weighted_idf;
    }
    TANDEM_ASSIGN_OR_RETURN(uint64_t * keys, qc.arena.Take<uint64_t>(n));
    TANDEM_RETURN_IF_ERROR(ScoreIntoKeys(cand, n, score_terms, norms, keys, qc.arena, qc.stream));
    qc.timer.Mark(GpuStage::kScore);
    uint64_t scored = 0;
    TANDEM_ASSIGN_OR_RETURN(std::vector<DeviceHit> device_hits,
                            SelectTopKOfKeys(qc.tuning.top_k, keys, n, k, qc, &scored));
    qc.timer.Mark(GpuStage::kTopK);
    stats.documents_scored += n;
    hits = ToHits(device_hits);
  }
  qc.arena.Rollback(mark);
  return hits;
}

GpuEngine::GpuEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuEngine::~GpuEngine() = default;

absl::StatusOr<std::unique_ptr<GpuEngine>> GpuEngine::Create(const index::Index& index,
                                                             const GpuEngineOptions& options) {
  if (options.num_contexts < 1) return absl::InvalidArgumentError("num_contexts must be >= 1");
  if (options.spin_before_block < std::chrono::microseconds::zero() ||
      options.spin_before_block > std::chrono::seconds(1)) {
    return absl::InvalidArgumentError(absl::StrCat("spin_before_block must be 0 to 1 s, got ",
                                                   options.spin_before_block.count(), " us"));
  }
  TANDEM_RETURN_IF_ERROR(CheckTuning(options.tuning));
  auto impl = std::make_unique<Impl>(index);
  impl->options = options;
  impl->tuning = options.tuning;
  int count = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetDeviceCount(&count));
  if (options.device < 0 || options.device >= count) {
    return absl::UnavailableError(absl::StrCat("no CUDA device ", options.device));
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  if (options.host_wait != GpuHostWait::kAuto) {
    // Since CUDA 12 the flags of an initialized primary context are overwritten, not refused.
    unsigned flags = cudaDeviceScheduleSpin;
    if (options.host_wait == GpuHostWait::kYield) flags = cudaDeviceScheduleYield;
    if (options.host_wait == GpuHostWait::kBlockingSync ||
        options.host_wait == GpuHostWait::kSpinThenBlock) {
      flags = cudaDeviceScheduleBlockingSync;  // the spin is ours (SynchronizeStream)
    }
    TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(flags));
  }
  cudaDeviceProp prop;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options.device));
  impl->info.device = options.device;
  impl->info.name = prop.name;
  impl->info.compute_major = prop.major;
  impl->info.compute_minor = prop.minor;

  const uint32_t num_docs = index.num_docs();
  const uint64_t scratch = options.scratch_bytes != 0
                               ? options.scratch_bytes
                               : (64 + 8 * kDefaultAndTerms) * uint64_t{num_docs} + (64u << 20);
  for (int c = 0; c < options.num_contexts; ++c) {
    auto qc = std::make_unique<QueryContext>();
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&qc->stream, cudaStreamNonBlocking));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMalloc(&qc->arena_memory, scratch));
    qc->arena = ScratchArena(qc->arena_memory, scratch);
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMallocHost(reinterpret_cast<void**>(&qc->host_keys),
                       sizeof(uint64_t) * TopKHostWords(index::kMaxK)));
    TANDEM_RETURN_IF_ERROR(qc->timer.Init());
    if (options.host_wait == GpuHostWait::kSpinThenBlock) qc->wait.spin = options.spin_before_block;
    impl->idle.push_back(qc.get());
    impl->contexts.push_back(std::move(qc));
  }

  // Document lengths and the default norms, for BM25 on the device.
  cudaStream_t setup = impl->contexts[0]->stream;
  TANDEM_ASSIGN_OR_RETURN(impl->doc_lengths, DeviceBuffer<uint32_t>::Allocate(num_docs));
  TANDEM_ASSIGN_OR_RETURN(impl->default_norms, DeviceBuffer<float>::Allocate(num_docs));
  TANDEM_ASSIGN_OR_RETURN(impl->iota, DeviceBuffer<uint32_t>::Allocate(std::max(num_docs, 1u)));
  if (num_docs > 0) {
    TANDEM_RETURN_IF_ERROR(impl->doc_lengths.CopyFromHost(index.doc_lengths(), num_docs, setup));
    TANDEM_RETURN_IF_ERROR(
        impl->default_norms.CopyFromHost(index.default_doc_norms(), num_docs, setup));
  }
  TANDEM_RETURN_IF_ERROR(Iota(impl->iota.data(), std::max(num_docs, 1u), setup));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(setup));

  size_t free_bytes = 0, total_bytes = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes));
  impl->info.free_bytes = free_bytes;
  impl->info.total_bytes = total_bytes;
  DeviceIndexCacheOptions cache_options;
  cache_options.device = options.device;
  cache_options.capacity_bytes =
      options.cache_bytes != 0 ? options.cache_bytes : free_bytes / 10 * 6;
  TANDEM_ASSIGN_OR_RETURN(impl->cache, DeviceIndexCache::Create(index, cache_options));
  if (options.preload) TANDEM_RETURN_IF_ERROR(impl->cache->Preload().status());
  return std::unique_ptr<GpuEngine>(new GpuEngine(std::move(impl)));
}

absl::StatusOr<SearchResult> GpuEngine::Search(const Query& query,
                                               const SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(index::ValidateQuery(query));
  TANDEM_RETURN_IF_ERROR(context.Check());
  const index::Index& index = impl_->index;
  SearchResult result;
  result.stats.executed_mode = query.mode == QueryMode::kAnd ? QueryMode::kAnd : QueryMode::kOr;

  // Resolve terms as the CPU engine does: repeated terms merged, an absent term empties an AND
  // and is ignored by an OR.
  struct Resolved {
    index::TermInfo info;
    float weighted_idf;
  };
  std::vector<Resolved> present;
  bool any_absent = false;
  for (const index::QueryTerm& t : index::MergeRepeatedTerms(query.terms)) {
    std::optional<index::TermInfo> info = index.Lookup(t.term);
    if (!info) {
      any_absent = true;
      continue;
    }
    present.push_back({*info, t.weight * index::Bm25Idf(index.num_docs(), info->df)});
  }
  if (present.empty()) return result;
  const bool run_and = query.mode != QueryMode::kOr && !any_absent;

  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(impl_->options.device));  // per calling thread
  // Declared before the context guard: the lists outlive the stream synchronization below, so a
  // list evicted meanwhile is not freed under a running kernel.
  std::vector<DeviceTerm> terms;
  QueryContext* qc = impl_->Acquire();
  struct Guard {
    Impl* impl;
    QueryContext* qc;
    ~Guard() {
      cudaStreamSynchronize(qc->stream);  // an early error return may leave work in flight
      qc->arena.Rollback(0);
      impl->Release(qc);
    }
  } guard{impl_.get(), qc};

  const auto cache_start = std::chrono::steady_clock::now();
  for (const Resolved& r : present) {
    TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const DeviceList> list, impl_->cache->Get(r.info));
    terms.push_back({std::move(list), r.weighted_idf});
  }
  // Profiling starts after the cache: its host time is its stage, and the first device interval
  // must not include it.
  qc->timer.Begin(qc->stream, qc->tuning.profile_stages);
  qc->timer.AddHostMs(GpuStage::kCache, std::chrono::duration<double, std::milli>(
                                             std::chrono::steady_clock::now() - cache_start)
                                             .count());

  // Norms: the index's table when the query uses its parameters (as the CPU engine), else
  // computed on the device with the same float operations as index::Bm25DocNorm.
  const float* norms = impl_->default_norms.data();
  const index::Bm25Params& defaults = index.manifest().bm25;
  if (query.bm25.k1 != defaults.k1 || query.bm25.b != defaults.b) {
    TANDEM_ASSIGN_OR_RETURN(float* computed, qc->arena.Take<float>(index.num_docs()));
    TANDEM_RETURN_IF_ERROR(ComputeDocNorms(impl_->doc_lengths.data(), index.num_docs(),
                                           query.bm25.k1, query.bm25.b, index.avg_doc_length(),
                                           computed, qc->stream));
    norms = computed;
    qc->timer.Mark(GpuStage::kScore);
  }

  if (run_and) {
    TANDEM_ASSIGN_OR_RETURN(result.hits,
                            impl_->RunAnd(terms, norms, query.k, context, *qc, result.stats));
    result.stats.executed_mode = QueryMode::kAnd;
  }
  if (query.mode == QueryMode::kOr ||
      (query.mode == QueryMode::kAndOr && result.hits.size() < query.k)) {
    TANDEM_ASSIGN_OR_RETURN(result.hits,
                            impl_->RunOr(terms, norms, query.k, context, *qc, result.stats));
    result.stats.executed_mode = QueryMode::kOr;
  }
  if (qc->tuning.profile_stages) {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(qc->stream));
    std::lock_guard<std::mutex> lock(impl_->stage_mu);
    TANDEM_RETURN_IF_ERROR(qc->timer.Collect(impl_->stage_totals));
  }
  return result;
}

double GpuEngine::ResidentFraction(const Query& query) const {
  const index::Index& index = impl_->index;
  uint64_t total = 0, resident = 0;
  for (const index::QueryTerm& t : index::MergeRepeatedTerms(query.terms)) {
    std::optional<index::TermInfo> info = index.Lookup(t.term);
    if (!info) continue;
    total += info->df;
    if (impl_->cache->Resident(info->ordinal)) resident += info->df;
  }
  return total == 0 ? 1.0 : static_cast<double>(resident) / static_cast<double>(total);
}

absl::Status GpuEngine::SetTuning(const GpuQueryTuning& tuning) {
  TANDEM_RETURN_IF_ERROR(CheckTuning(tuning));
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->tuning = tuning;
  return absl::OkStatus();
}

GpuStageTimes GpuEngine::stage_times() const {
  std::lock_guard<std::mutex> lock(impl_->stage_mu);
  return impl_->stage_totals;
}

void GpuEngine::ResetStageTimes() {
  std::lock_guard<std::mutex> lock(impl_->stage_mu);
  impl_->stage_totals = {};
}

GpuCacheStats GpuEngine::cache_stats() const {
  const CacheCounters c = impl_->cache->counters();
  return {c.hits,      c.misses,         c.bytes_resident,
          c.bytes_copied, c.evictions, c.lists_resident,
          impl_->cache->capacity_bytes()};
}

const DeviceInfo& GpuEngine::device() const { return impl_->info; }

absl::StatusOr<std::unique_ptr<index::Engine>> CreateGpuEngine(const index::Index& index,
                                                               const GpuEngineOptions& options) {
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<GpuEngine> engine, GpuEngine::Create(index, options));
  return std::unique_ptr<index::Engine>(std::move(engine));
}

}  // namespace tandem::gpu
