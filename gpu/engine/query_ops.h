// File: query_ops.h
//
// The device stages of the GPU query pipeline on plain types (Ding et al. 2009, sections 7 and 8),
// implemented in query_ops.cu with the kernels of gpu/kernels/query_kernels.cuh and CUB. The engine
// (gpu_engine.cc) strings them together; each call checks its arguments and launches on the
// caller's stream, returning before the device has run unless it says it synchronizes.
// Compiles as C++17 (nvcc) and C++20 (g++).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/device/scratch_arena.h"
#include "gpu/layouts/decode.h"

namespace tandem::gpu {

// norms[d] = index::Bm25DocNorm({k1, b}, lengths[d], avgdl), bit-equal to the host's.
absl::Status ComputeDocNorms(const uint32_t* lengths, uint32_t num_docs, float k1, float b,
                             float avgdl, float* norms, cudaStream_t stream);

// out[i] = i for i < n.
absl::Status Iota(uint32_t* out, uint32_t n, cudaStream_t stream);

// OR, term at a time: acc[docids[i]] += Bm25(weighted_idf, tf[i], norms[docids[i]]).
absl::Status AccumulateTerm(const uint32_t* docids, const uint32_t* tf, uint32_t n,
                            float weighted_idf, const float* norms, float* acc,
                            cudaStream_t stream);

// AND scoring, one term per call in query-term order: scores[i] += Bm25(..., norms[docs[i]]).
absl::Status AddScores(const uint32_t* docs, const uint32_t* tf, uint32_t n, float weighted_idf,
                       const float* norms, float* scores, cudaStream_t stream);

// One list's side of the AND, before decoding: Parallel Merge Find (section 7) of the n candidates
// against the list's block boundaries `bases` (num_blocks + 1 words, list_format.h). Fills
// cand_block[i] (num_blocks when no block can hold candidate i), block_slot[k] (the rank of block
// k among the selected blocks) and selected[0..max_selected) (the selected blocks' indices, then
// num_blocks, which the decoders skip). max_selected = min(n, num_blocks).
struct BlockSelection {
  uint32_t* cand_block = nullptr;  // n
  uint32_t* block_flag = nullptr;  // num_blocks
  uint32_t* block_slot = nullptr;  // num_blocks
  uint32_t* selected = nullptr;    // max_selected
  uint32_t max_selected = 0;
};
absl::StatusOr<BlockSelection> SelectBlocks(const uint32_t* cand, uint32_t n, const uint32_t* bases,
                                            uint32_t num_blocks, ScratchArena& arena,
                                            cudaStream_t stream);

// The recursive Parallel Merge Find of section 7 (kernels/merge_find.cuh) on two sorted lists:
// lower_bound[i] = the first j with b[j] >= a[i] (b_len when none) and found[i] = 1 when b[j] ==
// a[i], for every i < a_len. `levels` levels of splitters, 0 to kMaxMergeFindLevels: 0 is the
// direct algorithm (every element binary-searches all of b); L >= 1 places splitters every 32^L,
// ..., 32 elements of a, each level searching between its parent splitters' bounds. Launches only.
inline constexpr int kMaxMergeFindLevels = 4;
absl::Status MergeFind(const uint32_t* a, uint32_t a_len, const uint32_t* b, uint32_t b_len,
                       int levels, uint32_t* lower_bound, uint32_t* found, ScratchArena& arena,
                       cudaStream_t stream);

// How the AND finds its candidates in a longer list's decoded blocks: the located-block search
// (each candidate searches the block PMF found for it: SearchInPlaceAndCompact, below), or the
// recursive merge-find with 0..kMaxMergeFindLevels levels (IntersectAndCompact).
inline constexpr int kLocatedBlockSearch = -1;

// Finds each candidate in the decoded selected blocks (block s at decoded + s * block_size) by the
// recursive merge-find with merge_find_levels (0..kMaxMergeFindLevels) levels against all decoded
// blocks (which pads `decoded`'s unused entries), and keeps those found: the surviving candidates
// go to cand_out, compacted in order, with `rows` rows of posting positions (stride `stride`) from
// pos_in to pos_out; the new row `rows` - 1 is this list's positions. Synchronizes the stream
// and returns the number of survivors.
absl::StatusOr<uint32_t> IntersectAndCompact(const uint32_t* cand, uint32_t n,
                                             const BlockSelection& selection, uint32_t* decoded,
                                             uint32_t block_size, uint32_t num_blocks,
                                             uint32_t num_postings, int merge_find_levels,
                                             uint32_t* pos_in, uint32_t* pos_out, uint32_t rows,
                                             uint64_t stride, uint32_t* cand_out,
                                             ScratchArena& arena, cudaStream_t stream);

// The AND's step over one longer list without a host round trip (sections 7 and 8), in three calls
// around an in-place decode:
//
//   LocateCandidateBlocks(cand, max_n, device_n, list.bases, nb, cand_block, entries, stream);
//   DecodePForBlocksInPlace(list, entries, max_n, device_n, kDocids, decoded, stream);
//   SearchInPlaceAndCompact(cand, max_n, device_n, cand_block, decoded, ..., device_n, ...);
//
// The candidate count stays on the device: the calls take an upper bound max_n (the launch size)
// and device_n (a device word, or null when max_n is exact), and the compaction writes the
// survivors' count back to a device word. Six launches a list and no synchronization (compacting
// the selected blocks and reading the count back took eleven and a synchronization).

// Parallel Merge Find of the sorted candidates against the list's block boundaries:
// cand_block[i] = the block that can hold candidate i (num_blocks when none); entries[i] = that
// block at the first candidate in it, num_blocks for the rest (the entries DecodePForBlocksInPlace
// and DecodeRiceBlocksInPlace take). One launch.
absl::Status LocateCandidateBlocks(const uint32_t* cand, uint32_t max_n, const uint32_t* device_n,
                                   const uint32_t* bases, uint32_t num_blocks, uint32_t* cand_block,
                                   uint32_t* entries, cudaStream_t stream);

// Each candidate binary-searches its block where the in-place decode put it (decoded +
// k * block_size), and the survivors are compacted in order to cand_out with `rows` rows of posting
// positions, as IntersectAndCompact does (row rows - 1, this list's, is written into pos_in first).
// implicit_row0: pos_in's row 0 is not read; the lead list's positions are the candidates' indices
// (the first step after decoding the lead). The survivors' count goes to *count_out (which may be
// device_n). Four launches; never synchronizes.
absl::Status SearchInPlaceAndCompact(const uint32_t* cand, uint32_t max_n, const uint32_t* device_n,
                                     const uint32_t* cand_block, const uint32_t* decoded,
                                     uint32_t block_size, uint32_t num_blocks,
                                     uint32_t num_postings, uint32_t* pos_in, uint32_t* pos_out,
                                     uint32_t rows, uint64_t stride, bool implicit_row0,
                                     uint32_t* cand_out, uint32_t* count_out, ScratchArena& arena,
                                     cudaStream_t stream);

// Copies a device count to the host through `pinned` (pinned host memory for one word) and waits
// for the stream.
absl::StatusOr<uint32_t> ReadDeviceCount(const uint32_t* device_count, uint32_t* pinned,
                                         cudaStream_t stream);

// One AND term's scoring input: its frequencies and the survivors' posting positions in its list
// (null: survivor i is posting i, a query whose lead list is the only list).
struct AndScoreTerm {
  DeviceFreqList freqs;
  const uint32_t* positions = nullptr;
  float weighted_idf = 0.0f;
};

// BM25 of the n survivors docs[i] over `terms` summed in the given order (query-term order, the
// same floats in the same order as AddScores term by term), fetching each frequency from the
// compressed image (section 8), written straight as top-k keys (TopKHeapKeys, TopKRadixKeys). One
// launch per 16 terms.
absl::Status ScoreIntoKeys(const uint32_t* docs, uint32_t n, const std::vector<AndScoreTerm>& terms,
                           const float* norms, uint64_t* keys, ScratchArena& arena,
                           cudaStream_t stream);

// The dense bits (bit d % 32 of bits[d / 32]) of a WAH or PLWAH bitmap of num_rows rows whose
// canonical words (index/bitmap.h) are in device memory: every 32-bit word of bits is computed by
// its own thread from the one or two chunks it overlaps, found by a binary search in the scanned
// chunk counts of the words. `bits` holds ceil(num_rows / 32) words.
absl::Status ExpandBitmap(const uint32_t* words, uint32_t num_words, bool plwah, uint32_t num_rows,
                          uint32_t* bits, ScratchArena& arena, cudaStream_t stream);

// The empty key for each survivor docs[i] that `filter` (bit d of word d / 32) does not allow; a
// null filter allows all.
absl::Status MaskKeys(uint64_t* keys, const uint32_t* docs, uint32_t n, const uint32_t* filter,
                      cudaStream_t stream);

// A top-k hit as the device hands it back.
struct DeviceHit {
  uint32_t docid;
  float score;
};

// The k best (score > 0) of scores[0..n) for documents docs[i] (docs == nullptr: document i), in
// rank order (score descending, docID ascending), by a CUB radix sort of 64-bit keys (flipped
// score bits, docID). `host_keys` is pinned host memory for k + 1 words (TopKHostWords).
// Synchronizes the stream. *num_scored receives how many entries had a score.
inline constexpr uint64_t TopKHostWords(uint32_t k) { return uint64_t{k} + 1; }
// `filter` (bit d of word d / 32; null: all): only the documents it allows are ranked.
absl::StatusOr<std::vector<DeviceHit>> TopKRadix(const float* scores, const uint32_t* docs,
                                                 uint32_t n, uint32_t k, uint64_t* host_keys,
                                                 uint64_t* num_scored, ScratchArena& arena,
                                                 cudaStream_t stream,
                                                 const uint32_t* filter = nullptr);

// The same k hits by the multi-level max-heap of section 8 (groups of 512, as many levels as the
// count needs: 2 up to 262,144 entries, 3 up to 134 million) instead of a sort. Synchronizes once
//.
absl::StatusOr<std::vector<DeviceHit>> TopKHeap(const float* scores, const uint32_t* docs,
                                                uint32_t n, uint32_t k, uint64_t* host_keys,
                                                uint64_t* num_scored, ScratchArena& arena,
                                                cudaStream_t stream,
                                                const uint32_t* filter = nullptr);

// The same two on keys already built (ScoreIntoKeys); keys[0..n) are used as scratch.
absl::StatusOr<std::vector<DeviceHit>> TopKRadixKeys(uint64_t* keys, uint32_t n, uint32_t k,
                                                     uint64_t* host_keys, uint64_t* num_scored,
                                                     ScratchArena& arena, cudaStream_t stream);
absl::StatusOr<std::vector<DeviceHit>> TopKHeapKeys(uint64_t* keys, uint32_t n, uint32_t k,
                                                    uint64_t* host_keys, uint64_t* num_scored,
                                                    ScratchArena& arena, cudaStream_t stream);

}  // namespace tandem::gpu
