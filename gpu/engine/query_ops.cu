// Host orchestration of the query stages in gpu/kernels/query_kernels.cuh, with CUB for scans,
// selection and the top-k radix sort. Every launch names the caller's stream; temporaries come from
// the caller's ScratchArena.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>
#include <cub/device/device_select.cuh>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"
#include "gpu/engine/query_ops.h"
#include "gpu/kernels/heap_top_k.cuh"
#include "gpu/kernels/merge_find.cuh"
#include "gpu/kernels/query_kernels.cuh"

namespace tandem::gpu {
namespace {

using kernels::kQueryThreads;

// A grid-stride launch shape for n items: enough CTAs to fill an H100, no more.
dim3 Grid(uint64_t n) {
  const uint64_t ctas = (n + kQueryThreads - 1) / kQueryThreads;
  return dim3(static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(ctas, 4096))));
}

absl::Status CheckStream(cudaStream_t stream) {
  if (stream == nullptr) {
    return absl::InvalidArgumentError("the legacy default stream is not used; pass a stream");
  }
  return absl::OkStatus();
}

struct NotAllOnes {
  __host__ __device__ bool operator()(uint64_t key) const { return key != ~uint64_t{0}; }
};

// Exclusive sum of flags[0..n) into scan, CUB temporaries from the arena.
absl::Status ExclusiveSum(const uint32_t* flags, uint32_t* scan, uint32_t n, ScratchArena& arena,
                          cudaStream_t stream) {
  size_t temp_bytes = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(
      cub::DeviceScan::ExclusiveSum(nullptr, temp_bytes, flags, scan, static_cast<int>(n), stream));
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(char* temp, arena.Take<char>(temp_bytes));
  TANDEM_CUDA_RETURN_IF_ERROR(
      cub::DeviceScan::ExclusiveSum(temp, temp_bytes, flags, scan, static_cast<int>(n), stream));
  arena.Rollback(mark);  // stream order keeps the temporaries alive until the scan has run
  return absl::OkStatus();
}

std::vector<DeviceHit> KeysToHits(const uint64_t* keys, uint32_t count) {
  std::vector<DeviceHit> hits;
  hits.reserve(count);
  for (uint32_t i = 0; i < count; ++i) {
    const uint32_t bits = ~static_cast<uint32_t>(keys[i] >> 32);
    float score;
    static_assert(sizeof(score) == sizeof(bits));
    std::memcpy(&score, &bits, sizeof(score));
    hits.push_back({static_cast<uint32_t>(keys[i]), score});
  }
  return hits;
}

// Builds the top-k keys of scores[0..n) (docs == nullptr: document i) and hands them to
// TopKRadixKeys or TopKHeapKeys.
using TopKOfKeys = absl::StatusOr<std::vector<DeviceHit>> (*)(uint64_t*, uint32_t, uint32_t,
                                                              uint64_t*, uint64_t*, ScratchArena&,
                                                              cudaStream_t);
absl::StatusOr<std::vector<DeviceHit>> TopKOfScores(TopKOfKeys top_k, const float* scores,
                                                    const uint32_t* docs, uint32_t n, uint32_t k,
                                                    uint64_t* host_keys, uint64_t* num_scored,
                                                    ScratchArena& arena, cudaStream_t stream,
                                                    const uint32_t* filter) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  *num_scored = 0;
  if (n == 0 || k == 0) return std::vector<DeviceHit>();
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(uint64_t * keys, arena.Take<uint64_t>(n));
  kernels::BuildKeysKernel<<<Grid(n), kQueryThreads, 0, stream>>>(scores, docs, n, filter, keys);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  absl::StatusOr<std::vector<DeviceHit>> hits =
      top_k(keys, n, k, host_keys, num_scored, arena, stream);
  arena.Rollback(mark);
  return hits;
}

}  // namespace

absl::Status ExpandBitmap(const uint32_t* words, uint32_t num_words, bool plwah, uint32_t num_rows,
                          uint32_t* bits, ScratchArena& arena, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  const uint32_t num_bit_words = static_cast<uint32_t>((uint64_t{num_rows} + 31) / 32);
  if (num_words == 0) {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bits, 0, sizeof(uint32_t) * num_bit_words, stream));
    return absl::OkStatus();
  }
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(uint32_t * chunks, arena.Take<uint32_t>(num_words));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * starts, arena.Take<uint32_t>(num_words));
  kernels::BitmapWordChunksKernel<<<Grid(num_words), kQueryThreads, 0, stream>>>(words, num_words,
                                                                                 plwah, chunks);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  TANDEM_RETURN_IF_ERROR(ExclusiveSum(chunks, starts, num_words, arena, stream));
  if (num_bit_words > 0) {
    kernels::ExpandBitmapKernel<<<Grid(num_bit_words), kQueryThreads, 0, stream>>>(
        words, starts, num_words, plwah, num_bit_words, bits);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  arena.Rollback(mark);  // stream order keeps them alive until the kernels have run
  return absl::OkStatus();
}

absl::Status MaskKeys(uint64_t* keys, const uint32_t* docs, uint32_t n, const uint32_t* filter,
                      cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (n == 0 || filter == nullptr) return absl::OkStatus();
  kernels::MaskKeysKernel<<<Grid(n), kQueryThreads, 0, stream>>>(docs, n, filter, keys);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status ComputeDocNorms(const uint32_t* lengths, uint32_t num_docs, float k1, float b,
                             float avgdl, float* norms, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (num_docs == 0) return absl::OkStatus();
  kernels::DocNormsKernel<<<Grid(num_docs), kQueryThreads, 0, stream>>>(lengths, num_docs, k1, b,
                                                                        avgdl, norms);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status Iota(uint32_t* out, uint32_t n, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (n == 0) return absl::OkStatus();
  kernels::IotaKernel<<<Grid(n), kQueryThreads, 0, stream>>>(out, n);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status AccumulateTerm(const uint32_t* docids, const uint32_t* tf, uint32_t n,
                            float weighted_idf, const float* norms, float* acc,
                            cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (n == 0) return absl::OkStatus();
  kernels::AccumulateKernel<<<Grid(n), kQueryThreads, 0, stream>>>(docids, tf, n, weighted_idf,
                                                                   norms, acc);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status AddScores(const uint32_t* docs, const uint32_t* tf, uint32_t n, float weighted_idf,
                       const float* norms, float* scores, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (n == 0) return absl::OkStatus();
  kernels::AddScoresKernel<<<Grid(n), kQueryThreads, 0, stream>>>(docs, tf, n, weighted_idf, norms,
                                                                  scores);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::StatusOr<BlockSelection> SelectBlocks(const uint32_t* cand, uint32_t n, const uint32_t* bases,
                                            uint32_t num_blocks, ScratchArena& arena,
                                            cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (n == 0 || num_blocks == 0) return absl::InvalidArgumentError("empty block selection");
  BlockSelection s;
  s.max_selected = std::min(n, num_blocks);
  TANDEM_ASSIGN_OR_RETURN(s.cand_block, arena.Take<uint32_t>(n));
  TANDEM_ASSIGN_OR_RETURN(s.block_flag, arena.Take<uint32_t>(num_blocks));
  TANDEM_ASSIGN_OR_RETURN(s.block_slot, arena.Take<uint32_t>(num_blocks));
  TANDEM_ASSIGN_OR_RETURN(s.selected, arena.Take<uint32_t>(s.max_selected));
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(s.block_flag, 0, sizeof(uint32_t) * num_blocks, stream));
  kernels::LocateBlocksKernel<<<Grid(n), kQueryThreads, 0, stream>>>(cand, n, bases, num_blocks,
                                                                     s.cand_block, s.block_flag);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  TANDEM_RETURN_IF_ERROR(ExclusiveSum(s.block_flag, s.block_slot, num_blocks, arena, stream));
  kernels::FillKernel<<<Grid(s.max_selected), kQueryThreads, 0, stream>>>(
      s.selected, s.max_selected, num_blocks);
  kernels::ScatterBlocksKernel<<<Grid(num_blocks), kQueryThreads, 0, stream>>>(
      s.block_flag, s.block_slot, num_blocks, s.selected);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return s;
}

absl::Status MergeFind(const uint32_t* a, uint32_t a_len, const uint32_t* b, uint32_t b_len,
                       int levels, uint32_t* lower_bound, uint32_t* found, ScratchArena& arena,
                       cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (levels < 0 || levels > kMaxMergeFindLevels) {
    return absl::InvalidArgumentError(
        absl::StrCat("merge-find levels must be 0..", kMaxMergeFindLevels, ", got ", levels));
  }
  if (a_len == 0) return absl::OkStatus();
  const size_t mark = arena.mark();
  const uint32_t* parent = nullptr;
  uint32_t parent_stride = 0, parent_count = 0;
  // Splitter levels, sparsest first: strides F^levels, ..., F. A level whose stride exceeds the
  // list would hold a single splitter at a[0]; it is skipped.
  for (int level = levels; level >= 1; --level) {
    uint64_t stride = 1;
    for (int i = 0; i < level; ++i) stride *= kernels::kMergeFindFanout;
    if (stride >= a_len) continue;
    const uint32_t count = static_cast<uint32_t>((a_len + stride - 1) / stride);
    TANDEM_ASSIGN_OR_RETURN(uint32_t * bounds, arena.Take<uint32_t>(count));
    kernels::MergeFindLevelKernel<<<Grid(count), kQueryThreads, 0, stream>>>(
        a, a_len, static_cast<uint32_t>(stride), b, b_len, parent, parent_stride, parent_count,
        bounds, nullptr);
    parent = bounds;
    parent_stride = static_cast<uint32_t>(stride);
    parent_count = count;
  }
  kernels::MergeFindLevelKernel<<<Grid(a_len), kQueryThreads, 0, stream>>>(
      a, a_len, 1, b, b_len, parent, parent_stride, parent_count, lower_bound, found);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  arena.Rollback(mark);  // stream order keeps the splitter bounds alive until the last level ran
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> IntersectAndCompact(const uint32_t* cand, uint32_t n,
                                             const BlockSelection& selection, uint32_t* decoded,
                                             uint32_t block_size, uint32_t num_blocks,
                                             uint32_t num_postings, int merge_find_levels,
                                             uint32_t* pos_in, uint32_t* pos_out, uint32_t rows,
                                             uint64_t stride, uint32_t* cand_out,
                                             ScratchArena& arena, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (n == 0 || rows == 0) return absl::InvalidArgumentError("empty intersection");
  if (merge_find_levels < 0 || merge_find_levels > kMaxMergeFindLevels) {
    return absl::InvalidArgumentError(absl::StrCat(
        "IntersectAndCompact runs the merge-find with 0..", kMaxMergeFindLevels, " levels, got ",
        merge_find_levels, " (the located-block search is SearchInPlaceAndCompact)"));
  }
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(uint32_t * found, arena.Take<uint32_t>(n));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * scan, arena.Take<uint32_t>(n));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * total, arena.Take<uint32_t>(1));
  uint32_t* const positions = pos_in + (rows - 1) * stride;
  const uint64_t entries = uint64_t{selection.max_selected} * block_size;
  if (entries > UINT32_MAX) return absl::InvalidArgumentError("too many decoded entries");
  kernels::PadDecodedKernel<<<Grid(entries), kQueryThreads, 0, stream>>>(
      decoded, selection.selected, selection.max_selected, block_size, num_blocks, num_postings);
  TANDEM_RETURN_IF_ERROR(MergeFind(cand, n, decoded, static_cast<uint32_t>(entries),
                                   merge_find_levels, positions, found, arena, stream));
  kernels::SlotToPositionKernel<<<Grid(n), kQueryThreads, 0, stream>>>(
      positions, found, n, selection.selected, block_size);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  TANDEM_RETURN_IF_ERROR(ExclusiveSum(found, scan, n, arena, stream));
  kernels::CompactKernel<<<Grid(n), kQueryThreads, 0, stream>>>(
      found, scan, n, cand, cand_out, pos_in, pos_out, rows, stride, false, total);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  uint32_t survivors = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(&survivors, total, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  arena.Rollback(mark);
  return survivors;
}

absl::Status LocateCandidateBlocks(const uint32_t* cand, uint32_t max_n, const uint32_t* device_n,
                                   const uint32_t* bases, uint32_t num_blocks, uint32_t* cand_block,
                                   uint32_t* entries, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (num_blocks == 0) return absl::InvalidArgumentError("a list without blocks");
  if (max_n == 0) return absl::OkStatus();
  kernels::LocateEntriesKernel<<<Grid(max_n), kQueryThreads, 0, stream>>>(
      cand, max_n, device_n, bases, num_blocks, cand_block, entries);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status SearchInPlaceAndCompact(const uint32_t* cand, uint32_t max_n, const uint32_t* device_n,
                                     const uint32_t* cand_block, const uint32_t* decoded,
                                     uint32_t block_size, uint32_t num_blocks,
                                     uint32_t num_postings, uint32_t* pos_in, uint32_t* pos_out,
                                     uint32_t rows, uint64_t stride, bool implicit_row0,
                                     uint32_t* cand_out, uint32_t* count_out, ScratchArena& arena,
                                     cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (rows < (implicit_row0 ? 2u : 1u)) {
    return absl::InvalidArgumentError("too few rows of posting positions");
  }
  if (count_out == nullptr) return absl::InvalidArgumentError("no device word for the count");
  if (max_n == 0) {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(count_out, 0, sizeof(uint32_t), stream));
    return absl::OkStatus();
  }
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(uint32_t * found, arena.Take<uint32_t>(max_n));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * scan, arena.Take<uint32_t>(max_n));
  kernels::IntersectKernel<<<Grid(max_n), kQueryThreads, 0, stream>>>(
      cand, max_n, device_n, cand_block, decoded, block_size, num_blocks, num_postings, found,
      pos_in + (rows - 1) * stride);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  TANDEM_RETURN_IF_ERROR(ExclusiveSum(found, scan, max_n, arena, stream));
  kernels::CompactKernel<<<Grid(max_n), kQueryThreads, 0, stream>>>(
      found, scan, max_n, cand, cand_out, pos_in, pos_out, rows, stride, implicit_row0, count_out);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  arena.Rollback(mark);  // stream order keeps the flags alive until the compaction has run
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> ReadDeviceCount(const uint32_t* device_count, uint32_t* pinned,
                                         cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(pinned, device_count, sizeof(uint32_t), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return *pinned;
}

absl::Status ScoreIntoKeys(const uint32_t* docs, uint32_t n, const std::vector<AndScoreTerm>& terms,
                           const float* norms, uint64_t* keys, ScratchArena& arena,
                           cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  if (terms.empty()) return absl::InvalidArgumentError("no terms to score");
  if (n == 0) return absl::OkStatus();
  const size_t mark = arena.mark();
  float* partial = nullptr;  // running sums between launches, for more than one batch of terms
  if (terms.size() > kernels::kScoreTermsPerLaunch) {
    TANDEM_ASSIGN_OR_RETURN(partial, arena.Take<float>(n));
  }
  for (size_t first = 0; first < terms.size(); first += kernels::kScoreTermsPerLaunch) {
    kernels::ScoreTermBatch batch{};
    batch.count = static_cast<uint32_t>(
        std::min<size_t>(kernels::kScoreTermsPerLaunch, terms.size() - first));
    for (uint32_t t = 0; t < batch.count; ++t) {
      const AndScoreTerm& term = terms[first + t];
      if (term.freqs.image == nullptr) {
        return absl::InvalidArgumentError("an AND term without its frequencies on the device");
      }
      batch.term[t] = {term.freqs.desc, term.freqs.image, term.positions, term.weighted_idf};
    }
    const bool last = first + batch.count == terms.size();
    kernels::ScoreKeysKernel<<<Grid(n), kQueryThreads, 0, stream>>>(
        docs, n, batch, norms, partial, first == 0, last ? keys : nullptr);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }
  arena.Rollback(mark);  // stream order keeps the partial sums alive until the last launch ran
  return absl::OkStatus();
}

absl::StatusOr<std::vector<DeviceHit>> TopKRadix(const float* scores, const uint32_t* docs,
                                                 uint32_t n, uint32_t k, uint64_t* host_keys,
                                                 uint64_t* num_scored, ScratchArena& arena,
                                                 cudaStream_t stream, const uint32_t* filter) {
  return TopKOfScores(TopKRadixKeys, scores, docs, n, k, host_keys, num_scored, arena, stream,
                      filter);
}

absl::StatusOr<std::vector<DeviceHit>> TopKRadixKeys(uint64_t* keys, uint32_t n, uint32_t k,
                                                     uint64_t* host_keys, uint64_t* num_scored,
                                                     ScratchArena& arena, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  std::vector<DeviceHit> hits;
  *num_scored = 0;
  if (n == 0 || k == 0) return hits;
  const size_t mark = arena.mark();
  TANDEM_ASSIGN_OR_RETURN(uint64_t * kept, arena.Take<uint64_t>(n));
  TANDEM_ASSIGN_OR_RETURN(uint32_t * d_count, arena.Take<uint32_t>(1));

  // Keep the scored entries (cub::DeviceSelect), then sort only those.
  size_t select_bytes = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceSelect::If(nullptr, select_bytes, keys, kept, d_count,
                                                    static_cast<int>(n), NotAllOnes(), stream));
  TANDEM_ASSIGN_OR_RETURN(char* select_temp, arena.Take<char>(select_bytes));
  TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceSelect::If(select_temp, select_bytes, keys, kept, d_count,
                                                    static_cast<int>(n), NotAllOnes(), stream));
  TANDEM_ASSIGN_OR_RETURN(const uint32_t count,
                          ReadDeviceCount(d_count, reinterpret_cast<uint32_t*>(host_keys), stream));
  *num_scored = count;
  if (count == 0) {
    arena.Rollback(mark);
    return hits;
  }

  // Sorted keys go back into `keys` (free again once the selection ran).
  size_t sort_bytes = 0;
  TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortKeys(
      nullptr, sort_bytes, kept, keys, static_cast<int>(count), 0, 64, stream));
  TANDEM_ASSIGN_OR_RETURN(char* sort_temp, arena.Take<char>(sort_bytes));
  TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceRadixSort::SortKeys(
      sort_temp, sort_bytes, kept, keys, static_cast<int>(count), 0, 64, stream));
  const uint32_t take = std::min(count, k);
  TANDEM_CUDA_RETURN_IF_ERROR(
      cudaMemcpyAsync(host_keys, keys, sizeof(uint64_t) * take, cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  arena.Rollback(mark);
  return KeysToHits(host_keys, take);
}

absl::StatusOr<std::vector<DeviceHit>> TopKHeap(const float* scores, const uint32_t* docs,
                                                uint32_t n, uint32_t k, uint64_t* host_keys,
                                                uint64_t* num_scored, ScratchArena& arena,
                                                cudaStream_t stream, const uint32_t* filter) {
  return TopKOfScores(TopKHeapKeys, scores, docs, n, k, host_keys, num_scored, arena, stream,
                      filter);
}

absl::StatusOr<std::vector<DeviceHit>> TopKHeapKeys(uint64_t* keys, uint32_t n, uint32_t k,
                                                    uint64_t* host_keys, uint64_t* num_scored,
                                                    ScratchArena& arena, cudaStream_t stream) {
  using kernels::kHeapGroup;
  TANDEM_RETURN_IF_ERROR(CheckStream(stream));
  *num_scored = 0;
  if (n == 0 || k == 0) return std::vector<DeviceHit>();
  const size_t mark = arena.mark();
  kernels::HeapLevels h;
  h.level[0] = keys;
  h.size[0] = n;
  // One word of counters (scored, extracted) followed by the extracted keys, so that a single
  // copy brings both back.
  const uint32_t most = std::min(n, k);
  TANDEM_ASSIGN_OR_RETURN(uint64_t * result, arena.Take<uint64_t>(uint64_t{most} + 1));
  uint32_t* counters = reinterpret_cast<uint32_t*>(result);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(counters, 0, 2 * sizeof(uint32_t), stream));
  while (h.size[h.top] > kHeapGroup) {
    if (h.top == kernels::kHeapMaxLevels) return absl::InternalError("heap deeper than expected");
    const uint32_t groups = (h.size[h.top] + kHeapGroup - 1) / kHeapGroup;
    TANDEM_ASSIGN_OR_RETURN(h.level[h.top + 1], arena.Take<uint64_t>(groups));
    kernels::HeapBuildLevelKernel<<<groups, kHeapGroup, 0, stream>>>(
        h.level[h.top], h.size[h.top], h.level[h.top + 1], h.top == 0 ? counters : nullptr);
    ++h.top;
    h.size[h.top] = groups;
  }
  if (h.top == 0) {  // one group: count the scored entries into a scratch minimum
    TANDEM_ASSIGN_OR_RETURN(uint64_t * scratch_min, arena.Take<uint64_t>(1));
    kernels::HeapBuildLevelKernel<<<1, kHeapGroup, 0, stream>>>(h.level[0], n, scratch_min,
                                                                counters);
  }
  kernels::HeapExtractKernel<<<1, kHeapGroup, 0, stream>>>(h, most, result + 1, counters + 1);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
      host_keys, result, sizeof(uint64_t) * (uint64_t{most} + 1), cudaMemcpyDeviceToHost, stream));
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  arena.Rollback(mark);
  uint32_t host_counters[2];
  std::memcpy(host_counters, host_keys, sizeof(host_counters));
  *num_scored = host_counters[0];
  return KeysToHits(host_keys + 1, std::min(host_counters[1], most));
}

}  // namespace tandem::gpu
