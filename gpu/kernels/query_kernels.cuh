// File: query_kernels.cuh
//
// The kernels of the GPU query pipeline (Ding et al. 2009, sections 7 and 8) other than list
// decoding: BM25 accumulation, Parallel Merge Find of candidates against block boundaries, the
// per-candidate intersection inside decoded blocks, compaction scatters and top-k key building.
//
// BM25 arithmetic uses the explicitly rounded intrinsics (__fmul_rn, __fdiv_rn, ...) so nvcc never
// contracts it into FMAs: every value is the IEEE float result of the same operations, in the same
// order, as index/bm25.h computes on the host, which is what makes the GPU's scores bit-equal to
// the CPU engine's.
#pragma once

#include <cstdint>

#include "gpu/kernels/bitmap_chunks.cuh"
#include "gpu/kernels/bits.cuh"
#include "gpu/kernels/bm25.cuh"
#include "gpu/kernels/freq_value.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

inline constexpr int kQueryThreads = 256;

// How many candidates a launch sized for max_n works on: *device_n when the count stays on the
// device (set by an earlier launch on the stream), else max_n.
__device__ __forceinline__ uint32_t CandidateCount(uint32_t max_n,
                                                   const uint32_t* __restrict__ device_n) {
  return device_n == nullptr ? max_n : min(max_n, *device_n);
}

__global__ void DocNormsKernel(const uint32_t* __restrict__ lengths, uint32_t n, float k1, float b,
                               float avgdl, float* __restrict__ out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = DocNorm(lengths[i], k1, b, avgdl);
  }
}

// Term-at-a-time OR: acc[docids[i]] += score. A list holds each docID once, so no atomics; terms
// run one launch after another on one stream, so each accumulator sums in query-term order.
__global__ void AccumulateKernel(const uint32_t* __restrict__ docids,
                                 const uint32_t* __restrict__ tf, uint32_t n, float weighted_idf,
                                 const float* __restrict__ norms, float* __restrict__ acc) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t d = docids[i];
    acc[d] = __fadd_rn(acc[d], Bm25(weighted_idf, tf[i], norms[d]));
  }
}

// AND scoring of survivors, one term per launch in query-term order: scores[i] += score.
__global__ void AddScoresKernel(const uint32_t* __restrict__ docs, const uint32_t* __restrict__ tf,
                                uint32_t n, float weighted_idf, const float* __restrict__ norms,
                                float* __restrict__ scores) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    scores[i] = __fadd_rn(scores[i], Bm25(weighted_idf, tf[i], norms[docs[i]]));
  }
}

// The one block of a list that can hold docID d. Block k holds docIDs in (bases[k], bases[k+1]], so
// it is the first k with bases[k + 1] >= d; num_blocks when d is past the list's last docID.
__device__ __forceinline__ uint32_t LocateBlock(const uint32_t* __restrict__ bases,
                                                uint32_t num_blocks, uint32_t d) {
  uint32_t lo = 0, hi = num_blocks;
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (bases[mid + 1] >= d) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

// Parallel Merge Find (section 7): each candidate finds, by binary search over the list's block
// boundaries, the one block that can hold it. Marks the blocks to decode in block_flag (zeroed by
// the caller).
__global__ void LocateBlocksKernel(const uint32_t* __restrict__ cand, uint32_t n,
                                   const uint32_t* __restrict__ bases, uint32_t num_blocks,
                                   uint32_t* __restrict__ cand_block,
                                   uint32_t* __restrict__ block_flag) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t lo = LocateBlock(bases, num_blocks, cand[i]);
    cand_block[i] = lo;
    if (lo < num_blocks) block_flag[lo] = 1;
  }
}

// The same location for sorted candidates, naming each block for an in-place decode at its first
// candidate only: entries[i] = cand_block[i] when candidate i - 1 lies in an earlier block (or i is
// 0), else num_blocks. Candidate i - 1 < cand[i] lies in the same block k exactly when it is above
// bases[k] (block 0 takes every docID up to bases[1]), so no flags, scan or compaction are needed.
__global__ void LocateEntriesKernel(const uint32_t* __restrict__ cand, uint32_t max_n,
                                    const uint32_t* __restrict__ device_n,
                                    const uint32_t* __restrict__ bases, uint32_t num_blocks,
                                    uint32_t* __restrict__ cand_block,
                                    uint32_t* __restrict__ entries) {
  const uint32_t n = CandidateCount(max_n, device_n);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t k = LocateBlock(bases, num_blocks, cand[i]);
    cand_block[i] = k;
    const bool first_in_block = k < num_blocks && (i == 0 || (k > 0 && cand[i - 1] <= bases[k]));
    entries[i] = first_in_block ? k : num_blocks;
  }
}

// selected[slot[k]] = k for every flagged block; the rest of `selected` was filled with num_blocks
// (decoders skip those entries).
__global__ void ScatterBlocksKernel(const uint32_t* __restrict__ block_flag,
                                    const uint32_t* __restrict__ block_slot, uint32_t num_blocks,
                                    uint32_t* __restrict__ selected) {
  for (uint32_t k = blockIdx.x * blockDim.x + threadIdx.x; k < num_blocks;
       k += gridDim.x * blockDim.x) {
    if (block_flag[k] != 0) selected[block_slot[k]] = k;
  }
}

__global__ void FillKernel(uint32_t* __restrict__ out, uint32_t n, uint32_t value) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = value;
  }
}

__global__ void IotaKernel(uint32_t* __restrict__ out, uint32_t n) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    out[i] = i;
  }
}

// Each candidate binary-searches the decoded block the PMF gave it, at k * block_size of `decoded`
// (decoded in place).
// found[i] = 1 and pos[i] = its posting position in the list when present. found[i] is written for
// every i < max_n, 0 past the candidate count, so a scan sized for max_n sees only the candidates.
__global__ void IntersectKernel(const uint32_t* __restrict__ cand, uint32_t max_n,
                                const uint32_t* __restrict__ device_n,
                                const uint32_t* __restrict__ cand_block,
                                const uint32_t* __restrict__ decoded, uint32_t block_size,
                                uint32_t num_blocks, uint32_t num_postings,
                                uint32_t* __restrict__ found, uint32_t* __restrict__ pos) {
  const uint32_t n = CandidateCount(max_n, device_n);
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < max_n; i += gridDim.x * blockDim.x) {
    const uint32_t k = i < n ? cand_block[i] : num_blocks;
    uint32_t hit = 0;
    if (k < num_blocks) {
      const uint32_t first = k * block_size;
      const uint32_t len = min(block_size, num_postings - first);
      const uint32_t* block = decoded + static_cast<uint64_t>(k) * block_size;
      const uint32_t d = cand[i];
      uint32_t lo = 0, hi = len;  // first j with block[j] >= d
      while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (block[mid] >= d) {
          hi = mid;
        } else {
          lo = mid + 1;
        }
      }
      if (lo < len && block[lo] == d) {
        hit = 1;
        pos[i] = first + lo;
      }
    }
    found[i] = hit;
  }
}

// Stable compaction of the surviving candidates and of `rows` rows of their posting positions
// (row r at pos_in + r * stride). With implicit_row0, row 0 is not read: it is the candidate's own
// index (the lead list's posting position, before any compaction). With count_out, the thread of
// the last entry writes the survivor count there.
__global__ void CompactKernel(const uint32_t* __restrict__ flags, const uint32_t* __restrict__ scan,
                              uint32_t n, const uint32_t* __restrict__ cand_in,
                              uint32_t* __restrict__ cand_out, const uint32_t* __restrict__ pos_in,
                              uint32_t* __restrict__ pos_out, uint32_t rows, uint64_t stride,
                              bool implicit_row0, uint32_t* __restrict__ count_out) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (count_out != nullptr && i == n - 1) *count_out = scan[i] + flags[i];
    if (flags[i] == 0) continue;
    const uint32_t j = scan[i];
    cand_out[j] = cand_in[i];
    uint32_t r = 0;
    if (implicit_row0) {
      pos_out[j] = i;
      r = 1;
    }
    for (; r < rows; ++r) pos_out[r * stride + j] = pos_in[r * stride + i];
  }
}

// keys[i] for scores[i] of document docs[i] (docs == nullptr: document i); a document the filter
// does not allow gets the empty key.
__global__ void BuildKeysKernel(const float* __restrict__ scores, const uint32_t* __restrict__ docs,
                                uint32_t n, const uint32_t* __restrict__ filter,
                                uint64_t* __restrict__ keys) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t d = docs == nullptr ? i : docs[i];
    keys[i] = Allowed(filter, d) ? TopKKey(scores[i], d) : ~uint64_t{0};
  }
}

// A filter bitmap (index/bitmap.h: 31 rows per chunk; a literal has bit 31 set, a fill holds its
// bit in bit 30 and a chunk count in bits 0-29, or in PLWAH bits 0-24 with the position + 1 of
// one flipped bit of the chunk after it in bits 25-29) expanded to dense bits.
// chunks[i]: how many chunks word i stands for.
__global__ void BitmapWordChunksKernel(const uint32_t* __restrict__ words, uint32_t n, bool plwah,
                                       uint32_t* __restrict__ chunks) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t w = words[i];
    if (w & 0x80000000u) {
      chunks[i] = 1;
    } else if (plwah) {
      chunks[i] = (w & 0x01FFFFFFu) + (((w >> 25) & 0x1Fu) != 0 ? 1u : 0u);
    } else {
      chunks[i] = w & 0x3FFFFFFFu;
    }
  }
}

// bits[j] holds rows 32j .. 32j + 31: the end of one chunk and the start of the next.
__global__ void ExpandBitmapKernel(const uint32_t* __restrict__ words,
                                   const uint32_t* __restrict__ starts, uint32_t n, bool plwah,
                                   uint32_t num_bit_words, uint32_t* __restrict__ bits) {
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < num_bit_words;
       j += gridDim.x * blockDim.x) {
    const uint64_t row = uint64_t{j} * 32;
    const uint64_t c = row / 31;
    const uint32_t offset = static_cast<uint32_t>(row % 31);
    const uint32_t first = ChunkPayload(words, starts, n, plwah, c);
    const uint32_t second = ChunkPayload(words, starts, n, plwah, c + 1);
    bits[j] = (first >> offset) | (second << (31 - offset));
  }
}

// The empty key for every survivor docs[i] the filter does not allow.
__global__ void MaskKeysKernel(const uint32_t* __restrict__ docs, uint32_t n,
                               const uint32_t* __restrict__ filter, uint64_t* __restrict__ keys) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    if (!Allowed(filter, docs[i])) keys[i] = ~uint64_t{0};
  }
}

// AND scoring straight from the compressed frequencies (section 8): one launch sums up to
// kScoreTermsPerLaunch terms for each survivor, in the batch's order (query-term order), fetching
// each frequency where the survivor's posting position says.
inline constexpr uint32_t kScoreTermsPerLaunch = 16;
struct ScoreTerm {
  FreqDesc freqs;
  const uint32_t* image;      // the frequency image in device memory
  const uint32_t* positions;  // survivor i's posting position in the list; null: i itself
  float weighted_idf;
};
struct ScoreTermBatch {
  ScoreTerm term[kScoreTermsPerLaunch];
  uint32_t count;
};

// s = (first ? 0 : partial[i]) + the batch's scores, added one term at a time with __fadd_rn as
// AddScoresKernel does; the last batch writes keys[i] = TopKKey(s, docs[i]), the others partial[i].
__global__ void ScoreKeysKernel(const uint32_t* __restrict__ docs, uint32_t n,
                                const ScoreTermBatch batch, const float* __restrict__ norms,
                                float* __restrict__ partial, bool first,
                                uint64_t* __restrict__ keys) {
  for (uint32_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    const uint32_t d = docs[i];
    const float norm = norms[d];
    float s = first ? 0.0f : partial[i];
    for (uint32_t t = 0; t < batch.count; ++t) {
      const ScoreTerm& term = batch.term[t];
      const uint32_t p = term.positions == nullptr ? i : term.positions[i];
      s = __fadd_rn(s, Bm25(term.weighted_idf, FetchFreq(term.freqs, term.image, p), norm));
    }
    if (keys != nullptr) {
      keys[i] = TopKKey(s, d);
    } else {
      partial[i] = s;
    }
  }
}

}  // namespace tandem::gpu::kernels
