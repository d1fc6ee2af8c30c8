// File: search_form.h
//
// A posting list in the form a batch of queries searches it (Ao et al., VLDB 2011, section 3): its
// docIDs uncompressed in device memory, so that one thread per candidate can binary-search them,
// with what contracts each search's range before it starts:
//   linear regression (section 3.3)  docids[i] ~ alpha * i + beta by least squares; a docID x lies
//                                    at a position within [e(x) - left, e(x) + right] of
//                                    e(x) = (x - beta) / alpha, left and right being the largest
//                                    deviations of the list's own docIDs from the line;
//   hash segmentation (section 3.4)  bucket h holds the docIDs whose high bits, x >> shift, are h;
//                                    starts[h] is the position of its first docID, so x can only be
//                                    in [starts[h], starts[h + 1]). HS16, HS32 and HS256 choose the
//                                    number of buckets, a power of two, so that a bucket holds at
//                                    most 16, 32 or 256 postings on average.
// The docIDs are kept either plainly (4 bytes a posting) or compressed in SegLRC (section 4.3: a
// search reads any position alone, one segment record and one packed deviation; about 1.2 bytes a
// posting on the 25M-document index), where the batch path searches them in place.
// Built on the device from the list's GPU layout when the device cache loads it (BuildSearchForm);
// both ranges are computed with the same double arithmetic at build time and at search time
// (kernels/search_range.cuh), so they are safe by construction. Plain types: compiles as C++17
// (nvcc) and C++20 (g++).
//
//   SearchForm form = list->search;  // DeviceList::search
//   Range r = LinearRegressionRange(form, x);  // device code: search docids[r.lo, r.hi)
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/statusor.h"
#include "gpu/layouts/decode.h"
#include "gpu/layouts/search_range.h"

namespace tandem::gpu {

// Average postings per bucket of each hash segmentation, in SearchRange order from kHash16.
inline constexpr uint32_t kHashBucketPostings[3] = {16, 32, 256};

struct HashBuckets {
  const uint32_t* starts = nullptr;  // device: num_buckets + 1 positions; starts[nb] = n
  uint32_t num_buckets = 0;
  uint32_t shift = 0;  // bucket of x: x >> shift
};

struct SearchForm {
  const uint32_t* docids = nullptr;  // device: num_postings docIDs, increasing; or null, and
  LrcDesc lrc;                       // the docIDs in SegLRC at lrc_image (device)
  const uint32_t* lrc_image = nullptr;
  uint32_t num_postings = 0;
  double lr_alpha = 0, lr_beta = 0;  // alpha 0: no usable line, the range is the whole list
  double lr_left = 0, lr_right = 0;  // largest deviations, in positions, both >= 0
  HashBuckets hash[3];               // HS16, HS32, HS256
  uint64_t bytes = 0;                // device bytes of the docIDs and the bucket arrays

  bool present() const { return docids != nullptr || lrc_image != nullptr; }
};

// Decodes a list already on the device (its PForDelta or Rice image, the other null) into
// temporary memory from `pool` and checks that its docIDs increase and stay below `num_docs`, the
// collection size every per-document array has: DATA_LOSS otherwise. For images that did not come
// from the host transcoder, which checks its input (stored layouts). Synchronizes `stream`.
absl::Status CheckDeviceDocids(const DevicePForList* pfor, const DeviceRiceList* rice,
                               uint32_t num_postings, uint32_t num_docs, cudaMemPool_t pool,
                               cudaStream_t stream);

// Builds the search form of a list already on the device (its PForDelta or Rice image, the other
// null) on `stream`: decodes the docIDs, fits the line and its deviations, fills the three bucket
// arrays. With `seglrc` (the list's docIDs in SegLRC: the image's descriptor, its words on the
// host, as gpu/list_layout.h builds them) the form keeps that image
// instead of the plain docIDs, which are then decoded into temporary memory only to build the
// ranges. Its memory is one allocation from `pool`, returned in *allocation (free it with
// cudaFreeAsync once no kernel reads the form). Synchronizes `stream` (twice: the line's sums,
// then the deviations come back to the host).
absl::StatusOr<SearchForm> BuildSearchForm(const DevicePForList* pfor, const DeviceRiceList* rice,
                                           uint32_t num_postings, uint32_t num_docs,
                                           const LrcDesc* seglrc, const uint32_t* seglrc_words,
                                           cudaMemPool_t pool, cudaStream_t stream,
                                           void** allocation);

}  // namespace tandem::gpu
