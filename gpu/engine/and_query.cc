// The GPU engine's ranked AND (Ding et al. 2009, sections 7 and 8). Candidates start as the
// shortest list; each longer list keeps the candidates it holds, decoding only the blocks its
// Parallel Merge Find selects. Posting positions ride along with the survivors, so frequencies are
// fetched for the final survivors only, and scores are summed in query-term order as on the CPU.
//
// Two ways to find the candidates in a longer list's blocks (GpuQueryTuning::intersect_levels):
//   - the located-block search (the default): each candidate binary-searches the one block the
//     merge-find located for it, and the candidate count stays on the device between lists: six
//     launches a list sized for an upper bound, the count read once before scoring;
//   - the recursive merge-find of section 7 against all decoded blocks, which needs the exact count
//     on the host for its launch shapes and synchronizes per list.
// A query's launches are what bounds the GPU's AND throughput (the CUDA driver serializes launches
// from all threads), so they are kept few: 13 launches and copies and 2 synchronizations for two
// terms, 19 and 2 for three with the located search.
#include <algorithm>
#include <numeric>
#include <utility>

#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"
#include "gpu/engine/query_ops.h"
#include "gpu/engine/query_pipeline.h"

namespace tandem::gpu {
namespace {

// The candidates while the longer lists are intersected in: their docIDs (sorted) and, per list so
// far, a row of their posting positions (row r at pos + r * stride).
struct AndCandidates {
  uint32_t* cand = nullptr;
  uint32_t* cand_next = nullptr;
  uint32_t* pos = nullptr;
  uint32_t* pos_next = nullptr;
  uint32_t* device_n = nullptr;  // the count on the device (located search)
  uint32_t stride = 0;           // the lead list's length: the most candidates there can be
  uint32_t n = 0;                // the count; an upper bound while on_device
  bool on_device = false;        // *device_n holds the exact count
  // The lead's positions are the candidates' indices, not yet written into pos.
  bool row0_implicit = true;
};

absl::Status DecodeBlocksInPlace(const DeviceList& list, const uint32_t* entries,
                                 uint32_t max_entries, const uint32_t* device_count, uint32_t* out,
                                 cudaStream_t stream) {
  return list.codec == GpuCodec::kPFor
             ? DecodePForBlocksInPlace(list.pfor, entries, max_entries, device_count,
                                       DecodeOutput::kDocids, out, stream)
             : DecodeRiceBlocksInPlace(list.rice, entries, max_entries, device_count,
                                       DecodeOutput::kDocids, out, stream);
}

absl::Status DecodeSelectedBlocks(const DeviceList& list, const uint32_t* blocks, uint32_t count,
                                  uint32_t* out, cudaStream_t stream) {
  return list.codec == GpuCodec::kPFor
             ? DecodePForBlocks(list.pfor, blocks, count, DecodeOutput::kDocids, out, stream)
             : DecodeRiceBlocks(list.rice, blocks, count, DecodeOutput::kDocids, out, stream);
}

// One longer list by the located-block search, with no host synchronization: locate each
// candidate's block, decode the located blocks where a whole-list decode puts them, search and
// compact. `rows`: position rows after this list.
absl::Status IntersectLocated(const DeviceList& list, uint32_t rows, AndCandidates& c,
                              QueryContext& qc) {
  const uint32_t* count_in = c.on_device ? c.device_n : nullptr;
  TANDEM_ASSIGN_OR_RETURN(uint32_t * cand_block, qc.arena.Take<uint32_t>(c.n));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * entries, qc.arena.Take<uint32_t>(c.n));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * decoded,
                          qc.arena.Take<uint32_t>(uint64_t{list.num_blocks} * list.block_size));
  TANDEM_RETURN_IF_ERROR(LocateCandidateBlocks(c.cand, c.n, count_in, list.bases, list.num_blocks,
                                               cand_block, entries, qc.stream));
  qc.timer.Mark(GpuStage::kIntersect);
  TANDEM_RETURN_IF_ERROR(DecodeBlocksInPlace(list, entries, c.n, count_in, decoded, qc.stream));
  qc.timer.Mark(GpuStage::kDecode);
  TANDEM_RETURN_IF_ERROR(
      SearchInPlaceAndCompact(c.cand, c.n, count_in, cand_block, decoded, list.block_size,
                              list.num_blocks, list.num_postings, c.pos, c.pos_next, rows, c.stride,
                              c.row0_implicit, c.cand_next, c.device_n, qc.arena, qc.stream));
  qc.timer.Mark(GpuStage::kIntersect);
  c.n = std::min(c.n, list.num_postings);
  c.on_device = true;
  return absl::OkStatus();
}

// One longer list by the recursive merge-find with `levels` levels against all selected blocks:
// select the blocks, decode them, intersect and compact; synchronizes for the new count.
absl::Status IntersectMergeFind(const DeviceList& list, uint32_t rows, int levels,
                                const uint32_t* iota, AndCandidates& c, QueryContext& qc) {
  if (c.row0_implicit) {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(c.pos, iota, sizeof(uint32_t) * c.stride,
                                                cudaMemcpyDeviceToDevice, qc.stream));
  }
  TANDEM_ASSIGN_OR_RETURN(
      BlockSelection selection,
      SelectBlocks(c.cand, c.n, list.bases, list.num_blocks, qc.arena, qc.stream));
  qc.timer.Mark(GpuStage::kIntersect);
  TANDEM_ASSIGN_OR_RETURN(
      uint32_t * decoded,
      qc.arena.Take<uint32_t>(uint64_t{selection.max_selected} * list.block_size));
  TANDEM_RETURN_IF_ERROR(
      DecodeSelectedBlocks(list, selection.selected, selection.max_selected, decoded, qc.stream));
  qc.timer.Mark(GpuStage::kDecode);
  TANDEM_ASSIGN_OR_RETURN(
      c.n, IntersectAndCompact(c.cand, c.n, selection, decoded, list.block_size, list.num_blocks,
                               list.num_postings, levels, c.pos, c.pos_next, rows, c.stride,
                               c.cand_next, qc.arena, qc.stream));
  qc.timer.Mark(GpuStage::kIntersect);
  return absl::OkStatus();
}

// BM25 of the survivors over every term in query-term order, straight into top-k keys, then the
// top-k. `row_of[q]`: the position row of query term q.
absl::StatusOr<std::vector<index::Hit>> ScoreSurvivors(const std::vector<DeviceTerm>& terms,
                                                       const std::vector<uint32_t>& row_of,
                                                       const AndCandidates& c,
                                                       const DocumentTables& tables, uint32_t k,
                                                       QueryContext& qc, index::QueryStats& stats) {
  std::vector<AndScoreTerm> score_terms(terms.size());
  for (size_t q = 0; q < terms.size(); ++q) {
    score_terms[q].freqs = terms[q].list->freqs;
    score_terms[q].positions = c.row0_implicit ? nullptr : c.pos + uint64_t{row_of[q]} * c.stride;
    score_terms[q].weighted_idf = terms[q].weighted_idf;
  }
  TANDEM_ASSIGN_OR_RETURN(uint64_t * keys, qc.arena.Take<uint64_t>(c.n));
  TANDEM_RETURN_IF_ERROR(
      ScoreIntoKeys(c.cand, c.n, score_terms, tables.norms, keys, qc.arena, qc.stream));
  TANDEM_RETURN_IF_ERROR(MaskKeys(keys, c.cand, c.n, tables.filter, qc.stream));
  qc.timer.Mark(GpuStage::kScore);
  uint64_t scored = 0;
  absl::StatusOr<std::vector<DeviceHit>> hits =
      UseHeap(qc.tuning.top_k, k)
          ? TopKHeapKeys(keys, c.n, k, qc.host_keys, &scored, qc.arena, qc.stream)
          : TopKRadixKeys(keys, c.n, k, qc.host_keys, &scored, qc.arena, qc.stream);
  if (!hits.ok()) return hits.status();
  qc.timer.Mark(GpuStage::kTopK);
  stats.documents_scored += c.n;
  return ToHits(*hits);
}

}  // namespace

absl::StatusOr<std::vector<index::Hit>> RunAnd(const std::vector<DeviceTerm>& terms,
                                               const DocumentTables& tables, uint32_t k,
                                               const index::SearchContext& context,
                                               QueryContext& qc, index::QueryStats& stats) {
  const size_t num_terms = terms.size();
  std::vector<size_t> order(num_terms);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return terms[a].list->num_postings < terms[b].list->num_postings;
  });
  std::vector<uint32_t> row_of(num_terms);  // term (query order) -> row of the positions matrix

  const DeviceList& lead = *terms[order[0]].list;
  AndCandidates c;
  c.stride = lead.num_postings;
  const size_t mark = qc.arena.mark();
  TANDEM_ASSIGN_OR_RETURN(c.cand, qc.arena.Take<uint32_t>(c.stride));
  TANDEM_ASSIGN_OR_RETURN(c.cand_next, qc.arena.Take<uint32_t>(c.stride));
  TANDEM_ASSIGN_OR_RETURN(c.pos, qc.arena.Take<uint32_t>(uint64_t{c.stride} * num_terms));
  TANDEM_ASSIGN_OR_RETURN(c.pos_next, qc.arena.Take<uint32_t>(uint64_t{c.stride} * num_terms));
  TANDEM_ASSIGN_OR_RETURN(c.device_n, qc.arena.Take<uint32_t>(1));
  TANDEM_RETURN_IF_ERROR(DecodeWholeList(lead, c.cand, qc.stream));
  qc.timer.Mark(GpuStage::kDecode);
  stats.postings_decoded += lead.num_postings;
  stats.blocks_decoded += lead.num_blocks;
  row_of[order[0]] = 0;
  c.n = c.stride;

  const int levels = qc.tuning.intersect_levels;
  for (size_t j = 1; j < num_terms && c.n > 0; ++j) {
    TANDEM_RETURN_IF_ERROR(context.Check());
    const DeviceList& list = *terms[order[j]].list;
    row_of[order[j]] = static_cast<uint32_t>(j);
    const size_t step_mark = qc.arena.mark();
    const uint32_t rows = static_cast<uint32_t>(j + 1);
    // Upper bound: the decode covers at most min(candidates, blocks) blocks.
    const uint32_t most_blocks = std::min(c.n, list.num_blocks);
    TANDEM_RETURN_IF_ERROR(levels == kLocatedBlockSearch
                               ? IntersectLocated(list, rows, c, qc)
                               : IntersectMergeFind(list, rows, levels, tables.iota, c, qc));
    c.row0_implicit = false;
    stats.blocks_decoded += most_blocks;
    stats.postings_decoded += uint64_t{most_blocks} * list.block_size;
    std::swap(c.cand, c.cand_next);
    std::swap(c.pos, c.pos_next);
    qc.arena.Rollback(step_mark);
  }
  if (c.on_device) {
    TANDEM_ASSIGN_OR_RETURN(
        c.n, ReadDeviceCount(c.device_n, reinterpret_cast<uint32_t*>(qc.host_keys), qc.stream));
  }
  std::vector<index::Hit> hits;
  if (c.n > 0) {
    TANDEM_ASSIGN_OR_RETURN(hits, ScoreSurvivors(terms, row_of, c, tables, k, qc, stats));
  }
  qc.arena.Rollback(mark);
  return hits;
}

}  // namespace tandem::gpu
