// The GPU engine's OR (Ding et al. 2009, sections 5 and 8): every posting of every term decoded and
// scored term at a time into one float accumulator per document, in query-term order, so every
// accumulator adds the same floats in the same order as the CPU engine's document-at-a-time sum;
// then the top-k over the accumulators.
#include <algorithm>

#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"
#include "gpu/engine/query_ops.h"
#include "gpu/engine/query_pipeline.h"

namespace tandem::gpu {

absl::StatusOr<std::vector<index::Hit>> RunOr(const std::vector<DeviceTerm>& terms,
                                              const DocumentTables& tables, uint32_t k,
                                              const index::SearchContext& context, QueryContext& qc,
                                              index::QueryStats& stats) {
  const uint32_t num_docs = tables.num_docs;
  uint32_t longest = 0;
  for (const DeviceTerm& t : terms) longest = std::max(longest, t.list->num_postings);
  const size_t mark = qc.arena.mark();
  TANDEM_ASSIGN_OR_RETURN(float* acc, qc.arena.Take<float>(num_docs));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * docids, qc.arena.Take<uint32_t>(longest));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * tf, qc.arena.Take<uint32_t>(longest));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(acc, 0, sizeof(float) * num_docs, qc.stream));
  qc.timer.Mark(GpuStage::kScore);
  for (const DeviceTerm& t : terms) {
    TANDEM_RETURN_IF_ERROR(context.Check());
    const DeviceList& list = *t.list;
    TANDEM_RETURN_IF_ERROR(DecodeWholeList(list, docids, qc.stream));
    qc.timer.Mark(GpuStage::kDecode);
    TANDEM_RETURN_IF_ERROR(FetchFreqs(list.freqs, tables.iota, list.num_postings, tf, qc.stream));
    TANDEM_RETURN_IF_ERROR(AccumulateTerm(docids, tf, list.num_postings, t.weighted_idf,
                                          tables.norms, acc, qc.stream));
    qc.timer.Mark(GpuStage::kScore);
    stats.postings_decoded += list.num_postings;
    stats.blocks_decoded += list.num_blocks;
  }
  uint64_t scored = 0;
  absl::StatusOr<std::vector<DeviceHit>> hits =
      UseHeap(qc.tuning.top_k, k) ? TopKHeap(acc, nullptr, num_docs, k, qc.host_keys, &scored,
                                             qc.arena, qc.stream, tables.filter)
                                  : TopKRadix(acc, nullptr, num_docs, k, qc.host_keys, &scored,
                                              qc.arena, qc.stream, tables.filter);
  if (!hits.ok()) return hits.status();
  qc.timer.Mark(GpuStage::kTopK);
  stats.documents_scored += scored;
  qc.arena.Rollback(mark);
  return ToHits(*hits);
}

}  // namespace tandem::gpu
