// File: batch_query.h
//
// One batch of queries answered on the device by one launch sequence (Ao et al. 2011, section 3.1,
// PARA): the queries' resolved terms and lists are laid out (batch_format.h) in a context's pinned
// memory, copied up once, run (batch_ops.h), and the top-k of every query come back in one copy,
// the batch's only host synchronization. Host orchestration for GpuEngine::SearchBatch; compiled
// by g++ (C++20).
//
//   std::vector<BatchItem> items = ...;  // queries that fit the batch path, with their lists
//   TANDEM_RETURN_IF_ERROR(RunBatch(items, norms, live, num_docs, SearchRange::kHash16, *lease));
#pragma once

#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gpu/engine/device_index_cache.h"
#include "gpu/engine/query_context.h"
#include "gpu/layouts/search_form.h"
#include "index/query.h"
#include "index/resolved_query.h"

namespace tandem::gpu {

// One query of a batch: resolved (at least one term; no more than kMaxBatchTerms; k at most
// kMaxBatchK), its lists in query-term order with their search forms, and where its answer goes.
struct BatchItem {
  const index::ResolvedQuery* query = nullptr;
  std::vector<std::shared_ptr<const DeviceList>> lists;
  index::SearchResult* result = nullptr;
};

// Whether `query` can run in a batch (and so needs no per-query pass).
bool FitsBatch(const index::ResolvedQuery& query);

// What a batch of `items` needs: bytes of pinned host memory and of device scratch.
struct BatchFootprint {
  uint64_t host_bytes = 0;
  uint64_t device_bytes = 0;
};
BatchFootprint FootprintOf(const std::vector<BatchItem>& items, uint32_t num_docs);

// Runs `items` as one batch on `context` (whose host and scratch memory must hold FootprintOf) and
// fills each item's result: hits in rank order, executed mode, scored documents. Every item scores
// with `norms` (its BM25 parameters and average length) and matches only the documents `live`
// allows (null: all), as LaunchBatch.
absl::Status RunBatch(const std::vector<BatchItem>& items, const float* norms, const uint32_t* live,
                      uint32_t num_docs, SearchRange range, QueryContext& context);

}  // namespace tandem::gpu
