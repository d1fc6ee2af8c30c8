// File: kernels/batch_kernels.cuh
//
// The kernels of the batch path (Ao et al. 2011, section 3: many queries per launch; gpu/
// batch_format.h has the batch's layout):
//   BatchAndKernel        one block per kAndChunk postings of a query's shortest list, one thread
//                         per posting: it searches the other lists in a contracted range
//                         (search_range.cuh) and, when every list holds the docID, scores it over
//                         all terms in query-term order; the block keeps the k best of its chunk;
//   BatchPlanKernel       per query with an OR pass: theta from the AND's answer, the essential
//                         terms (MaxScore), and which OR pass runs;
//   BatchOrKernel         one block per range of kOrRangeDocs docIDs of a query: the terms'
//                         postings in the range add into an accumulator per document in shared
//                         memory, one term after another, then the block keeps its k best;
//   BatchCandidateKernel  one block per kAndChunk postings of an essential term: each posting's
//                         document, unless an essential term of lower bound holds it, is scored
//                         over every term that holds it, found by search;
//   BatchReduceKernel     one level of a top-k reduction: a block merges fan_in groups of k keys of
//                         one query into one; the last level writes each query's answer.
// The k best of a block come from a radix select over the 64-bit top-k keys (TopKKey: flipped
// score, docID), which are unique within a query, so exactly k keys are at or below the k-th. It
// starts at the first digit where the block's smallest and largest keys differ, stops as soon as
// the digit's whole bin is taken, and counts each warp's equal digits with one atomic.
// Scores use the rounded BM25 of bm25.cuh, added in query-term order from 0, as the CPU
// engine adds them: bit-equal.
// `live`, when not null, holds a bit per document (Allowed): a document whose bit is clear (deleted
// from a live index's segment) is neither a candidate nor scored, as a filter is in the per-query
// path, so a batch over a segment with deletes answers as one over its live documents.
#pragma once

#include <cstdint>

#include "gpu/batch/batch_format.h"
#include "gpu/kernels/bits.cuh"
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

// Shared state of BlockSelect.
struct SelectShared {
  uint32_t hist[256];
  unsigned long long lo, hi;  // smallest and largest valid key
  uint32_t valid;
  uint32_t emitted;
  uint64_t prefix;  // the digits chosen so far, above `shift`
  uint64_t limit;   // every key at or below it is selected
  uint32_t remaining;
  uint32_t done;
};

// Writes the (at most) k smallest keys of key_at(j), j in [0, n), other than kNoKey, to out, in no
// particular order, then kNoKey up to k when `pad`; returns how many keys it selected (all threads
// get it). Called by every thread of the block; key_at(j) is called for j < n only.
template <typename KeyAt>
__device__ uint32_t BlockSelect(KeyAt key_at, uint32_t n, uint32_t k, uint64_t* __restrict__ out,
                                bool pad, SelectShared& sh) {
  const uint32_t lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    sh.valid = 0;
    sh.emitted = 0;
    sh.lo = ~0ull;
    sh.hi = 0;
    sh.done = 0;
  }
  __syncthreads();
  {
    uint32_t valid = 0;
    unsigned long long lo = ~0ull, hi = 0;
    for (uint32_t j = threadIdx.x; j < n; j += blockDim.x) {
      const uint64_t key = key_at(j);
      if (key != kNoKey) {
        ++valid;
        lo = min(lo, static_cast<unsigned long long>(key));
        hi = max(hi, static_cast<unsigned long long>(key));
      }
    }
    for (int o = 16; o > 0; o /= 2) {
      valid += __shfl_down_sync(0xffffffffu, valid, o);
      lo = min(lo, __shfl_down_sync(0xffffffffu, lo, o));
      hi = max(hi, __shfl_down_sync(0xffffffffu, hi, o));
    }
    if (lane == 0 && valid > 0) {
      atomicAdd(&sh.valid, valid);
      atomicMin(&sh.lo, lo);
      atomicMax(&sh.hi, hi);
    }
  }
  __syncthreads();
  const uint32_t total = sh.valid;
  uint64_t limit = kNoKey - 1;  // every valid key
  if (total > k) {
    // Keys are unique, so lo < hi; the digits above the highest differing bit are common.
    const int top = 63 - __clzll(static_cast<long long>(sh.lo ^ sh.hi));
    int shift = top / 8 * 8;
    if (threadIdx.x == 0) {
      sh.prefix = shift >= 56 ? 0 : sh.lo & ~((uint64_t{1} << (shift + 8)) - 1);
      sh.remaining = k;
    }
    for (; shift >= 0; shift -= 8) {
      for (uint32_t b = threadIdx.x; b < 256; b += blockDim.x) sh.hist[b] = 0;
      __syncthreads();
      const uint64_t prefix = sh.prefix;
      const uint64_t above = shift >= 56 ? 0 : ~((uint64_t{1} << (shift + 8)) - 1);
      // Whole warps step together so that equal digits can share one atomic.
      for (uint32_t base = 0; base < n; base += blockDim.x) {
        const uint32_t j = base + threadIdx.x;
        uint32_t digit = 256;  // none
        if (j < n) {
          const uint64_t key = key_at(j);
          if (key != kNoKey && (key & above) == prefix) digit = (key >> shift) & 0xff;
        }
        const uint32_t same = __match_any_sync(0xffffffffu, digit);
        if (digit < 256 && lane == static_cast<uint32_t>(__ffs(same) - 1)) {
          atomicAdd(&sh.hist[digit], static_cast<uint32_t>(__popc(same)));
        }
      }
      __syncthreads();
      if (threadIdx.x < 32) {
        // Warp scan over the 256 bins, 8 per lane, for the digit holding the remaining-th key.
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
        if (before < want && want <= before + own) {
          uint32_t below = before;
          int digit = lane * 8;
          while (below + sh.hist[digit] < want) below += sh.hist[digit++];
          const uint64_t chosen = prefix | (static_cast<uint64_t>(digit) << shift);
          sh.prefix = chosen;
          sh.remaining = want - below;
          // The bin is taken whole, or this is the last digit: the k-th key is known.
          if (below + sh.hist[digit] == want || shift == 0) {
            sh.limit = chosen | ((uint64_t{1} << shift) - 1);
            sh.done = 1;
          }
        }
      }
      __syncthreads();
      if (sh.done) break;
    }
    limit = sh.limit;
  }
  // Exactly min(k, total) valid keys are at or below the limit.
  for (uint32_t base = 0; base < n; base += blockDim.x) {
    const uint32_t j = base + threadIdx.x;
    uint64_t key = kNoKey;
    if (j < n) key = key_at(j);
    const bool take = key != kNoKey && key <= limit;
    const uint32_t ballot = __ballot_sync(0xffffffffu, take);
    uint32_t first = 0;
    if (lane == 0 && ballot != 0) first = atomicAdd(&sh.emitted, __popc(ballot));
    first = __shfl_sync(0xffffffffu, first, 0);
    if (take) out[first + __popc(ballot & ((1u << lane) - 1))] = key;
  }
  const uint32_t count = total > k ? k : total;
  if (pad) {
    for (uint32_t j = count + threadIdx.x; j < k; j += blockDim.x) out[j] = kNoKey;
  }
  __syncthreads();
  return count;
}

// Where group `group` of query q's level-0 keys starts.
__device__ __forceinline__ uint64_t* GroupKeys(uint64_t* level0, const ReduceSpan* spans,
                                               uint32_t q, uint32_t k, uint32_t group) {
  return level0 + spans[q].key_begin + uint64_t{group} * k;
}

// Appends `key` (unless kNoKey) to a block's shared list; called by whole warps.
__device__ __forceinline__ void AppendKey(uint64_t key, uint64_t* keys, uint32_t* count) {
  const uint32_t lane = threadIdx.x % 32;
  const bool keep = key != kNoKey;
  const uint32_t ballot = __ballot_sync(0xffffffffu, keep);
  uint32_t first = 0;
  if (lane == 0 && ballot != 0) first = atomicAdd(count, __popc(ballot));
  first = __shfl_sync(0xffffffffu, first, 0);
  if (keep) keys[first + __popc(ballot & ((1u << lane) - 1))] = key;
}

// The document's score over the terms whose positions are known (UINT32_MAX: not in that list),
// added in query-term order from 0, as the CPU engine adds them.
__device__ __forceinline__ float ScoreAt(const BatchTerm* qt, uint32_t num_terms,
                                         const uint32_t* pos, float norm) {
  float score = 0.0f;
  for (uint32_t slot = 0; slot < num_terms; ++slot) {
    if (pos[slot] == UINT32_MAX) continue;
    score = __fadd_rn(score, Bm25(qt[slot].weighted_idf,
                                  FetchFreq(qt[slot].freqs, qt[slot].freq_image, pos[slot]), norm));
  }
  return score;
}

struct AndShared {
  uint64_t keys[kAndChunk];
  SelectShared select;
  uint32_t survivors;
};

__global__ void __launch_bounds__(kBatchThreads)
    BatchAndKernel(const BatchQuery* __restrict__ queries, const uint32_t* __restrict__ and_begin,
                   uint32_t num_queries, const BatchTerm* __restrict__ terms,
                   const float* __restrict__ norms, const uint32_t* __restrict__ live,
                   SearchRange method, const ReduceSpan* __restrict__ spans,
                   uint64_t* __restrict__ level0, uint32_t* __restrict__ and_count) {
  extern __shared__ __align__(16) unsigned char and_shared_memory[];
  AndShared& sh = *reinterpret_cast<AndShared*>(and_shared_memory);
  const uint32_t b = blockIdx.x;
  const uint32_t q = OwnerOf(and_begin, num_queries, b);
  const BatchQuery& query = queries[q];
  const BatchTerm* qt = terms + query.first_term;
  const uint32_t chunk = b - and_begin[q];
  const uint32_t lead = query.order[0];
  const uint32_t begin = chunk * kAndChunk;
  const uint32_t end = min(begin + kAndChunk, qt[lead].form.num_postings);
  if (threadIdx.x == 0) sh.survivors = 0;
  __syncthreads();
  // Whole warps step together so that a warp's survivors take their slots with one atomic.
  for (uint32_t base = begin; base < end; base += blockDim.x) {
    const uint32_t i = base + threadIdx.x;
    uint64_t key = kNoKey;
    if (i < end) {
      const uint32_t d = FormDocid(qt[lead].form, i);
      uint32_t pos[kMaxBatchTerms];
      pos[lead] = i;
      bool all = Allowed(live, d);
      for (uint32_t s = 1; s < query.num_terms && all; ++s) {
        const uint32_t slot = query.order[s];
        pos[slot] = FindDocid(qt[slot].form, method, d);
        all = pos[slot] != UINT32_MAX;
      }
      if (all) key = TopKKey(ScoreAt(qt, query.num_terms, pos, __ldg(norms + d)), d);
    }
    AppendKey(key, sh.keys, &sh.survivors);
  }
  __syncthreads();
  const uint32_t survivors = sh.survivors;
  if (threadIdx.x == 0 && survivors > 0) atomicAdd(and_count + q, survivors);
  BlockSelect([&](uint32_t j) { return sh.keys[j]; }, survivors, query.k,
              GroupKeys(level0, spans, q, query.k, chunk), /*pad=*/true, sh.select);
}

// Candidate blocks of the terms before by_bound position p (each term's postings in kAndChunk
// chunks).
__device__ __forceinline__ uint32_t ChunksOf(uint32_t postings) {
  return (postings + kAndChunk - 1) / kAndChunk;
}

// One thread per query. theta: the k-th score of the query's AND answer (reduction A's), when the
// AND found k documents: every one of them is an OR match with that score, so the OR's k-th score
// is at least theta. A document none of whose terms is essential scores below theta and cannot
// enter.
__global__ void BatchPlanKernel(const BatchQuery* __restrict__ queries, uint32_t num_queries,
                                const BatchTerm* __restrict__ terms,
                                const uint32_t* __restrict__ and_count,
                                const uint32_t* __restrict__ out_count,
                                const uint64_t* __restrict__ out, OrPlan* __restrict__ plans) {
  const uint32_t q = blockIdx.x * blockDim.x + threadIdx.x;
  if (q >= num_queries) return;
  const BatchQuery& query = queries[q];
  OrPlan plan;
  if (query.or_pass == OrPass::kNever ||
      (query.or_pass == OrPass::kIfAndShort && and_count[q] >= query.k)) {
    plans[q] = plan;
    return;
  }
  const BatchTerm* qt = terms + query.first_term;
  const uint32_t n = query.num_terms;
  if (query.run_and != 0 && out_count[q] >= query.k) {
    uint64_t last = 0;  // the k-th key: the largest of the answer's k
    for (uint32_t j = 0; j < query.k; ++j) last = max(last, out[query.out_begin + j]);
    if (last != kNoKey) plan.theta = __uint_as_float(~static_cast<uint32_t>(last >> 32));
  }
  uint32_t first = 0;
  if (plan.theta > 0.0f) {
    // At least the term of highest bound stays essential.
    while (first + 1 < n && query.bound_sum[first] <= plan.theta) ++first;
  }
  uint64_t all = 0, essential = 0;
  uint32_t chunk = 0;
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t postings = qt[query.by_bound[i]].form.num_postings;
    all += postings;
    if (i >= first) {
      essential += postings;
    } else {
      chunk += ChunksOf(postings);
    }
  }
  plan.first_essential = first;
  plan.essential_chunk = chunk;
  const uint64_t candidate_cost = essential * max(1u, n - 1) * kCandidateSearchCost;
  const uint64_t range_cost = all + uint64_t{query.or_ranges} * kRangeBlockCost;
  plan.path = candidate_cost < range_cost ? OrPath::kCandidates : OrPath::kRanges;
  plans[q] = plan;
}

struct OrShared {
  float acc[kOrRangeDocs];         // kUntouched, or the document's score so far
  uint16_t touched[kOrRangeDocs];  // the range's documents with a posting, in no order
  SelectShared select;
  uint32_t lo[kMaxBatchTerms], hi[kMaxBatchTerms];
  uint32_t num_touched;
};

// A document of the range no term has reached yet: -0.0f, which no sum from 0.0f can produce.
inline constexpr uint32_t kUntouched = 0x80000000u;

// The position of the first docID >= x, narrowed by the list's finest hash buckets.
__device__ __forceinline__ uint32_t RangeStart(const SearchForm& f, uint32_t x) {
  const HashBuckets& b = f.hash[0];
  const uint32_t h = x >> b.shift;
  if (h >= b.num_buckets) return f.num_postings;
  return LowerBound(f, {__ldg(b.starts + h), __ldg(b.starts + h + 1)}, x);
}

__global__ void __launch_bounds__(kBatchThreads)
    BatchOrKernel(const BatchQuery* __restrict__ queries, const uint32_t* __restrict__ or_begin,
                  uint32_t num_queries, const BatchTerm* __restrict__ terms,
                  const float* __restrict__ norms, const uint32_t* __restrict__ live,
                  uint32_t num_docs, const OrPlan* __restrict__ plans,
                  const ReduceSpan* __restrict__ spans, uint64_t* __restrict__ level0) {
  extern __shared__ __align__(16) unsigned char or_shared_memory[];
  OrShared& sh = *reinterpret_cast<OrShared*>(or_shared_memory);
  const uint32_t b = blockIdx.x;
  const uint32_t q = OwnerOf(or_begin, num_queries, b);
  // Another pass answers it: the reduction ignores these groups.
  if (plans[q].path != OrPath::kRanges) return;
  const BatchQuery& query = queries[q];
  const uint32_t r = b - or_begin[q];
  const uint32_t base = r * kOrRangeDocs;
  const uint32_t width = min(kOrRangeDocs, num_docs - base);
  const BatchTerm* qt = terms + query.first_term;
  uint64_t* out = GroupKeys(level0, spans, q, query.k, r);
  // Every term's postings in the range, found in parallel.
  if (threadIdx.x < 2 * query.num_terms) {
    const uint32_t slot = threadIdx.x / 2;
    const uint32_t x = threadIdx.x % 2 == 0 ? base : base + width;
    (threadIdx.x % 2 == 0 ? sh.lo : sh.hi)[slot] = RangeStart(qt[slot].form, x);
  }
  if (threadIdx.x == 0) sh.num_touched = 0;
  __syncthreads();
  bool any = false;
  for (uint32_t slot = 0; slot < query.num_terms; ++slot) any = any || sh.lo[slot] < sh.hi[slot];
  if (!any) {  // no posting in this range
    for (uint32_t j = threadIdx.x; j < query.k; j += blockDim.x) out[j] = kNoKey;
    return;
  }
  for (uint32_t j = threadIdx.x; j < width; j += blockDim.x) {
    sh.acc[j] = __uint_as_float(kUntouched);
  }
  __syncthreads();
  const uint32_t lane = threadIdx.x % 32;
  for (uint32_t slot = 0; slot < query.num_terms; ++slot) {
    const BatchTerm& term = qt[slot];
    const uint32_t lo = sh.lo[slot], hi = sh.hi[slot];
    // Each document is in a list once, so a term's adds never collide; terms go one at a time.
    for (uint32_t p0 = lo; p0 < hi; p0 += blockDim.x) {
      const uint32_t p = p0 + threadIdx.x;
      bool first = false;
      uint32_t j = 0;
      const uint32_t d = p < hi ? FormDocid(term.form, p) : 0;
      if (p < hi && Allowed(live, d)) {  // a deleted document is never touched
        j = d - base;
        const float before = sh.acc[j];
        first = __float_as_uint(before) == kUntouched;
        sh.acc[j] = __fadd_rn(
            first ? 0.0f : before,
            Bm25(term.weighted_idf, FetchFreq(term.freqs, term.freq_image, p), __ldg(norms + d)));
      }
      const uint32_t ballot = __ballot_sync(0xffffffffu, first);
      uint32_t at = 0;
      if (lane == 0 && ballot != 0) at = atomicAdd(&sh.num_touched, __popc(ballot));
      at = __shfl_sync(0xffffffffu, at, 0);
      if (first) sh.touched[at + __popc(ballot & ((1u << lane) - 1))] = static_cast<uint16_t>(j);
    }
    __syncthreads();
  }
  BlockSelect(
      [&](uint32_t i) {
        const uint32_t j = sh.touched[i];
        return TopKKey(sh.acc[j], base + j);
      },
      sh.num_touched, query.k, out, /*pad=*/true, sh.select);
}

__global__ void __launch_bounds__(kBatchThreads)
    BatchCandidateKernel(const BatchQuery* __restrict__ queries,
                         const uint32_t* __restrict__ cand_begin, uint32_t num_queries,
                         const BatchTerm* __restrict__ terms, const float* __restrict__ norms,
                         const uint32_t* __restrict__ live, SearchRange method,
                         const OrPlan* __restrict__ plans, const ReduceSpan* __restrict__ spans,
                         uint64_t* __restrict__ level0) {
  extern __shared__ __align__(16) unsigned char cand_shared_memory[];
  AndShared& sh = *reinterpret_cast<AndShared*>(cand_shared_memory);
  const uint32_t b = blockIdx.x;
  const uint32_t q = OwnerOf(cand_begin, num_queries, b);
  const OrPlan plan = plans[q];
  const uint32_t r = b - cand_begin[q];
  // Another pass answers it, or a non-essential term's chunk: the reduction ignores the group.
  if (plan.path != OrPath::kCandidates || r < plan.essential_chunk) return;
  const BatchQuery& query = queries[q];
  const BatchTerm* qt = terms + query.first_term;
  const uint32_t n = query.num_terms;
  // The term of this chunk: position p in increasing-bound order.
  uint32_t p = 0, first_chunk = 0;
  while (p + 1 < n) {
    const uint32_t chunks = ChunksOf(qt[query.by_bound[p]].form.num_postings);
    if (r < first_chunk + chunks) break;
    first_chunk += chunks;
    ++p;
  }
  const uint32_t own = query.by_bound[p];
  const uint32_t begin = (r - first_chunk) * kAndChunk;
  const uint32_t end = min(begin + kAndChunk, qt[own].form.num_postings);
  if (threadIdx.x == 0) sh.survivors = 0;
  __syncthreads();
  for (uint32_t base = begin; base < end; base += blockDim.x) {
    const uint32_t i = base + threadIdx.x;
    uint64_t key = kNoKey;
    if (i < end) {
      const uint32_t d = FormDocid(qt[own].form, i);
      uint32_t pos[kMaxBatchTerms];
      for (uint32_t slot = 0; slot < n; ++slot) pos[slot] = UINT32_MAX;
      pos[own] = i;
      // An essential term of lower bound that holds d scores it instead; a deleted document, none.
      bool mine = Allowed(live, d);
      for (uint32_t e = plan.first_essential; e < p && mine; ++e) {
        mine = FindDocid(qt[query.by_bound[e]].form, method, d) == UINT32_MAX;
      }
      if (mine) {
        for (uint32_t e = 0; e < n; ++e) {
          if (e >= plan.first_essential && e <= p) continue;  // known absent, or own
          const uint32_t slot = query.by_bound[e];
          pos[slot] = FindDocid(qt[slot].form, method, d);
        }
        key = TopKKey(ScoreAt(qt, n, pos, __ldg(norms + d)), d);
      }
    }
    AppendKey(key, sh.keys, &sh.survivors);
  }
  __syncthreads();
  BlockSelect([&](uint32_t j) { return sh.keys[j]; }, sh.survivors, query.k,
              GroupKeys(level0, spans, q, query.k, query.or_ranges + r), /*pad=*/true, sh.select);
}

// One level of reduction A (the AND's groups) or B (the OR's). Block b merges up to fan_in groups
// of its query's level below into one group of this level. A query takes part in A when it runs
// an AND, in B when its plan has an OR path; other queries' blocks write nothing. With `first`,
// the level below is level 0, where B ignores the groups of the OR path not taken and of the
// non-essential terms. With `last`, this level is the answer: it also writes out_count and
// executed (0: AND, 1: OR).
__global__ void __launch_bounds__(kBatchThreads)
    BatchReduceKernel(const BatchQuery* __restrict__ queries,
                      const uint32_t* __restrict__ reduce_begin, uint32_t num_queries,
                      const ReduceSpan* __restrict__ below_spans,
                      const uint64_t* __restrict__ below, const ReduceSpan* __restrict__ spans,
                      uint64_t* __restrict__ level, const OrPlan* __restrict__ plans,
                      bool or_reduction, bool first, bool last, uint32_t* __restrict__ out_count,
                      uint32_t* __restrict__ executed) {
  __shared__ SelectShared sh;
  const uint32_t b = blockIdx.x;
  const uint32_t q = OwnerOf(reduce_begin, num_queries, b);
  const BatchQuery& query = queries[q];
  OrPath path = OrPath::kNone;
  if (or_reduction) {
    path = plans[q].path;
    if (path == OrPath::kNone) return;
  } else if (query.run_and == 0) {
    return;
  }
  const uint32_t k = query.k;
  const uint32_t r = b - reduce_begin[q];
  const ReduceSpan in = below_spans[q];
  const uint32_t g0 = min(r * query.fan_in, in.groups);
  const uint32_t g1 = min(g0 + query.fan_in, in.groups);
  // Level 0 of B: the groups [skip_lo, skip_hi) were not written.
  uint32_t skip_lo = 0, skip_hi = 0;
  if (first && path == OrPath::kRanges) {
    skip_lo = query.or_ranges;
    skip_hi = query.or_ranges + query.cand_chunks;
  } else if (first && path == OrPath::kCandidates) {
    skip_hi = query.or_ranges + plans[q].essential_chunk;
  }
  const uint64_t* src = below + in.key_begin + uint64_t{g0} * k;
  const uint32_t count = BlockSelect(
      [&](uint32_t j) {
        const uint32_t g = g0 + j / k;
        return g >= skip_lo && g < skip_hi ? kNoKey : src[j];
      },
      (g1 - g0) * k, k, level + spans[q].key_begin + uint64_t{r} * k, /*pad=*/true, sh);
  if (last && threadIdx.x == 0) {
    out_count[q] = count;
    executed[q] = or_reduction ? 1u : 0u;
  }
}

}  // namespace tandem::gpu::kernels
