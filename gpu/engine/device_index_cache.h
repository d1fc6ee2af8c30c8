// File: device_index_cache.h
//
// DeviceIndexCache keeps transcoded posting lists in GPU memory (Ding et al. 2009, section 5: the
// index lives on the host, the lists a query needs are moved to the device, the hot ones stay).
// A list is transcoded into the GPU layouts (gpu/list_layout.h) at its first use, copied through a
// pinned staging buffer on a dedicated copy stream, and kept in LRU order by bytes under a fixed
// capacity. Device memory comes from a CUDA memory pool reserved at start, so a miss does not call
// cudaMalloc. Lists in use by a running query are held by shared_ptr: evicting one drops it from
// the cache, and its memory returns to the pool when the last query lets go of it. A list larger
// than the whole capacity is still served, uncached, for the query that asked.
//
//   TANDEM_ASSIGN_OR_RETURN(auto cache, DeviceIndexCache::Create(index, {.capacity_bytes = 1 <<
//   30})); TANDEM_ASSIGN_OR_RETURN(std::shared_ptr<const DeviceList> list,
//   cache->Get(*index.Lookup("t")));
//
// Host code (C++20): includes the CUDA runtime API, not the engine's public header.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/engine/gpu_engine.h"
#include "gpu/layouts/decode.h"
#include "gpu/layouts/list_layout.h"
#include "gpu/layouts/search_form.h"
#include "gpu/layouts/stored_layouts.h"
#include "index/index.h"

namespace tandem::gpu {

// One list resident on the device: its descriptors and device images. Read-only once built.
struct DeviceList {
  GpuCodec codec = GpuCodec::kPFor;
  DevicePForList pfor;
  DeviceRiceList rice;
  DeviceFreqList freqs;
  uint32_t num_postings = 0;
  uint32_t num_blocks = 0;
  uint32_t block_size = 0;          // postings per docID block: 128 or 512
  const uint32_t* bases = nullptr;  // device: num_blocks + 1 block boundaries (list_format.h)
  // The docIDs for the batch path, plain or in SegLRC (search_form.h); empty unless the cache
  // builds it.
  SearchForm search;
  uint64_t bytes = 0;  // device bytes of both images and the search form

  ~DeviceList();
  void* allocation = nullptr;         // returned to the pool on destruction
  void* search_allocation = nullptr;  // likewise
  cudaStream_t free_stream = nullptr;
};

struct DeviceIndexCacheOptions {
  int device = 0;
  uint64_t capacity_bytes = 0;        // must be > 0 (the engine picks the default)
  TranscodeOptions transcode;         // .codec is overridden by the index codec's GPU codec
  uint64_t staging_bytes = 8u << 20;  // pinned staging buffer
  // Build every list's search form at load (the batch path): about 4.4 more bytes per posting.
  bool search_forms = false;
  // Keep the search forms' docIDs in SegLRC (search_form.h): about 1.6 bytes per posting instead.
  bool compressed_search_forms = false;
  // Images stored beside the index (gpu_layouts.bin), copied instead of transcoded when their
  // codec and block size are the cache's; must outlive the cache.
  const StoredGpuLayouts* stored = nullptr;
};

class DeviceIndexCache {
 public:
  // `index` must outlive the cache.
  static absl::StatusOr<std::unique_ptr<DeviceIndexCache>> Create(
      const index::Index& index, const DeviceIndexCacheOptions& options);
  ~DeviceIndexCache();
  DeviceIndexCache(const DeviceIndexCache&) = delete;
  DeviceIndexCache& operator=(const DeviceIndexCache&) = delete;

  // The term's list on the device, loading it on a miss. Thread-safe.
  absl::StatusOr<std::shared_ptr<const DeviceList>> Get(const index::TermInfo& term);

  // Loads lists in lexicon order while they fit in the capacity; returns how many are resident.
  absl::StatusOr<uint64_t> Preload();

  // Whether the list of the term with this lexicon ordinal is on the device now.
  bool Resident(uint64_t ordinal) const;

  // The lexicon ordinals of the resident lists, most recently used first, at most `max_lists`:
  // what a node loading a new index warms its new cache with (server.h).
  std::vector<uint64_t> HottestOrdinals(size_t max_lists) const;
  // Loads these terms' lists, in order, until one does not fit in the capacity or `deadline`
  // passes; never evicts (as Preload). Returns how many were loaded.
  absl::StatusOr<uint64_t> Warm(const std::vector<index::TermInfo>& terms,
                                std::chrono::steady_clock::time_point deadline);
  // Raises the capacity to `capacity_bytes`, reserving the difference in the pool now (a cache
  // created small beside another index's grows when that one is released). RESOURCE_EXHAUSTED
  // when the device has no room; the capacity is then unchanged. A smaller value changes nothing.
  absl::Status Grow(uint64_t capacity_bytes);

  // The counters, and the capacity; stored_layouts is the engine's to set.
  GpuCacheStats counters() const;
  uint64_t capacity_bytes() const;

 private:
  DeviceIndexCache(const index::Index& index, const DeviceIndexCacheOptions& options);
  absl::StatusOr<std::shared_ptr<const DeviceList>> Load(const index::TermInfo& term);
  // Drops LRU entries until `bytes` more fit; caller holds mu_.
  void EvictFor(uint64_t bytes);
  // Keeps `list` as the most recent entry (the least recent with `least_recent`) unless it is
  // resident already or would not fit without evicting; caller holds mu_. Whether it was kept.
  bool KeepWithoutEvicting(uint64_t ordinal, std::shared_ptr<const DeviceList> list,
                           bool least_recent = false);

  const index::Index& index_;
  DeviceIndexCacheOptions options_;
  uint64_t capacity_ = 0;  // guarded by mu_ after Create
  cudaMemPool_t pool_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;
  void* staging_ = nullptr;  // pinned
  std::mutex copy_mu_;       // serializes the staging buffer and the copy stream

  mutable std::mutex mu_;
  struct Entry {
    std::shared_ptr<const DeviceList> list;
    std::list<uint64_t>::iterator lru;  // position in lru_ (front = most recent)
  };
  std::unordered_map<uint64_t, Entry> entries_;  // by term ordinal
  std::list<uint64_t> lru_;
  GpuCacheStats counters_;  // capacity_bytes and stored_layouts unset
};

}  // namespace tandem::gpu
