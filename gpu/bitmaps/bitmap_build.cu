// File: bitmap_build.cu
//
// WAH and PLWAH bitmap indexes built on the GPU, after Fusco et al. 2013 ("Real-time creation of
// bitmap indexes on streaming network data"), Algorithm 1, with CUB for the sort, the
// reductions by key and the scans. The words are index/bitmap.h's canonical form, byte for byte
// what the CPU builder writes, which the paper's algorithm does not give by itself; where this
// goes beyond the paper:
// - 1-fills: runs of full chunks become 1-fills (the paper leaves them out, section 3.2
//   "Limitations"); document attributes are often clustered in docID order (mail by date).
// - Fills longer than one word holds (PLWAH's 25-bit count) are split, full words first, instead
//   of limiting the batch; every head computes its word count and a scan places it (the paper's
//   interleave-and-compact, generalized).
// - PLWAH also folds a literal with one zero bit into the 1-fill before it.
#include <algorithm>
#include <cstdint>
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_reduce.cuh>
#include <cub/device/device_scan.cuh>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "gpu/bitmaps/bitmap_build_device.h"
#include "gpu/device/cuda_status.h"

namespace tandem::gpu {
namespace {

// index/bitmap.h's word format (kept in step with bitmap_word there; the GPU tests compare bytes).
constexpr uint32_t kRowsPerChunk = 31;
constexpr uint32_t kLiteralFlag = 0x80000000u;
constexpr uint32_t kFillBitFlag = 0x40000000u;
constexpr uint32_t kPayloadMask = 0x7FFFFFFFu;
constexpr uint32_t kPositionShift = 25;
constexpr uint32_t kWahMaxFill = 0x3FFFFFFFu;
constexpr uint32_t kPlwahMaxFill = 0x01FFFFFFu;

constexpr int kThreads = 256;

dim3 Grid(uint64_t n) {
  const uint64_t ctas = (n + kThreads - 1) / kThreads;
  return dim3(static_cast<unsigned>(std::max<uint64_t>(1, std::min<uint64_t>(ctas, 8192))));
}

#define TANDEM_GRID_STRIDE(i, n)                                              \
  for (uint64_t i = blockIdx.x * uint64_t{blockDim.x} + threadIdx.x; i < (n); \
       i += uint64_t{gridDim.x} * blockDim.x)

__global__ void IotaKernel(uint32_t* out, uint64_t n) {
  TANDEM_GRID_STRIDE(i, n) { out[i] = static_cast<uint32_t>(i); }
}

// Step 3 (Algorithm 2): the (value, chunk id) key and the partial literal of each record.
__global__ void ChunkIdLiteralKernel(const uint32_t* values, const uint32_t* rids, uint64_t* keys,
                                     uint32_t* literals, uint64_t n) {
  TANDEM_GRID_STRIDE(i, n) {
    const uint32_t rid = rids[i];
    keys[i] = (uint64_t{values[i]} << 32) | (rid / kRowsPerChunk);
    literals[i] = 1u << (rid % kRowsPerChunk);
  }
}

__device__ inline uint32_t ValueOf(uint64_t key) { return static_cast<uint32_t>(key >> 32); }
__device__ inline uint32_t ChunkOf(uint64_t key) { return static_cast<uint32_t>(key); }

// Step 5, first half: a merged literal starts a run unless it is full and continues a full chunk
// of the same value just before it. heads[i] is 1 at run starts.
__global__ void RunHeadsKernel(const uint64_t* keys, const uint32_t* literals, uint32_t* heads,
                               uint64_t k) {
  TANDEM_GRID_STRIDE(i, k) {
    bool continues = false;
    if (i > 0 && literals[i] == kPayloadMask && literals[i - 1] == kPayloadMask) {
      continues =
          ValueOf(keys[i]) == ValueOf(keys[i - 1]) && ChunkOf(keys[i]) == ChunkOf(keys[i - 1]) + 1;
    }
    heads[i] = continues ? 0u : 1u;
  }
}

__global__ void CompactHeadsKernel(const uint32_t* heads, const uint32_t* head_index,
                                   uint32_t* head_at, uint64_t k) {
  TANDEM_GRID_STRIDE(i, k) {
    if (heads[i]) head_at[head_index[i]] = static_cast<uint32_t>(i);
  }
}

// What one run (a head) writes: the zero chunks before it, then a literal or a 1-fill.
struct Run {
  uint32_t value;
  uint32_t first_chunk;
  uint32_t chunks;   // > 1 only for 1-fills
  uint32_t literal;  // kPayloadMask for a 1-fill
  uint64_t gap;      // zero chunks since the value's previous run (or since chunk 0)
};

__device__ inline Run RunAt(const uint64_t* keys, const uint32_t* literals, const uint32_t* head_at,
                            uint64_t j, uint64_t m, uint64_t k) {
  Run run;
  const uint32_t at = head_at[j];
  run.value = ValueOf(keys[at]);
  run.first_chunk = ChunkOf(keys[at]);
  run.chunks = static_cast<uint32_t>((j + 1 < m ? head_at[j + 1] : k) - at);
  run.literal = literals[at];
  run.gap = run.first_chunk;
  if (j > 0) {
    const uint32_t prev = head_at[j - 1];
    if (ValueOf(keys[prev]) == run.value) {
      run.gap = run.first_chunk - (ChunkOf(keys[prev]) + (at - prev));
    }
  }
  return run;
}

__device__ inline bool SameValue(const uint64_t* keys, const uint32_t* head_at, uint64_t a,
                                 uint64_t b) {
  return ValueOf(keys[head_at[a]]) == ValueOf(keys[head_at[b]]);
}

// Whether run j's literal is folded into the 1-fill of run j - 1 (PLWAH, one zero bit).
__device__ inline bool FoldsIntoOneFill(const uint64_t* keys, const uint32_t* literals,
                                        const uint32_t* head_at, uint64_t j, const Run& run) {
  if (j == 0 || run.gap != 0 || run.literal == kPayloadMask) return false;
  if (__popc(run.literal) != 30) return false;
  return literals[head_at[j - 1]] == kPayloadMask && SameValue(keys, head_at, j - 1, j);
}

__device__ inline uint64_t CeilDiv(uint64_t a, uint64_t b) { return (a + b - 1) / b; }

// Step 5 (fills by adjacent difference) and 5.1 (PLWAH's folding): each run's word count and
// its value, for the scan of step 6 and the reduce-by-key of step 7.
__global__ void RunWordsKernel(const uint64_t* keys, const uint32_t* literals,
                               const uint32_t* head_at, uint64_t m, uint64_t k, bool plwah,
                               uint32_t* words, uint32_t* run_values) {
  const uint32_t max_fill = plwah ? kPlwahMaxFill : kWahMaxFill;
  TANDEM_GRID_STRIDE(j, m) {
    const Run run = RunAt(keys, literals, head_at, j, m, k);
    uint64_t n = CeilDiv(run.gap, max_fill);
    if (run.literal == kPayloadMask) {
      n += CeilDiv(run.chunks, max_fill);
    } else if (plwah && run.gap > 0 && __popc(run.literal) == 1) {
      // folded into the last 0-fill word
    } else if (plwah && FoldsIntoOneFill(keys, literals, head_at, j, run)) {
      // folded into the previous run's last 1-fill word
    } else {
      n += 1;
    }
    words[j] = static_cast<uint32_t>(n);
    run_values[j] = run.value;
  }
}

__device__ inline uint32_t WriteFill(uint32_t* out, bool bit, uint64_t chunks, uint32_t max_fill) {
  uint32_t written = 0;
  while (chunks > 0) {
    const uint32_t n = static_cast<uint32_t>(chunks < max_fill ? chunks : max_fill);
    out[written++] = (bit ? kFillBitFlag : 0u) | n;
    chunks -= n;
  }
  return written;
}

// Step 6: each run writes its words at its scanned position.
__global__ void WriteRunsKernel(const uint64_t* keys, const uint32_t* literals,
                                const uint32_t* head_at, const uint32_t* positions, uint64_t m,
                                uint64_t k, bool plwah, uint32_t* out) {
  const uint32_t max_fill = plwah ? kPlwahMaxFill : kWahMaxFill;
  TANDEM_GRID_STRIDE(j, m) {
    const Run run = RunAt(keys, literals, head_at, j, m, k);
    uint32_t* w = out + positions[j];
    w += WriteFill(w, false, run.gap, max_fill);
    if (run.literal == kPayloadMask) {
      w += WriteFill(w, true, run.chunks, max_fill);
      // The next run's literal with one zero bit goes into this fill's last word.
      if (plwah && j + 1 < m) {
        const Run next = RunAt(keys, literals, head_at, j + 1, m, k);
        if (FoldsIntoOneFill(keys, literals, head_at, j + 1, next)) {
          const uint32_t zero_bit = __ffs(~next.literal & kPayloadMask) - 1;
          w[-1] |= (zero_bit + 1) << kPositionShift;
        }
      }
    } else if (plwah && run.gap > 0 && __popc(run.literal) == 1) {
      w[-1] |= static_cast<uint32_t>(__ffs(run.literal)) << kPositionShift;
    } else if (plwah && FoldsIntoOneFill(keys, literals, head_at, j, run)) {
      // written by run j - 1
    } else {
      *w = kLiteralFlag | run.literal;
    }
  }
}

__global__ void TotalsKernel(const uint32_t* positions, const uint32_t* words, uint64_t m,
                             uint32_t* totals) {
  if (threadIdx.x == 0 && blockIdx.x == 0) totals[0] = m == 0 ? 0 : positions[m - 1] + words[m - 1];
}

// flags[c]: whether chunk c has a set row.
__global__ void NonzeroFlagsKernel(const uint32_t* payloads, uint32_t* flags, uint64_t n) {
  TANDEM_GRID_STRIDE(c, n) { flags[c] = payloads[c] != 0 ? 1u : 0u; }
}

// The nonzero chunks in order, as the merged (value 0, chunk id) keys and literals of step 4.
__global__ void CompactChunksKernel(const uint32_t* payloads, const uint32_t* flags,
                                    const uint32_t* slots, uint64_t n, uint64_t* keys,
                                    uint32_t* literals) {
  TANDEM_GRID_STRIDE(c, n) {
    if (flags[c]) {
      keys[slots[c]] = c;
      literals[slots[c]] = payloads[c];
    }
  }
}

struct BitOr {
  __host__ __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a | b; }
};
struct Sum {
  __host__ __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a + b; }
};
struct Max {
  __host__ __device__ uint32_t operator()(uint32_t a, uint32_t b) const { return a > b ? a : b; }
};

class DeviceBitmapBuilderImpl final : public DeviceBitmapBuilder {
 public:
  absl::Status Init() {
    TANDEM_ASSIGN_OR_RETURN(stream_, CudaStream::Create());
    for (auto& event : events_) {
      TANDEM_ASSIGN_OR_RETURN(event, CudaEvent::Create());
    }
    TANDEM_ASSIGN_OR_RETURN(counters_, DeviceBuffer<uint32_t>::Allocate(4));
    TANDEM_RETURN_IF_ERROR(host_counters_.Reserve(4));
    return absl::OkStatus();
  }

  absl::Status Build(bool plwah, uint32_t num_rows, const uint32_t* values, const uint32_t* rows,
                     size_t n, PinnedBitmapColumns* out, BitmapBuildTimes* times) override {
    if (n > kMaxBuildValues) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%d values in one build; at most %d (the words' positions are 32-bit)", n,
                          kMaxBuildValues));
    }
    *out = PinnedBitmapColumns();
    if (times != nullptr) *times = BitmapBuildTimes();
    TANDEM_RETURN_IF_ERROR(host_offsets_.Reserve(1));
    host_offsets_.data()[0] = 0;
    out->offsets = host_offsets_.data();
    if (n == 0) return absl::OkStatus();
    cudaStream_t s = stream_.get();
    const int items = static_cast<int>(n);
    int event = 0;
    auto mark = [&]() -> absl::Status {
      if (times != nullptr) TANDEM_RETURN_IF_ERROR(events_[event++].Record(s));
      return absl::OkStatus();
    };

    TANDEM_RETURN_IF_ERROR(Reserve(values_, n));
    TANDEM_RETURN_IF_ERROR(Reserve(rids_, n));
    TANDEM_RETURN_IF_ERROR(Reserve(sorted_values_, n));
    TANDEM_RETURN_IF_ERROR(Reserve(sorted_rids_, n));
    TANDEM_RETURN_IF_ERROR(Reserve(keys_, n));
    TANDEM_RETURN_IF_ERROR(Reserve(literals_, n));
    TANDEM_RETURN_IF_ERROR(Reserve(merged_keys_, n));
    TANDEM_RETURN_IF_ERROR(Reserve(merged_literals_, n));
    TANDEM_RETURN_IF_ERROR(ReserveTemp(n));  // Encode reserves the buffers of steps 5-7

    // Upload.
    TANDEM_RETURN_IF_ERROR(mark());
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(values_.data(), values, n * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    if (rows != nullptr) {
      TANDEM_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(rids_.data(), rows, n * sizeof(uint32_t), cudaMemcpyHostToDevice, s));
    } else {
      IotaKernel<<<Grid(n), kThreads, 0, s>>>(rids_.data(), n);
      TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    }
    TANDEM_RETURN_IF_ERROR(mark());

    // Step 2: sort record ids by value, on the value's significant bits only (the paper's remark
    // on Thrust's sort, section 4). The radix sort is stable, so each value's ids stay ascending.
    size_t bytes = temp_.size();
    TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceReduce::Reduce(temp_.data(), bytes, values_.data(),
                                                          counters_.data(), items, Max(), 0u, s));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_counters_.data(), counters_.data(),
                                                sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    const uint32_t max_value = host_counters_.data()[0];
    const int end_bit = max_value == 0 ? 1 : 32 - __builtin_clz(max_value);
    bytes = temp_.size();
    TANDEM_CUDA_RETURN_IF_ERROR(
        cub::DeviceRadixSort::SortPairs(temp_.data(), bytes, values_.data(), sorted_values_.data(),
                                        rids_.data(), sorted_rids_.data(), items, 0, end_bit, s));
    TANDEM_RETURN_IF_ERROR(mark());

    // Step 3: chunk ids and partial literals.
    ChunkIdLiteralKernel<<<Grid(n), kThreads, 0, s>>>(sorted_values_.data(), sorted_rids_.data(),
                                                      keys_.data(), literals_.data(), n);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    TANDEM_RETURN_IF_ERROR(mark());

    // Step 4: one literal per (value, chunk id), by a segmented OR.
    bytes = temp_.size();
    TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceReduce::ReduceByKey(
        temp_.data(), bytes, keys_.data(), merged_keys_.data(), literals_.data(),
        merged_literals_.data(), counters_.data(), BitOr(), items, s));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_counters_.data(), counters_.data(),
                                                sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    const uint64_t k = host_counters_.data()[0];
    TANDEM_RETURN_IF_ERROR(mark());

    TANDEM_RETURN_IF_ERROR(Encode(plwah, k, out, mark));

    if (times != nullptr) {
      double* steps[] = {&times->upload_ms,  &times->sort_ms,    &times->literals_ms,
                         &times->merge_ms,   &times->fills_ms,   &times->fuse_ms,
                         &times->offsets_ms, &times->download_ms};
      for (int i = 0; i + 1 < event; ++i) {
        TANDEM_ASSIGN_OR_RETURN(float ms, events_[i + 1].MillisecondsSince(events_[i]));
        *steps[i] = ms;
      }
    }
    return absl::OkStatus();
  }

  absl::Status EncodeChunks(bool plwah, const uint32_t* payloads, uint64_t num_chunks,
                            PinnedBitmapColumns* out) override {
    *out = PinnedBitmapColumns();
    if (num_chunks > kMaxBuildValues) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%d chunks in one encoding; at most %d", num_chunks, kMaxBuildValues));
    }
    cudaStream_t s = stream_.get();
    TANDEM_RETURN_IF_ERROR(Reserve(values_, std::max<uint64_t>(num_chunks, 1)));
    TANDEM_RETURN_IF_ERROR(Reserve(rids_, std::max<uint64_t>(num_chunks, 1)));
    TANDEM_RETURN_IF_ERROR(Reserve(merged_keys_, std::max<uint64_t>(num_chunks, 1)));
    TANDEM_RETURN_IF_ERROR(Reserve(merged_literals_, std::max<uint64_t>(num_chunks, 1)));
    TANDEM_RETURN_IF_ERROR(ReserveTemp(num_chunks));
    uint64_t k = 0;
    if (num_chunks > 0) {
      // The nonzero chunks, compacted by a scan of their flags: the merged keys of one value.
      NonzeroFlagsKernel<<<Grid(num_chunks), kThreads, 0, s>>>(payloads, values_.data(),
                                                               num_chunks);
      TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
      size_t bytes = temp_.size();
      TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(
          temp_.data(), bytes, values_.data(), rids_.data(), static_cast<int>(num_chunks), s));
      CompactChunksKernel<<<Grid(num_chunks), kThreads, 0, s>>>(
          payloads, values_.data(), rids_.data(), num_chunks, merged_keys_.data(),
          merged_literals_.data());
      TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
      TotalsKernel<<<1, 1, 0, s>>>(rids_.data(), values_.data(), num_chunks, counters_.data());
      TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_counters_.data(), counters_.data(),
                                                  sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
      TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
      k = host_counters_.data()[0];
    }
    return Encode(plwah, k, out, []() { return absl::OkStatus(); });
  }

  // Steps 5-7 and the download, from the k merged (value, chunk id) keys and literals in
  // merged_keys_ and merged_literals_ (ascending keys, no zero literal). `mark` records a step's
  // end.
  template <typename Mark>
  absl::Status Encode(bool plwah, uint64_t k, PinnedBitmapColumns* out, Mark&& mark) {
    cudaStream_t s = stream_.get();
    size_t bytes = 0;
    TANDEM_RETURN_IF_ERROR(Reserve(heads_, k));
    TANDEM_RETURN_IF_ERROR(Reserve(head_index_, k));
    TANDEM_RETURN_IF_ERROR(Reserve(head_at_, k));
    TANDEM_RETURN_IF_ERROR(Reserve(run_words_, k));
    TANDEM_RETURN_IF_ERROR(Reserve(run_values_, k));
    TANDEM_RETURN_IF_ERROR(Reserve(positions_, k));
    TANDEM_RETURN_IF_ERROR(Reserve(column_keys_, k));
    TANDEM_RETURN_IF_ERROR(Reserve(column_lengths_, k + 1));
    TANDEM_RETURN_IF_ERROR(Reserve(column_offsets_, k + 1));
    TANDEM_RETURN_IF_ERROR(host_offsets_.Reserve(1));
    host_offsets_.data()[0] = 0;
    out->offsets = host_offsets_.data();
    if (k == 0) return absl::OkStatus();
    // Step 5: runs of full chunks (compacted by a scan of their heads), each run's fills and
    // words, and PLWAH's folding (5.1).
    RunHeadsKernel<<<Grid(k), kThreads, 0, s>>>(merged_keys_.data(), merged_literals_.data(),
                                                heads_.data(), k);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    bytes = temp_.size();
    TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(
        temp_.data(), bytes, heads_.data(), head_index_.data(), static_cast<int>(k), s));
    CompactHeadsKernel<<<Grid(k), kThreads, 0, s>>>(heads_.data(), head_index_.data(),
                                                    head_at_.data(), k);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    TotalsKernel<<<1, 1, 0, s>>>(head_index_.data(), heads_.data(), k, counters_.data());
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_counters_.data(), counters_.data(),
                                                sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    const uint64_t m = host_counters_.data()[0];
    RunWordsKernel<<<Grid(m), kThreads, 0, s>>>(merged_keys_.data(), merged_literals_.data(),
                                                head_at_.data(), m, k, plwah, run_words_.data(),
                                                run_values_.data());
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    TANDEM_RETURN_IF_ERROR(mark());

    // Step 6: the runs' words, placed by a scan of their counts.
    bytes = temp_.size();
    TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceScan::ExclusiveSum(
        temp_.data(), bytes, run_words_.data(), positions_.data(), static_cast<int>(m), s));
    TotalsKernel<<<1, 1, 0, s>>>(positions_.data(), run_words_.data(), m, counters_.data());
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_counters_.data(), counters_.data(),
                                                sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    const uint64_t num_words = host_counters_.data()[0];
    TANDEM_RETURN_IF_ERROR(Reserve(words_, num_words));
    WriteRunsKernel<<<Grid(m), kThreads, 0, s>>>(merged_keys_.data(), merged_literals_.data(),
                                                 head_at_.data(), positions_.data(), m, k, plwah,
                                                 words_.data());
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    TANDEM_RETURN_IF_ERROR(mark());

    // Step 7: column lengths by a reduce-by-key over the runs' values, offsets by a scan.
    bytes = temp_.size();
    TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceReduce::ReduceByKey(
        temp_.data(), bytes, run_values_.data(), column_keys_.data(), run_words_.data(),
        column_lengths_.data(), counters_.data() + 1, Sum(), static_cast<int>(m), s));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_counters_.data() + 1, counters_.data() + 1,
                                                sizeof(uint32_t), cudaMemcpyDeviceToHost, s));
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    const uint64_t num_keys = host_counters_.data()[1];
    // The offsets are 64-bit for the host's BitmapColumns; a column's length fits 32 bits.
    bytes = temp_.size();
    TANDEM_CUDA_RETURN_IF_ERROR(
        cub::DeviceScan::ExclusiveSum(temp_.data(), bytes, column_lengths_.data(),
                                      column_offsets_.data(), static_cast<int>(num_keys), s));
    TANDEM_RETURN_IF_ERROR(mark());

    // Download.
    TANDEM_RETURN_IF_ERROR(host_keys_.Reserve(num_keys));
    TANDEM_RETURN_IF_ERROR(host_offsets32_.Reserve(num_keys));
    TANDEM_RETURN_IF_ERROR(host_offsets_.Reserve(num_keys + 1));
    TANDEM_RETURN_IF_ERROR(host_words_.Reserve(num_words));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_keys_.data(), column_keys_.data(),
                                                num_keys * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                                s));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_offsets32_.data(), column_offsets_.data(),
                                                num_keys * sizeof(uint32_t), cudaMemcpyDeviceToHost,
                                                s));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(host_words_.data(), words_.data(),
                                                num_words * sizeof(uint32_t),
                                                cudaMemcpyDeviceToHost, s));
    TANDEM_RETURN_IF_ERROR(mark());
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    for (uint64_t i = 0; i < num_keys; ++i) host_offsets_.data()[i] = host_offsets32_.data()[i];
    host_offsets_.data()[num_keys] = num_words;

    out->keys = host_keys_.data();
    out->offsets = host_offsets_.data();
    out->words = host_words_.data();
    out->num_keys = num_keys;
    out->num_words = num_words;

    return absl::OkStatus();
  }

 private:
  // CUB temporary storage for every call of a build of n items.
  absl::Status ReserveTemp(size_t n) {
    const int items = static_cast<int>(n);
    size_t need = 0, bytes = 0;
    uint32_t* u = nullptr;
    uint64_t* w = nullptr;
    TANDEM_CUDA_RETURN_IF_ERROR(
        cub::DeviceReduce::Reduce(nullptr, bytes, u, u, items, Max(), 0u, stream_.get()));
    need = std::max(need, bytes);
    TANDEM_CUDA_RETURN_IF_ERROR(
        cub::DeviceRadixSort::SortPairs(nullptr, bytes, u, u, u, u, items, 0, 32, stream_.get()));
    need = std::max(need, bytes);
    TANDEM_CUDA_RETURN_IF_ERROR(cub::DeviceReduce::ReduceByKey(nullptr, bytes, w, w, u, u, u,
                                                               BitOr(), items, stream_.get()));
    need = std::max(need, bytes);
    TANDEM_CUDA_RETURN_IF_ERROR(
        cub::DeviceReduce::ReduceByKey(nullptr, bytes, u, u, u, u, u, Sum(), items, stream_.get()));
    need = std::max(need, bytes);
    TANDEM_CUDA_RETURN_IF_ERROR(
        cub::DeviceScan::ExclusiveSum(nullptr, bytes, u, u, items, stream_.get()));
    need = std::max(need, bytes);
    return Reserve(temp_, need);
  }

  CudaStream stream_;
  CudaEvent events_[9];
  DeviceBuffer<uint32_t> counters_;
  DeviceBuffer<uint32_t> values_, rids_, sorted_values_, sorted_rids_, literals_, merged_literals_,
      heads_, head_index_, head_at_, run_words_, run_values_, positions_, column_keys_,
      column_lengths_, column_offsets_, words_;
  DeviceBuffer<uint64_t> keys_, merged_keys_;
  DeviceBuffer<char> temp_;
  PinnedBuffer<uint32_t> host_counters_, host_keys_, host_offsets32_, host_words_;
  PinnedBuffer<uint64_t> host_offsets_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceBitmapBuilder>> DeviceBitmapBuilder::Create() {
  auto builder = std::make_unique<DeviceBitmapBuilderImpl>();
  TANDEM_RETURN_IF_ERROR(builder->Init());
  return builder;
}

}  // namespace tandem::gpu
