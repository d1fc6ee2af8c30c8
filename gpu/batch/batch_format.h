// File: batch_format.h
//
// What one batch of queries looks like in device memory (Ao et al. 2011, section 3.1: PARA, many
// queries answered by one launch sequence): the batch's terms and queries as plain arrays, with the
// work each launch divides among its threads. Built on the host by batch_query.cc, read by
// kernels/batch_kernels.cuh. Plain types: compiles as C++17 (nvcc) and C++20 (g++).
//
//   AND         one thread per posting of each query's shortest list (the paper's bijection
//               between the lead docIDs and GPU threads), kAndChunk postings to a block: query q
//               owns blocks [and_begin[q], and_begin[q + 1]), and each block keeps its chunk's k
//               best. OR queries of several terms run it too: its k-th score is the threshold
//               theta their OR pass prunes with.
//   plan        per query with an OR pass: theta, the first essential term (MaxScore: the terms of
//               lowest score bound whose bounds add up to at most theta cannot lift a document
//               into the top-k by themselves) and which OR pass runs (OrPlan).
//   OR ranges   one block per range of kOrRangeDocs docIDs of a query: every posting of its terms
//               in the range adds into shared-memory accumulators; the block keeps its k best.
//   OR cands    one block per kAndChunk postings of each term, in order of increasing bound: the
//               essential terms' postings are the candidates; each is scored by searching the
//               other lists (as the AND does) by the first essential list that holds it.
//   top-k       the k best of every block form level 0 of a reduction: a group of k keys per
//               block. Each further level merges fan_in groups of the level below into one, with a
//               block per new group, until every query has one group: its answer. Two reductions
//               run: A over the AND's groups, then B over the OR's (range groups, then candidate
//               groups), whose answer replaces A's when the OR pass ran. Level l of reduction R for
//               query q has R.spans[l * num_queries + q].groups groups from key_begin and is built
//               by the blocks [R.reduce_begin[(l - 1) * (num_queries + 1) + q], ... + 1).
#pragma once

#include <cstdint>

#include "gpu/layouts/list_format.h"
#include "gpu/layouts/search_form.h"

namespace tandem::gpu {

// Limits of the batch path; other queries take the per-query path.
inline constexpr uint32_t kMaxBatchTerms = 16;
inline constexpr uint32_t kMaxBatchK = 1000;
// DocIDs per OR accumulator block: 8,192 floats and their 16-bit indices, 48 KB of shared memory.
inline constexpr uint32_t kOrRangeDocs = 8192;
// Lead postings per AND block: their keys fit in 32 KB of shared memory.
inline constexpr uint32_t kAndChunk = 4096;
// Keys a reduction block merges: fan_in = max(2, kReduceKeys / k) groups of k.
inline constexpr uint32_t kReduceKeys = 4096;
// Levels of the reduction at most (fan_in >= 2 halves the groups at every level).
inline constexpr uint32_t kMaxReduceLevels = 24;

// When a query's OR pass runs.
enum class OrPass : uint32_t {
  kNever = 0,
  kAlways = 1,      // OR queries, and AND+OR queries with a term the index lacks
  kIfAndShort = 2,  // AND+OR: only when its AND found fewer than k
};

// How the OR pass of a query prunes and runs, set on the device by the plan kernel.
enum class OrPath : uint32_t {
  kNone = 0,        // no OR pass (or the AND answered)
  kRanges = 1,      // docID-range accumulators over every posting
  kCandidates = 2,  // the essential terms' postings, each scored by searches
};

// Per-document work a candidate costs relative to a posting added into a range accumulator, for
// each other term it searches; and a range block's fixed cost, in postings.
inline constexpr uint32_t kCandidateSearchCost = 4;
inline constexpr uint32_t kRangeBlockCost = 512;

struct BatchTerm {
  SearchForm form;  // the list's docIDs on the device, with its ranges
  FreqDesc freqs;   // its frequencies
  const uint32_t* freq_image = nullptr;
  float weighted_idf = 0;
  float bound = 0;  // an upper bound of its contribution to any document's score
};

struct OrPlan {
  OrPath path = OrPath::kNone;
  uint32_t first_essential = 0;  // position in BatchQuery::by_bound
  uint32_t essential_chunk = 0;  // the first candidate block of an essential term
  float theta = 0;
};

struct BatchQuery {
  uint32_t first_term = 0;  // terms [first_term, first_term + num_terms), in query-term order
  uint32_t num_terms = 0;
  uint32_t k = 10;
  uint32_t run_and = 0;  // 1: an AND pass over its terms
  OrPass or_pass = OrPass::kNever;
  uint32_t and_chunks = 0;   // its AND blocks (0 without an AND pass)
  uint32_t or_ranges = 0;    // its OR range blocks (0 without an OR pass)
  uint32_t cand_chunks = 0;  // its OR candidate blocks: every term's postings in kAndChunk chunks
  uint32_t fan_in = 2;       // groups of the level below merged into one
  uint32_t out_begin = 0;    // its answer: k keys from here
  uint8_t order[kMaxBatchTerms] = {};     // term slots by increasing list length; order[0] leads
  uint8_t by_bound[kMaxBatchTerms] = {};  // term slots by increasing bound
  // bound_sum[i]: the bounds of by_bound[0..i] added up, inflated by kBoundMargin.
  float bound_sum[kMaxBatchTerms] = {};
};

// Pruning compares sums of bounds with scores summed in another order: inflating the bounds by this
// relative margin (far above the few ulps the roundings can differ by) keeps every decision safe.
// The CPU engine's MaxScore uses the same margin.
inline constexpr float kBoundMargin = 1.0f + 1e-4f;

// Where one level of a query's reduction lies in that level's buffer.
struct ReduceSpan {
  uint32_t key_begin = 0;  // groups * k keys from here
  uint32_t groups = 0;
};

// Groups of level l + 1 from those of level l: every query has one group from level 1 on.
inline uint32_t NextGroups(uint32_t groups, uint32_t fan_in) {
  return groups <= fan_in ? 1u : (groups + fan_in - 1) / fan_in;
}

}  // namespace tandem::gpu
