// File: query_pipeline.h
//
// The GPU engine's two query pipelines on a checked-out query context (Ding et al. 2009, sections
// 5-8): between the engine (gpu_engine.cc: the resolved query, the device cache, the document
// norms) and the device stages (query_ops.h, decode.h). Each returns the top-k hits in rank order
// and adds what it decoded and scored to `stats`; AND+OR is the engine's to compose. Compiled by
// g++ (C++20).
//
//   OR   or_query.cc: term at a time into one float accumulator per document, then the top-k.
//   AND  and_query.cc: lists shortest first, each longer list intersected in by the located-block
//        search or the recursive merge-find, then the survivors scored and the top-k.
//
//   TANDEM_ASSIGN_OR_RETURN(std::vector<index::Hit> hits,
//                           RunAnd(terms, tables, query.k, context, *lease, result.stats));
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "gpu/engine/device_index_cache.h"
#include "gpu/engine/gpu_engine.h"
#include "gpu/engine/query_context.h"
#include "gpu/engine/query_ops.h"
#include "gpu/layouts/decode.h"
#include "index/query.h"

namespace tandem::gpu {

// A resolved query term: its list in the device cache and weight(t) * idf(t).
struct DeviceTerm {
  std::shared_ptr<const DeviceList> list;
  float weighted_idf = 0.0f;
};

// What the pipelines need of the collection on the device.
struct DocumentTables {
  const float* norms = nullptr;    // BM25 length norm per document, for the query's parameters
  const uint32_t* iota = nullptr;  // 0, 1, ..., num_docs - 1: posting positions
  uint32_t num_docs = 0;
  // The query's filter as bits (bit d of word d / 32: document d allowed); null: no filter.
  const uint32_t* filter = nullptr;
};

// `terms` in query-term order: scores are summed in that order, as on the CPU.
absl::StatusOr<std::vector<index::Hit>> RunOr(const std::vector<DeviceTerm>& terms,
                                              const DocumentTables& tables, uint32_t k,
                                              const index::SearchContext& context, QueryContext& qc,
                                              index::QueryStats& stats);
absl::StatusOr<std::vector<index::Hit>> RunAnd(const std::vector<DeviceTerm>& terms,
                                               const DocumentTables& tables, uint32_t k,
                                               const index::SearchContext& context,
                                               QueryContext& qc, index::QueryStats& stats);

// Shared by the pipelines.
absl::Status DecodeWholeList(const DeviceList& list, uint32_t* out, cudaStream_t stream);
// Whether `method` selects the top-k by the multi-level heap (else the radix sort) for k.
bool UseHeap(TopKMethod method, uint32_t k);
std::vector<index::Hit> ToHits(const std::vector<DeviceHit>& device_hits);

}  // namespace tandem::gpu
