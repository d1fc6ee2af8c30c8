// File: batch_format.h
//
// What one batch of queries looks like in device memory (Ao et al. 2011, section 3.1: PARA, many
// queries answered by one launch sequence): the batch's terms and queries as plain arrays, with the
// work each launch divides among its threads. Built on the host by batch_query.cc, read by
// kernels/batch_kernels.cuh. Plain types: compiles as C++17 (nvcc) and C++20 (g++).
//
//   AND  one thread per posting of each query's shortest list (the paper's bijection between the
//        lead docIDs and GPU threads): query q owns threads [and_begin[q], and_begin[q + 1]).
//   OR   one block per range of kOrRangeDocs docIDs of each query: query q owns blocks
//        [or_begin[q], or_begin[q + 1]), and its candidates [or_cand_begin, + ranges * k).
#pragma once

#include <cstdint>

#include "gpu/list_format.h"
#include "gpu/search_form.h"

namespace tandem::gpu {

// Limits of the batch path; other queries take the per-query path.
inline constexpr uint32_t kMaxBatchTerms = 16;
inline constexpr uint32_t kMaxBatchK = 1000;
// DocIDs per OR accumulator block: 8,192 floats, 32 KB of shared memory.
inline constexpr uint32_t kOrRangeDocs = 8192;

// When a query's OR pass runs.
enum class OrPass : uint32_t {
  kNever = 0,
  kAlways = 1,      // OR queries, and AND+OR queries with a term the index lacks
  kIfAndShort = 2,  // AND+OR: only when its AND found fewer than k
};

struct BatchTerm {
  SearchForm form;  // the list's docIDs on the device, with its ranges
  FreqDesc freqs;   // its frequencies
  const uint32_t* freq_image = nullptr;
  float weighted_idf = 0;
};

struct BatchQuery {
  uint32_t first_term = 0;  // terms [first_term, first_term + num_terms), in query-term order
  uint32_t num_terms = 0;
  uint32_t k = 10;
  uint32_t run_and = 0;  // 1: an AND pass over its terms
  OrPass or_pass = OrPass::kNever;
  uint32_t or_cand_begin = 0;          // its OR candidates: or_ranges * k keys from here
  uint32_t or_ranges = 0;              // its range blocks (0 without an OR pass)
  uint32_t out_begin = 0;              // its top-k keys: k from here
  uint8_t order[kMaxBatchTerms] = {};  // term slots by increasing list length; order[0] leads
};

}  // namespace tandem::gpu
