#include "gpu/engine/device_index_cache.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <utility>
#include <variant>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"

namespace tandem::gpu {

DeviceList::~DeviceList() {
  // The queries that used the list synchronized their streams before letting go of it.
  if (allocation != nullptr) cudaFreeAsync(allocation, free_stream);
  if (search_allocation != nullptr) cudaFreeAsync(search_allocation, free_stream);
}

DeviceIndexCache::DeviceIndexCache(const index::Index& index,
                                   const DeviceIndexCacheOptions& options)
    : index_(index), options_(options), capacity_(options.capacity_bytes) {}

DeviceIndexCache::~DeviceIndexCache() {
  entries_.clear();
  lru_.clear();
  if (copy_stream_ != nullptr) {
    cudaStreamSynchronize(copy_stream_);
    cudaStreamDestroy(copy_stream_);
  }
  if (staging_ != nullptr) cudaFreeHost(staging_);
  if (pool_ != nullptr) cudaMemPoolDestroy(pool_);
}

absl::StatusOr<std::unique_ptr<DeviceIndexCache>> DeviceIndexCache::Create(
    const index::Index& index, const DeviceIndexCacheOptions& options) {
  if (options.capacity_bytes == 0) {
    return absl::InvalidArgumentError("the device index cache needs a capacity");
  }
  if (options.staging_bytes < 4096) return absl::InvalidArgumentError("staging buffer too small");
  std::unique_ptr<DeviceIndexCache> cache(new DeviceIndexCache(index, options));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(options.device));
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaStreamCreateWithFlags(&cache->copy_stream_, cudaStreamNonBlocking));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMallocHost(&cache->staging_, options.staging_bytes));

  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = options.device;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemPoolCreate(&cache->pool_, &props));
  uint64_t keep = ~uint64_t{0};  // never give reserved memory back to the driver
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemPoolSetAttribute(cache->pool_, cudaMemPoolAttrReleaseThreshold, &keep));
  // Reserve the capacity now: later allocations are sub-allocations of the pool, not cudaMalloc.
  void* reserve = nullptr;
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMallocFromPoolAsync(&reserve, options.capacity_bytes, cache->pool_, cache->copy_stream_));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaFreeAsync(reserve, cache->copy_stream_));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(cache->copy_stream_));
  return cache;
}

absl::StatusOr<std::shared_ptr<const DeviceList>> DeviceIndexCache::Load(
    const index::TermInfo& term) {
  TranscodeOptions transcode = options_.transcode;
  transcode.codec = DefaultGpuCodec(index_.codec());
  transcode.seglrc_docids = options_.search_forms && options_.compressed_search_forms;
  transcode.num_docs = std::max(index_.num_docs(), 1u);
  // The images: stored beside the index (a copy, no transcode), or transcoded here.
  std::optional<GpuPostingList> host;
  std::variant<PForDesc, RiceDesc> docid_desc;
  absl::Span<const uint32_t> docid_words, freq_words;
  FreqDesc freq_desc;
  const StoredGpuLayouts* stored = options_.stored;
  if (stored != nullptr && !transcode.seglrc_docids && stored->codec() == transcode.codec &&
      stored->pfor_block_size() == transcode.pfor_block_size) {
    TANDEM_ASSIGN_OR_RETURN(StoredList s, stored->Get(term));
    docid_desc = s.docid_desc;
    docid_words = s.docid_words;
    freq_desc = s.freq_desc;
    freq_words = s.freq_words;
  } else {
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView view, index_.postings(term));
    TANDEM_ASSIGN_OR_RETURN(host, TranscodeList(view, index_.codec(), transcode));
    if (const auto* p = std::get_if<PForImage>(&host->docids)) {
      docid_desc = p->desc;
      docid_words = p->words;
    } else {
      docid_desc = std::get<RiceImage>(host->docids).desc;
      docid_words = std::get<RiceImage>(host->docids).words;
    }
    freq_desc = host->freqs.desc;
    freq_words = host->freqs.words;
  }

  auto list = std::make_shared<DeviceList>();
  if (const auto* p = std::get_if<PForDesc>(&docid_desc)) {
    list->codec = GpuCodec::kPFor;
    list->pfor.desc = *p;
    list->num_blocks = p->num_blocks;
    list->block_size = p->block_size;
  } else {
    const RiceDesc& r = std::get<RiceDesc>(docid_desc);
    list->codec = GpuCodec::kRice;
    list->rice.desc = r;
    list->num_blocks = r.num_blocks;
    list->block_size = kRiceBlock;
  }
  list->freqs.desc = freq_desc;
  list->num_postings = freq_desc.num_postings;
  // One allocation: the docID image, then (16-byte aligned) the frequency image.
  const uint64_t freq_offset = AlignedWords(docid_words.size());
  const uint64_t words = freq_offset + freq_words.size();
  list->bytes = words * sizeof(uint32_t);

  std::lock_guard<std::mutex> lock(copy_mu_);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
  void* allocation = nullptr;
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMallocFromPoolAsync(&allocation, list->bytes, pool_, copy_stream_));
  list->allocation = allocation;
  list->free_stream = copy_stream_;
  uint32_t* device = static_cast<uint32_t*>(allocation);
  // Host → pinned staging → device, one chunk at a time (the staging buffer is reused after each
  // chunk's copy completes).
  auto copy = [&](absl::Span<const uint32_t> src, uint32_t* dst) -> absl::Status {
    const char* from = reinterpret_cast<const char*>(src.data());
    char* to = reinterpret_cast<char*>(dst);
    uint64_t left = src.size() * sizeof(uint32_t);
    while (left > 0) {
      const uint64_t chunk = std::min<uint64_t>(left, options_.staging_bytes);
      std::memcpy(staging_, from, chunk);
      TANDEM_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(to, staging_, chunk, cudaMemcpyHostToDevice, copy_stream_));
      TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(copy_stream_));
      from += chunk;
      to += chunk;
      left -= chunk;
    }
    return absl::OkStatus();
  };
  TANDEM_RETURN_IF_ERROR(copy(docid_words, device));
  TANDEM_RETURN_IF_ERROR(copy(freq_words, device + freq_offset));
  list->pfor.image = device;
  list->rice.image = device;
  list->freqs.image = device + freq_offset;
  list->bases =
      device + (list->codec == GpuCodec::kPFor ? list->pfor.desc.bases : list->rice.desc.bases);
  if (!host.has_value()) {
    // Stored images are checked where they are decoded: every docID indexes per-document arrays.
    if (absl::Status s = CheckDeviceDocids(list->codec == GpuCodec::kPFor ? &list->pfor : nullptr,
                                           list->codec == GpuCodec::kRice ? &list->rice : nullptr,
                                           list->num_postings, std::max(index_.num_docs(), 1u),
                                           pool_, copy_stream_);
        !s.ok()) {
      return absl::DataLossError(
          absl::StrCat(kStoredLayoutsFile, ", term ", term.ordinal, ": ", s.message()));
    }
  }
  if (options_.search_forms) {
    TANDEM_ASSIGN_OR_RETURN(
        list->search, BuildSearchForm(list->codec == GpuCodec::kPFor ? &list->pfor : nullptr,
                                      list->codec == GpuCodec::kRice ? &list->rice : nullptr,
                                      list->num_postings, std::max(index_.num_docs(), 1u),
                                      host && host->seglrc ? &host->seglrc->desc : nullptr,
                                      host && host->seglrc ? host->seglrc->words.data() : nullptr,
                                      pool_, copy_stream_, &list->search_allocation));
    list->bytes += list->search.bytes;
  }
  return std::shared_ptr<const DeviceList>(std::move(list));
}

void DeviceIndexCache::EvictFor(uint64_t bytes) {
  while (!lru_.empty() && counters_.bytes_resident + bytes > capacity_) {
    auto it = entries_.find(lru_.back());
    counters_.bytes_resident -= it->second.list->bytes;
    --counters_.lists_resident;
    ++counters_.evictions;
    entries_.erase(it);
    lru_.pop_back();
  }
}

absl::StatusOr<std::shared_ptr<const DeviceList>> DeviceIndexCache::Get(
    const index::TermInfo& term) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = entries_.find(term.ordinal);
    if (it != entries_.end()) {
      ++counters_.hits;
      lru_.splice(lru_.begin(), lru_, it->second.lru);
      return it->second.list;
    }
  }
  TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const DeviceList> list, Load(term));
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.misses;
  counters_.bytes_copied += list->bytes;
  auto it = entries_.find(term.ordinal);
  if (it != entries_.end()) return it->second.list;  // another query loaded it meanwhile
  if (list->bytes <= capacity_) {
    EvictFor(list->bytes);
    lru_.push_front(term.ordinal);
    entries_.emplace(term.ordinal, Entry{list, lru_.begin()});
    counters_.bytes_resident += list->bytes;
    ++counters_.lists_resident;
  }
  return list;
}

bool DeviceIndexCache::KeepWithoutEvicting(uint64_t ordinal, std::shared_ptr<const DeviceList> list,
                                           bool least_recent) {
  if (entries_.count(ordinal) != 0 || counters_.bytes_resident + list->bytes > capacity_) {
    return false;
  }
  counters_.bytes_resident += list->bytes;
  ++counters_.lists_resident;
  const auto position =
      least_recent ? lru_.insert(lru_.end(), ordinal) : lru_.insert(lru_.begin(), ordinal);
  entries_.emplace(ordinal, Entry{std::move(list), position});
  return true;
}

absl::StatusOr<uint64_t> DeviceIndexCache::Preload() {
  for (uint64_t ordinal = 0; ordinal < index_.num_terms(); ++ordinal) {
    const index::TermInfo term = index_.term_at(ordinal);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (counters_.bytes_resident >= capacity_) break;
      if (entries_.count(term.ordinal) != 0) continue;
    }
    TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const DeviceList> list, Load(term));
    std::lock_guard<std::mutex> lock(mu_);
    counters_.bytes_copied += list->bytes;
    KeepWithoutEvicting(term.ordinal, std::move(list));  // preloading never evicts
  }
  std::lock_guard<std::mutex> lock(mu_);
  return counters_.lists_resident;
}

absl::StatusOr<uint64_t> DeviceIndexCache::Warm(const std::vector<index::TermInfo>& terms,
                                                std::chrono::steady_clock::time_point deadline) {
  uint64_t loaded = 0;
  for (const index::TermInfo& term : terms) {
    if (std::chrono::steady_clock::now() >= deadline) break;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (entries_.count(term.ordinal) != 0) continue;
      if (counters_.bytes_resident >= capacity_) break;
    }
    TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const DeviceList> list, Load(term));
    std::lock_guard<std::mutex> lock(mu_);
    counters_.bytes_copied += list->bytes;
    // Each warmed list goes behind the ones before it, so the LRU order is the order given, hottest
    // first. The lists after one that does not fit are colder: copying them to drop them is waste.
    if (!KeepWithoutEvicting(term.ordinal, std::move(list), /*least_recent=*/true)) break;
    ++loaded;
  }
  return loaded;
}

std::vector<uint64_t> DeviceIndexCache::HottestOrdinals(size_t max_lists) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<uint64_t> ordinals;
  for (uint64_t ordinal : lru_) {
    if (ordinals.size() >= max_lists) break;
    ordinals.push_back(ordinal);
  }
  return ordinals;
}

uint64_t DeviceIndexCache::capacity_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return capacity_;
}

absl::Status DeviceIndexCache::Grow(uint64_t capacity_bytes) {
  std::lock_guard<std::mutex> copy_lock(copy_mu_);  // the copy stream is the pool's stream
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (capacity_bytes <= capacity_) return absl::OkStatus();
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaSetDevice(options_.device));
  // Allocating what the pool does not hold in use yet, up to the new capacity, makes it reserve at
  // least the new capacity (it keeps reserved memory: its release threshold is unbounded).
  uint64_t used = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemPoolGetAttribute(pool_, cudaMemPoolAttrUsedMemCurrent, &used));
  if (capacity_bytes > used) {
    void* reserve = nullptr;
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMallocFromPoolAsync(&reserve, capacity_bytes - used, pool_, copy_stream_));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaFreeAsync(reserve, copy_stream_));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(copy_stream_));
  }
  std::lock_guard<std::mutex> lock(mu_);
  capacity_ = std::max(capacity_, capacity_bytes);
  return absl::OkStatus();
}

bool DeviceIndexCache::Resident(uint64_t ordinal) const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.count(ordinal) != 0;
}

GpuCacheStats DeviceIndexCache::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  GpuCacheStats counters = counters_;
  counters.capacity_bytes = capacity_;
  return counters;
}

}  // namespace tandem::gpu
