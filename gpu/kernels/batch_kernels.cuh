// File: kernels/batch_kernels.cuh
//
// The kernels of the batch path (Ao et al. 2011, section 3: many queries per launch; gpu/
// batch_format.h has the batch's layout):
//   BatchAndKernel     one thread per posting of each query's shortest list searches the other
//                      lists in a contracted range (search_range.cuh) and, when every list holds
//                      the docID, scores it over all terms in query-term order and appends its key;
//   BatchOrKernel      one block per range of kOrRangeDocs docIDs of a query: the terms' postings
//                      in the range add into an accumulator per document in shared memory, one term
//                      after another, then the block keeps its k best;
//   BatchTopKKernel    one block per query: the k best of its AND survivors or OR candidates.
// The k best of a block come from a radix select over the 64-bit top-k keys (TopKKey: flipped
// score, docID), which are unique within a query, so exactly k keys are at or below the k-th.
// Scores use the rounded BM25 of bm25.cuh, added in query-term order from 0, as the CPU
// engine adds them: bit-equal.
#pragma once

#include <cstdint>

#include "gpu/batch_format.h"
#include "gpu/kernels/bm25.cuh"
#include "gpu/kernels/freq_value.cuh"
#include "gpu/kernels/search_range.cuh"

namespace tandem::gpu::kernels {

inline constexpr int kBatchThreads = 256;
inline constexpr uint64_t kNoKey = ~uint64_t{0};

// The query owning unit t: the last q with begin[q] <= t (begin has num_queries + 1 entries).
__device__ __forceinline__ uint32_t OwnerOf(const uint32_t* __restrict__ begin,
                                            uint32_t num_queries, uint32_t t) {
  uint32_t lo = 0, hi = num_queries;  // the answer is in [lo, hi)
  while (hi - lo > 1) {
    const uint32_t mid = (lo + hi) / 2;
    if (__ldg(begin + mid) <= t) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return lo;
}

__global__ void __launch_bounds__(kBatchThreads)
    BatchAndKernel(const BatchQuery* __restrict__ queries, const uint32_t* __restrict__ and_begin,
                   uint32_t num_queries, const BatchTerm* __restrict__ terms,
                   const float* __restrict__ norms, SearchRange method, uint64_t* __restrict__ keys,
                   uint32_t* __restrict__ and_count) {
  const uint32_t total = and_begin[num_queries];
  for (uint32_t t = blockIdx.x * blockDim.x + threadIdx.x; t < total; t += gridDim.x * blockDim.x) {
    const uint32_t q = OwnerOf(and_begin, num_queries, t);
    const BatchQuery& query = queries[q];
    const BatchTerm* qt = terms + query.first_term;
    const uint32_t i = t - and_begin[q];
    const uint32_t lead = query.order[0];
    const uint32_t d = __ldg(qt[lead].form.docids + i);
    uint32_t pos[kMaxBatchTerms];
    pos[lead] = i;
    bool all = true;
    for (uint32_t s = 1; s < query.num_terms && all; ++s) {
      const uint32_t slot = query.order[s];
      const uint32_t p = FindDocid(qt[slot].form, method, d);
      all = p != UINT32_MAX;
      pos[slot] = p;
    }
    if (!all) continue;
    const float norm = __ldg(norms + d);
    float score = 0.0f;
    for (uint32_t slot = 0; slot < query.num_terms; ++slot) {
      score =
          __fadd_rn(score, Bm25(qt[slot].weighted_idf,
                                FetchFreq(qt[slot].freqs, qt[slot].freq_image, pos[slot]), norm));
    }
    keys[and_begin[q] + atomicAdd(and_count + q, 1u)] = TopKKey(score, d);
  }
}

// Shared state of BlockSelect.
struct SelectShared {
  uint32_t hist[256];
  uint32_t valid;
  uint32_t emitted;
  uint64_t prefix;
  uint64_t mask;
  uint32_t remaining;
};

// Writes the (at most) k smallest keys of key_at(j), j in [0, n), other than kNoKey, to out, in no
// particular order; returns how many (all threads get it). Called by every thread of the block.
template <typename KeyAt>
__device__ uint32_t BlockSelect(KeyAt key_at, uint32_t n, uint32_t k, uint64_t* __restrict__ out,
                                SelectShared& sh) {
  if (threadIdx.x == 0) {
    sh.valid = 0;
    sh.emitted = 0;
    sh.prefix = 0;
    sh.mask = 0;
    sh.remaining = k;
  }
  __syncthreads();
  uint32_t valid = 0;
  for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) valid += key_at(j) != kNoKey;
  if (valid > 0) atomicAdd(&sh.valid, valid);
  __syncthreads();
  const uint32_t total = sh.valid;
  if (total > k) {
    // The k-th smallest key, one 8-bit digit at a time from the top.
    for (int shift = 56; shift >= 0; shift -= 8) {
      for (uint32_t b = threadIdx.x; b < 256; b += blockDim.x) sh.hist[b] = 0;
      __syncthreads();
      const uint64_t prefix = sh.prefix, mask = sh.mask;
      for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) {
        const uint64_t key = key_at(j);
        if (key != kNoKey && (key & mask) == prefix) {
          atomicAdd(&sh.hist[(key >> shift) & 0xff], 1u);
        }
      }
      __syncthreads();
      if (threadIdx.x < 32) {
        // Warp scan over the 256 bins, 8 per lane, for the digit holding the remaining-th key.
        const uint32_t lane = threadIdx.x;
        uint32_t own = 0;
        for (int b = 0; b < 8; ++b) own += sh.hist[lane * 8 + b];
        uint32_t before = own;  // inclusive scan over lanes
        for (int o = 1; o < 32; o <<= 1) {
          const uint32_t v = __shfl_up_sync(0xffffffffu, before, o);
          if (lane >= static_cast<uint32_t>(o)) before += v;
        }
        before -= own;  // exclusive
        const uint32_t want = sh.remaining;
        __syncwarp();  // every lane has read it before one lane writes it
        const bool mine = before < want && want <= before + own;
        if (mine) {
          uint32_t below = before;
          int digit = lane * 8;
          while (below + sh.hist[digit] < want) below += sh.hist[digit++];
          sh.remaining = want - below;
          sh.prefix = prefix | (static_cast<uint64_t>(digit) << shift);
          sh.mask = mask | (uint64_t{0xff} << shift);
        }
      }
      __syncthreads();
    }
  }
  // Keys are unique, so exactly min(k, total) keys are at or below the k-th smallest.
  const uint64_t limit = total > k ? sh.prefix : kNoKey - 1;
  for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) {
    const uint64_t key = key_at(j);
    if (key != kNoKey && key <= limit) out[atomicAdd(&sh.emitted, 1u)] = key;
  }
  __syncthreads();
  return total > k ? k : total;
}

struct OrShared {
  float acc[kOrRangeDocs];
  SelectShared select;
  uint32_t lo, hi;
  uint32_t any;
};

// The position of the first docID >= x, narrowed by the list's finest hash buckets.
__device__ __forceinline__ uint32_t RangeStart(const SearchForm& f, uint32_t x) {
  const HashBuckets& b = f.hash[0];
  const uint32_t h = x >> b.shift;
  if (h >= b.num_buckets) return f.num_postings;
  return LowerBound(f.docids, {__ldg(b.starts + h), __ldg(b.starts + h + 1)}, x);
}

__global__ void __launch_bounds__(kBatchThreads)
    BatchOrKernel(const BatchQuery* __restrict__ queries, const uint32_t* __restrict__ or_begin,
                  uint32_t num_queries, const BatchTerm* __restrict__ terms,
                  const float* __restrict__ norms, uint32_t num_docs,
                  const uint32_t* __restrict__ and_count, uint64_t* __restrict__ candidates) {
  extern __shared__ __align__(16) unsigned char or_shared_memory[];
  OrShared& sh = *reinterpret_cast<OrShared*>(or_shared_memory);
  const uint32_t b = blockIdx.x;
  const uint32_t q = OwnerOf(or_begin, num_queries, b);
  const BatchQuery& query = queries[q];
  if (query.or_pass == OrPass::kIfAndShort && and_count[q] >= query.k) return;  // AND sufficed
  const uint32_t r = b - or_begin[q];
  const uint32_t base = r * kOrRangeDocs;
  const uint32_t width = min(kOrRangeDocs, num_docs - base);
  const BatchTerm* qt = terms + query.first_term;
  for (uint32_t j = threadIdx.x; j < kOrRangeDocs; j += blockDim.x) sh.acc[j] = 0.0f;
  if (threadIdx.x == 0) sh.any = 0;
  for (uint32_t slot = 0; slot < query.num_terms; ++slot) {
    const BatchTerm& term = qt[slot];
    if (threadIdx.x == 0) {
      sh.lo = RangeStart(term.form, base);
      sh.hi = RangeStart(term.form, base + width);
      if (sh.lo < sh.hi) sh.any = 1;
    }
    __syncthreads();
    const uint32_t lo = sh.lo, hi = sh.hi;
    for (uint32_t p = lo + threadIdx.x; p < hi; p += blockDim.x) {
      const uint32_t d = __ldg(term.form.docids + p);
      const uint32_t j = d - base;
      sh.acc[j] = __fadd_rn(
          sh.acc[j],
          Bm25(term.weighted_idf, FetchFreq(term.freqs, term.freq_image, p), __ldg(norms + d)));
    }
    __syncthreads();
  }
  if (sh.any == 0) return;  // no posting in this range
  uint64_t* out = candidates + query.or_cand_begin + uint64_t{r} * query.k;
  BlockSelect([&](uint32_t j) { return TopKKey(sh.acc[j], base + j); }, width, query.k, out,
              sh.select);
}

// Per query: which pass answers it (0: AND, 1: OR, 2: none) and its k best keys.
__global__ void __launch_bounds__(kBatchThreads)
    BatchTopKKernel(const BatchQuery* __restrict__ queries, const uint32_t* __restrict__ and_begin,
                    const uint64_t* __restrict__ and_keys, const uint32_t* __restrict__ and_count,
                    const uint64_t* __restrict__ candidates, uint64_t* __restrict__ out,
                    uint32_t* __restrict__ out_count, uint32_t* __restrict__ executed) {
  __shared__ SelectShared sh;
  const uint32_t q = blockIdx.x;
  const BatchQuery& query = queries[q];
  const bool and_answers =
      query.run_and != 0 && (query.or_pass == OrPass::kNever ||
                             (query.or_pass == OrPass::kIfAndShort && and_count[q] >= query.k));
  uint32_t count = 0;
  if (and_answers) {
    const uint64_t* src = and_keys + and_begin[q];
    count = BlockSelect([&](uint32_t j) { return src[j]; }, and_count[q], query.k,
                        out + query.out_begin, sh);
  } else if (query.or_pass != OrPass::kNever) {
    const uint64_t* src = candidates + query.or_cand_begin;
    count = BlockSelect([&](uint32_t j) { return src[j]; }, query.or_ranges * query.k, query.k,
                        out + query.out_begin, sh);
  }
  if (threadIdx.x == 0) {
    out_count[q] = count;
    executed[q] = and_answers ? 0u : (query.or_pass != OrPass::kNever ? 1u : 2u);
  }
}

}  // namespace tandem::gpu::kernels
