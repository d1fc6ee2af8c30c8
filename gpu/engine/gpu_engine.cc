// The GPU engine's host orchestration (Ding et al. 2009, sections 5-8): resolves the query as every
// engine does (index/resolved_query.h), brings its lists into the device cache, and runs the OR and
// AND pipelines (query_pipeline.h) on a query context from the pool. Compiled by g++ (C++20): it
// touches index::Index; everything that launches kernels sits in the .cu files behind plain-typed
// headers.
#include "gpu/engine/gpu_engine.h"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <list>
#include <mutex>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/batch/batch_query.h"
#include "gpu/device/cuda_status.h"
#include "gpu/engine/device_index_cache.h"
#include "gpu/engine/query_context.h"
#include "gpu/engine/query_ops.h"
#include "gpu/engine/query_pipeline.h"
#include "index/resolved_query.h"

namespace tandem::gpu {
namespace {

using index::Query;
using index::QueryMode;
using index::SearchContext;
using index::SearchResult;

// AND terms the default scratch size provides for when the shortest list spans the collection.
constexpr uint64_t kDefaultAndTerms = 16;

absl::Status CheckTuning(const GpuQueryTuning& tuning) {
  if (tuning.intersect_levels < kLocatedBlockSearch ||
      tuning.intersect_levels > kMaxMergeFindLevels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "intersect_levels must be -1..", kMaxMergeFindLevels, ", got ", tuning.intersect_levels));
  }
  if (static_cast<uint32_t>(tuning.batch_range) >= kNumSearchRanges) {
    return absl::InvalidArgumentError("unknown batch search range");
  }
  return absl::OkStatus();
}

unsigned DeviceFlags(GpuHostWait wait) {
  switch (wait) {
    case GpuHostWait::kYield:
      return cudaDeviceScheduleYield;
    case GpuHostWait::kBlockingSync:
      return cudaDeviceScheduleBlockingSync;
    case GpuHostWait::kSpin:
    case GpuHostWait::kAuto:
      break;
  }
  return cudaDeviceScheduleSpin;
}

}  // namespace

// Filters expanded to bits on the device, kept for the next query with the same filter bitmap
// (the server hands out one bitmap per distinct filter): least recently used out past kEntries.
class FilterBitsCache {
 public:
  static constexpr size_t kEntries = 16;
  using Bits = std::shared_ptr<const DeviceBuffer<uint32_t>>;

  // The bits of `filter`, expanded on `stream` (and waited for) when not cached.
  absl::StatusOr<Bits> Get(const std::shared_ptr<const filter::Bitmap>& filter, uint32_t num_docs,
                           ScratchArena& arena, cudaStream_t stream) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->filter.lock() == filter) {
          entries_.splice(entries_.begin(), entries_, it);
          return entries_.front().bits;
        }
      }
    }
    const std::vector<uint32_t>& words = filter->words();
    TANDEM_ASSIGN_OR_RETURN(DeviceBuffer<uint32_t> bits,
                            DeviceBuffer<uint32_t>::Allocate((uint64_t{num_docs} + 31) / 32));
    const size_t mark = arena.mark();
    TANDEM_ASSIGN_OR_RETURN(uint32_t * device_words,
                            arena.Take<uint32_t>(std::max<size_t>(words.size(), 1)));
    if (!words.empty()) {
      TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(device_words, words.data(),
                                                  words.size() * sizeof(uint32_t),
                                                  cudaMemcpyHostToDevice, stream));
    }
    TANDEM_RETURN_IF_ERROR(ExpandBitmap(device_words, static_cast<uint32_t>(words.size()),
                                        filter->codec() == filter::BitmapCodec::kPlwah, num_docs,
                                        bits.data(), arena, stream));
    // Other queries' streams read the bits once cached: they must be complete first.
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    arena.Rollback(mark);
    auto shared = std::make_shared<const DeviceBuffer<uint32_t>>(std::move(bits));
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_front({filter, shared});
    while (entries_.size() > kEntries) entries_.pop_back();  // queries still using one hold it
    return shared;
  }

 private:
  struct Entry {
    std::weak_ptr<const filter::Bitmap> filter;
    Bits bits;
  };
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
};

// Document norms for BM25 parameters and an average length other than the index's own (a live
// index's snapshot scores with its live documents' average: index::CollectionStatistics), computed
// on the device once per distinct (k1, b, average) and kept for the queries that follow, which in a
// live index share one average until the next refresh: least recently used out past kEntries.
class NormsCache {
 public:
  static constexpr size_t kEntries = 4;
  using Norms = std::shared_ptr<const DeviceBuffer<float>>;

  // The norms of `query` (which does not use the stored ones), computed on `stream` (and waited
  // for) when not cached.
  absl::StatusOr<Norms> Get(const index::ResolvedQuery& query, const uint32_t* doc_lengths,
                            uint32_t num_docs, cudaStream_t stream) {
    const Key key{query.bm25.k1, query.bm25.b, query.avg_doc_length};
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto it = entries_.begin(); it != entries_.end(); ++it) {
        if (it->key == key) {
          entries_.splice(entries_.begin(), entries_, it);
          return entries_.front().norms;
        }
      }
    }
    TANDEM_ASSIGN_OR_RETURN(DeviceBuffer<float> norms,
                            DeviceBuffer<float>::Allocate(std::max(num_docs, 1u)));
    TANDEM_RETURN_IF_ERROR(
        ComputeDocNorms(doc_lengths, num_docs, key.k1, key.b, key.avgdl, norms.data(), stream));
    // Other queries' streams read the norms once cached: they must be complete first.
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    auto shared = std::make_shared<const DeviceBuffer<float>>(std::move(norms));
    std::lock_guard<std::mutex> lock(mu_);
    entries_.push_front({key, shared});
    while (entries_.size() > kEntries) entries_.pop_back();  // queries still using one hold it
    return shared;
  }

 private:
  struct Key {
    float k1, b, avgdl;
    // Bit-equal floats: the norms are equal exactly when the inputs are.
    bool operator==(const Key& o) const { return std::memcmp(this, &o, sizeof(Key)) == 0; }
  };
  struct Entry {
    Key key;
    Norms norms;
  };
  std::mutex mu_;
  std::list<Entry> entries_;  // most recently used first
};

struct GpuEngine::Impl {
  const index::Index& index;
  FilterBitsCache filters;
  NormsCache norms;
  GpuEngineOptions options;
  DeviceInfo info;
  DeviceBuffer<uint32_t> doc_lengths;        // num_docs
  DeviceBuffer<float> default_norms;         // the index's table for its own BM25 parameters
  DeviceBuffer<uint32_t> iota;               // 0, 1, ..., num_docs - 1: posting positions
  std::unique_ptr<StoredGpuLayouts> stored;  // outlives the cache, which reads it
  std::unique_ptr<DeviceIndexCache> cache;
  std::unique_ptr<QueryContextPool> contexts;
  std::unique_ptr<QueryContextPool> batch_contexts;  // with the batch path only

  std::mutex tuning_mu;
  GpuQueryTuning tuning;  // guarded by tuning_mu

  mutable std::mutex stage_mu;
  GpuStageTimes stage_totals;  // guarded by stage_mu

  explicit Impl(const index::Index& i) : index(i) {}

  GpuQueryTuning current_tuning() {
    std::lock_guard<std::mutex> lock(tuning_mu);
    return tuning;
  }
};

GpuEngine::GpuEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
GpuEngine::~GpuEngine() = default;

absl::StatusOr<std::unique_ptr<GpuEngine>> GpuEngine::Create(const index::Index& index,
                                                             const GpuEngineOptions& options) {
  if (options.num_contexts < 1) return absl::InvalidArgumentError("num_contexts must be >= 1");
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
    TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDeviceFlags(DeviceFlags(options.host_wait)));
  }
  cudaDeviceProp prop;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options.device));
  impl->info.device = options.device;
  impl->info.name = prop.name;
  impl->info.compute_major = prop.major;
  impl->info.compute_minor = prop.minor;

  const uint32_t num_docs = index.num_docs();
  const uint64_t scratch =
      options.scratch_bytes != 0
          ? options.scratch_bytes
          : (66 + 8 * kDefaultAndTerms) * uint64_t{num_docs} + (64u << 20);  // 2: a filter
  TANDEM_ASSIGN_OR_RETURN(
      impl->contexts,
      QueryContextPool::Create({.contexts = options.num_contexts, .scratch_bytes = scratch}));
  if (options.batch.enabled) {
    if (options.batch.contexts < 1 || options.batch.scratch_bytes == 0 ||
        options.batch.host_bytes < (uint64_t{1} << 20)) {
      return absl::InvalidArgumentError(
          "the batch path needs at least one context, scratch memory and 1 MB of pinned memory "
          "per context");
    }
    TANDEM_ASSIGN_OR_RETURN(impl->batch_contexts,
                            QueryContextPool::Create({.contexts = options.batch.contexts,
                                                      .scratch_bytes = options.batch.scratch_bytes,
                                                      .host_bytes = options.batch.host_bytes}));
  }

  // Document lengths and the default norms, for BM25 on the device.
  cudaStream_t setup = impl->contexts->setup_stream();
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
  const uint64_t free_share = free_bytes / 10 * 6;
  cache_options.capacity_bytes = options.cache_bytes != 0 ? options.cache_bytes : free_share;
  if (options.cache_within_free) {
    cache_options.capacity_bytes = std::min<uint64_t>(cache_options.capacity_bytes, free_share);
  }
  cache_options.search_forms = options.batch.enabled;
  cache_options.compressed_search_forms = options.batch.compressed_forms;
  if (options.stored_layouts) {
    absl::StatusOr<std::unique_ptr<StoredGpuLayouts>> stored =
        StoredGpuLayouts::Open(index.directory() + "/" + kStoredLayoutsFile, index);
    if (stored.ok()) {
      impl->stored = *std::move(stored);
      cache_options.stored = impl->stored.get();
    } else if (!absl::IsNotFound(stored.status())) {
      return stored.status();
    }
  }
  TANDEM_ASSIGN_OR_RETURN(impl->cache, DeviceIndexCache::Create(index, cache_options));
  if (options.preload) TANDEM_RETURN_IF_ERROR(impl->cache->Preload().status());
  return std::unique_ptr<GpuEngine>(new GpuEngine(std::move(impl)));
}

const index::Index& GpuEngine::index() const { return impl_->index; }

absl::StatusOr<SearchResult> GpuEngine::Search(const index::PreparedQuery& prepared,
                                               const SearchContext& context) const {
  const index::Index& index = impl_->index;
  TANDEM_RETURN_IF_ERROR(prepared.CheckPreparedFor(index));
  TANDEM_RETURN_IF_ERROR(context.Check());
  const Query& query = prepared.query();
  const index::ResolvedQuery& resolved = prepared.resolved();
  SearchResult result;
  result.stats.executed_mode = resolved.initial_executed_mode();
  if (resolved.empty()) return result;

  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(impl_->options.device));  // per calling thread
  // Declared before the lease: the lists outlive the stream synchronization when the lease is
  // returned, so a list evicted meanwhile is not freed under a running kernel.
  std::vector<DeviceTerm> terms;
  QueryContextPool::Lease lease = impl_->contexts->Acquire(impl_->current_tuning());
  QueryContext& qc = *lease;

  const auto cache_start = std::chrono::steady_clock::now();
  for (const index::ResolvedTerm& t : resolved.terms) {
    TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const DeviceList> list, impl_->cache->Get(t.info));
    terms.push_back({std::move(list), t.weighted_idf});
  }
  // Profiling starts after the cache: its host time is its stage, and the first device interval
  // must not include it.
  qc.timer.Begin(qc.stream, qc.tuning.profile_stages);
  qc.timer.AddHostMs(GpuStage::kCache, std::chrono::duration<double, std::milli>(
                                           std::chrono::steady_clock::now() - cache_start)
                                           .count());

  // Norms: the index's table when the query uses its parameters and statistics (as the CPU
  // engine), else computed on the device with the same float operations as index::Bm25DocNorm.
  DocumentTables tables{.norms = impl_->default_norms.data(),
                        .iota = impl_->iota.data(),
                        .num_docs = index.num_docs()};
  NormsCache::Norms norms;  // held until the query is done
  if (!resolved.stored_norms) {
    TANDEM_ASSIGN_OR_RETURN(
        norms, impl_->norms.Get(resolved, impl_->doc_lengths.data(), index.num_docs(), qc.stream));
    tables.norms = norms->data();
    qc.timer.Mark(GpuStage::kScore);
  }
  // The filter's bitmap, copied compressed and expanded to bits on the device at its first use.
  FilterBitsCache::Bits filter_bits;  // held until the query is done
  if (query.filter != nullptr) {
    TANDEM_ASSIGN_OR_RETURN(
        filter_bits, impl_->filters.Get(query.filter, index.num_docs(), qc.arena, qc.stream));
    tables.filter = filter_bits->data();
    qc.timer.Mark(GpuStage::kScore);
  }

  if (resolved.runs_and()) {
    TANDEM_ASSIGN_OR_RETURN(result.hits, RunAnd(terms, tables, query.k, context, qc, result.stats));
    result.stats.executed_mode = QueryMode::kAnd;
  }
  if (resolved.runs_or(result.hits.size())) {
    TANDEM_ASSIGN_OR_RETURN(result.hits, RunOr(terms, tables, query.k, context, qc, result.stats));
    result.stats.executed_mode = QueryMode::kOr;
  }
  if (qc.tuning.profile_stages) {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(qc.stream));
    std::lock_guard<std::mutex> lock(impl_->stage_mu);
    TANDEM_RETURN_IF_ERROR(qc.timer.Collect(impl_->stage_totals));
  }
  return result;
}

bool GpuEngine::batch_path() const { return impl_->batch_contexts != nullptr; }

std::vector<absl::StatusOr<SearchResult>> GpuEngine::SearchBatch(
    const std::vector<const index::PreparedQuery*>& queries,
    const std::vector<SearchContext>& contexts) const {
  const size_t n = queries.size();
  std::vector<absl::StatusOr<SearchResult>> results(n, SearchResult{});
  if (absl::Status fit = index::CheckBatchContexts(n, contexts.size()); !fit.ok()) {
    for (auto& r : results) r = fit;
    return results;
  }
  auto context_of = [&](size_t i) -> const SearchContext& {
    return contexts.size() == 1 ? contexts[0] : contexts[i];
  };
  if (impl_->batch_contexts == nullptr) {
    for (size_t i = 0; i < n; ++i) results[i] = Search(*queries[i], context_of(i));
    return results;
  }
  const index::Index& index = impl_->index;
  std::vector<SearchResult> answers(n);
  std::vector<size_t> alone;      // run one by one, as Search runs them
  std::vector<size_t> batchable;  // run in batches
  for (size_t i = 0; i < n; ++i) {
    absl::Status ready = queries[i]->CheckPreparedFor(index);
    if (ready.ok()) ready = context_of(i).Check();
    if (!ready.ok()) {
      results[i] = ready;
      continue;
    }
    const index::ResolvedQuery& rq = queries[i]->resolved();
    answers[i].stats.executed_mode = rq.initial_executed_mode();
    if (rq.empty() || (rq.mode == QueryMode::kAnd && !rq.runs_and())) {
      results[i] = answers[i];  // no terms, or an AND with an absent term: nothing matches
    } else if (FitsBatch(rq)) {
      batchable.push_back(i);
    } else {
      alone.push_back(i);
    }
  }
  if (!batchable.empty()) {
    if (const cudaError_t e = cudaSetDevice(impl_->options.device); e != cudaSuccess) {
      const absl::Status status = CudaErrorToStatus(e, "cudaSetDevice", __FILE__, __LINE__);
      for (size_t i : batchable) results[i] = status;
      batchable.clear();
    }
  }
  // A batch shares its norms and its filter: the queries in groups of equal BM25 parameters and
  // average length (a live index's snapshot gives all its queries one) and the same filter bitmap
  // (a live segment's documents, shared by the snapshot's queries), in arrival order within each.
  auto group_of = [&](size_t i) {
    const index::ResolvedQuery& rq = queries[i]->resolved();
    uint32_t bits[3] = {};
    if (!rq.stored_norms) {
      std::memcpy(&bits[0], &rq.bm25.k1, 4);
      std::memcpy(&bits[1], &rq.bm25.b, 4);
      std::memcpy(&bits[2], &rq.avg_doc_length, 4);
    }
    return std::make_tuple(rq.stored_norms, bits[0], bits[1], bits[2],
                           queries[i]->query().filter.get());
  };
  std::stable_sort(batchable.begin(), batchable.end(),
                   [&](size_t a, size_t b) { return group_of(a) < group_of(b); });
  // The batch items with their lists, held until their batch has run.
  std::vector<BatchItem> items;
  std::vector<size_t> item_query;
  for (size_t i : batchable) {
    BatchItem item{.query = &queries[i]->resolved(), .lists = {}, .result = &answers[i]};
    absl::Status loaded = absl::OkStatus();
    for (const index::ResolvedTerm& t : queries[i]->resolved().terms) {
      absl::StatusOr<std::shared_ptr<const DeviceList>> list = impl_->cache->Get(t.info);
      if (!list.ok()) {
        loaded = list.status();
        break;
      }
      item.lists.push_back(*std::move(list));
    }
    if (!loaded.ok()) {
      results[i] = loaded;
      continue;
    }
    items.push_back(std::move(item));
    item_query.push_back(i);
  }
  if (!items.empty()) {
    QueryContextPool::Lease lease = impl_->batch_contexts->Acquire(impl_->current_tuning());
    const SearchRange range = lease->tuning.batch_range;
    const uint32_t num_docs = index.num_docs();
    const float* norms = nullptr;
    const uint32_t* live = nullptr;
    // The queries as one batch when it fits the context, else each half in turn (a footprint costs
    // a pass over the batch, so this stays O(n log n)); a query too large for a batch of its own
    // goes alone.
    std::vector<BatchItem> batch;
    auto run_range = [&](auto& self, size_t begin, size_t end) -> void {
      batch.assign(items.begin() + begin, items.begin() + end);
      const BatchFootprint f = FootprintOf(batch, num_docs);
      if (f.host_bytes <= lease->host_bytes && f.device_bytes <= lease->arena.capacity()) {
        const absl::Status status = RunBatch(batch, norms, live, num_docs, range, *lease);
        for (size_t j = begin; j < end; ++j) {
          const size_t i = item_query[j];
          if (status.ok()) {
            results[i] = std::move(answers[i]);
          } else {
            results[i] = status;
          }
        }
        return;
      }
      if (end - begin == 1) {
        alone.push_back(item_query[begin]);
        return;
      }
      const size_t mid = begin + (end - begin) / 2;
      self(self, begin, mid);
      self(self, mid, end);
    };
    for (size_t begin = 0, end = 0; begin < items.size(); begin = end) {
      const auto group = group_of(item_query[begin]);
      end = begin + 1;
      while (end < items.size() && group_of(item_query[end]) == group) ++end;
      const index::PreparedQuery& first = *queries[item_query[begin]];
      // Held until the group's batches have run.
      NormsCache::Norms computed;
      FilterBitsCache::Bits filter_bits;
      absl::Status ready = absl::OkStatus();
      norms = impl_->default_norms.data();
      live = nullptr;
      if (!first.resolved().stored_norms) {
        absl::StatusOr<NormsCache::Norms> n =
            impl_->norms.Get(first.resolved(), impl_->doc_lengths.data(), num_docs, lease->stream);
        if (n.ok()) {
          computed = *std::move(n);
          norms = computed->data();
        } else {
          ready = n.status();
        }
      }
      if (ready.ok() && first.query().filter != nullptr) {
        absl::StatusOr<FilterBitsCache::Bits> bits =
            impl_->filters.Get(first.query().filter, num_docs, lease->arena, lease->stream);
        if (bits.ok()) {
          filter_bits = *std::move(bits);
          live = filter_bits->data();
        } else {
          ready = bits.status();
        }
      }
      if (!ready.ok()) {
        for (size_t j = begin; j < end; ++j) results[item_query[j]] = ready;
        continue;
      }
      run_range(run_range, begin, end);
    }
  }
  for (size_t i : alone) results[i] = Search(*queries[i], context_of(i));
  return results;
}

std::optional<uint64_t> GpuEngine::BatchWork(const index::PreparedQuery& query) const {
  const index::ResolvedQuery& rq = query.resolved();
  // Not for the batch path, or nothing to run (no terms, or an AND with an absent term).
  if (impl_->batch_contexts == nullptr || !FitsBatch(rq) || query.pass_postings() == 0) {
    return std::nullopt;
  }
  return query.pass_postings();
}

double GpuEngine::ResidentFraction(const index::PreparedQuery& query) const {
  uint64_t total = 0, resident = 0;
  for (const index::ResolvedTerm& t : query.resolved().terms) {
    total += t.info.df;
    if (impl_->cache->Resident(t.info.ordinal)) resident += t.info.df;
  }
  return total == 0 ? 1.0 : static_cast<double>(resident) / static_cast<double>(total);
}

absl::Status GpuEngine::SetTuning(const GpuQueryTuning& tuning) {
  TANDEM_RETURN_IF_ERROR(CheckTuning(tuning));
  std::lock_guard<std::mutex> lock(impl_->tuning_mu);
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
  GpuCacheStats stats = impl_->cache->counters();
  stats.stored_layouts = impl_->stored != nullptr;
  return stats;
}

const DeviceInfo& GpuEngine::device() const { return impl_->info; }

std::vector<std::string> GpuEngine::HottestTerms(size_t max_lists) const {
  std::vector<std::string> terms;
  for (uint64_t ordinal : impl_->cache->HottestOrdinals(max_lists)) {
    terms.push_back(impl_->index.term_at(ordinal).term);
  }
  return terms;
}

absl::StatusOr<uint64_t> GpuEngine::Warm(const std::vector<std::string>& terms,
                                         std::chrono::steady_clock::duration budget) const {
  const auto deadline = std::chrono::steady_clock::now() + budget;
  std::vector<index::TermInfo> known;
  for (const std::string& term : terms) {
    if (std::optional<index::TermInfo> info = impl_->index.Lookup(term)) known.push_back(*info);
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(impl_->options.device));
  return impl_->cache->Warm(known, deadline);
}

absl::Status GpuEngine::GrowCache(uint64_t capacity_bytes) const {
  return impl_->cache->Grow(capacity_bytes);
}

}  // namespace tandem::gpu
