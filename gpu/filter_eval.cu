// File: filter_eval.cu
//
// Filters evaluated on the device straight from the compressed columns: one thread per 32 rows
// runs the filter's postfix program (index::FilterProgram), fetching each column's bits for its
// rows by a binary search over the words' first chunks, so no column is ever decompressed. The
// canonical words (index/bitmap.h): 31 rows per chunk; a literal has bit 31 set, a fill holds its
// bit in bit 30 and a chunk count in bits 0-29, or in PLWAH in bits 0-24 with the position + 1 of
// one flipped bit of the chunk after it in bits 25-29.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "gpu/cuda_status.h"
#include "gpu/filter_eval_device.h"

namespace tandem::gpu {
namespace {

constexpr uint32_t kThreads = 256;

// The 31 row bits of chunk c from word w, which starts at chunk `start` <= c (0 past its end).
__device__ __forceinline__ uint32_t PayloadOf(uint32_t w, uint32_t start, bool plwah, uint64_t c) {
  if (w & 0x80000000u) return c == start ? (w & 0x7FFFFFFFu) : 0u;
  const uint32_t fill = (w & 0x40000000u) ? 0x7FFFFFFFu : 0u;
  const uint64_t end = uint64_t{start} + (plwah ? (w & 0x01FFFFFFu) : (w & 0x3FFFFFFFu));
  if (c < end) return fill;
  const uint32_t position = plwah ? (w >> 25) & 0x1Fu : 0u;
  if (position != 0 && c == end) return fill ^ (1u << (position - 1));
  return 0;
}

// Rows 32j .. 32j + 31 of one column (n > 0 words, starts ascending from 0): the end of chunk c
// and the start of chunk c + 1, both found from one binary search.
__device__ __forceinline__ uint32_t ColumnBits(const uint32_t* __restrict__ words,
                                               const uint32_t* __restrict__ starts, uint32_t n,
                                               bool plwah, uint32_t j) {
  const uint64_t row = uint64_t{j} * 32;
  const uint64_t c = row / 31;
  const uint32_t offset = static_cast<uint32_t>(row % 31);
  uint32_t lo = 1, hi = n;  // starts[0] == 0 <= c: the answer is in [0, n)
  while (lo < hi) {
    const uint32_t mid = (lo + hi) / 2;
    if (__ldg(starts + mid) <= c) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  const uint32_t i = lo - 1;
  const uint32_t w = __ldg(words + i), start = __ldg(starts + i);
  const uint32_t first = PayloadOf(w, start, plwah, c);
  uint32_t second;
  if (i + 1 < n && __ldg(starts + i + 1) == c + 1) {
    second = PayloadOf(__ldg(words + i + 1), static_cast<uint32_t>(c + 1), plwah, c + 1);
  } else {
    second = PayloadOf(w, start, plwah, c + 1);
  }
  return (first >> offset) | (second << (31 - offset));
}

__global__ void EvaluateFilterKernel(const uint32_t* __restrict__ words,
                                     const uint32_t* __restrict__ starts,
                                     const uint64_t* __restrict__ offsets, bool plwah,
                                     const DeviceFilterOp* __restrict__ ops, uint32_t num_ops,
                                     uint32_t num_rows, uint32_t num_bit_words,
                                     uint32_t* __restrict__ bits) {
  uint32_t stack[kMaxDeviceFilterStack];
  for (uint32_t j = blockIdx.x * blockDim.x + threadIdx.x; j < num_bit_words;
       j += gridDim.x * blockDim.x) {
    uint32_t sp = 0;
    for (uint32_t k = 0; k < num_ops; ++k) {
      const uint32_t code = __ldg(&ops[k].code);
      switch (code) {
        case kFilterColumn: {
          const uint32_t col = __ldg(&ops[k].column);
          const uint64_t begin = __ldg(offsets + col), end = __ldg(offsets + col + 1);
          stack[sp++] = end == begin ? 0u
                                     : ColumnBits(words + begin, starts + begin,
                                                  static_cast<uint32_t>(end - begin), plwah, j);
          break;
        }
        case kFilterEmpty:
          stack[sp++] = 0;
          break;
        case kFilterNot:
          stack[sp - 1] = ~stack[sp - 1];
          break;
        case kFilterAnd:
          --sp;
          stack[sp - 1] &= stack[sp];
          break;
        case kFilterOr:
          --sp;
          stack[sp - 1] |= stack[sp];
          break;
        default:  // kFilterAndNot
          --sp;
          stack[sp - 1] &= ~stack[sp];
          break;
      }
    }
    uint32_t out = sp > 0 ? stack[sp - 1] : 0u;
    if (j == num_bit_words - 1 && num_rows % 32 != 0) out &= (1u << (num_rows % 32)) - 1;
    bits[j] = out;
  }
}

class DeviceFilterColumnsImpl final : public DeviceFilterColumns {
 public:
  absl::Status Init(bool plwah, uint32_t num_rows, const uint32_t* words, const uint32_t* starts,
                    size_t num_words, const uint64_t* offsets, size_t num_columns) {
    plwah_ = plwah;
    num_rows_ = num_rows;
    num_columns_ = num_columns;
    TANDEM_ASSIGN_OR_RETURN(stream_, CudaStream::Create());
    for (auto& event : events_) {
      TANDEM_ASSIGN_OR_RETURN(event, CudaEvent::Create());
    }
    TANDEM_ASSIGN_OR_RETURN(words_,
                            DeviceBuffer<uint32_t>::Allocate(std::max<size_t>(num_words, 1)));
    TANDEM_ASSIGN_OR_RETURN(starts_,
                            DeviceBuffer<uint32_t>::Allocate(std::max<size_t>(num_words, 1)));
    TANDEM_ASSIGN_OR_RETURN(offsets_, DeviceBuffer<uint64_t>::Allocate(num_columns + 1));
    const size_t bit_words = (uint64_t{num_rows} + 63) / 64 * 2;  // even: read back as 64-bit
    TANDEM_ASSIGN_OR_RETURN(bits_,
                            DeviceBuffer<uint32_t>::Allocate(std::max<size_t>(bit_words, 2)));
    TANDEM_RETURN_IF_ERROR(host_bits_.Reserve(std::max<size_t>(bit_words, 2)));
    cudaStream_t s = stream_.get();
    TANDEM_RETURN_IF_ERROR(words_.CopyFromHost(words, num_words, s));
    TANDEM_RETURN_IF_ERROR(starts_.CopyFromHost(starts, num_words, s));
    TANDEM_RETURN_IF_ERROR(offsets_.CopyFromHost(offsets, num_columns + 1, s));
    // The pad word past the last row stays zero.
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(bits_.data(), 0, bits_.bytes(), s));
    return stream_.Synchronize();
  }

  absl::Status Evaluate(const DeviceFilterOp* ops, size_t num_ops, uint32_t max_stack, void* bits,
                        FilterEvalTimes* times) override {
    if (max_stack > kMaxDeviceFilterStack) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "a filter program needs %d stack words, at most %d", max_stack, kMaxDeviceFilterStack));
    }
    // The kernel trusts the program: every op is checked here, the stack simulated.
    uint32_t depth = 0;
    for (size_t k = 0; k < num_ops; ++k) {
      const uint32_t code = ops[k].code;
      const uint32_t pops = code == kFilterColumn || code == kFilterEmpty ? 0
                            : code == kFilterNot                          ? 1
                                                                          : 2;
      if (code > kFilterAndNot || (code == kFilterColumn && ops[k].column >= num_columns_) ||
          depth < pops) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "filter program op %d (code %d, column %d) is not valid here", k, code, ops[k].column));
      }
      depth = pops == 0 ? depth + 1 : pops == 2 ? depth - 1 : depth;
      if (depth > max_stack) {
        return absl::InvalidArgumentError(
            absl::StrFormat("filter program op %d passes its stack of %d words", k, max_stack));
      }
    }
    if (depth != 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("a filter program must leave one word on its stack, not %d", depth));
    }
    if (times != nullptr) *times = FilterEvalTimes();
    const uint32_t num_bit_words = static_cast<uint32_t>((uint64_t{num_rows_} + 31) / 32);
    if (num_bit_words == 0) return absl::OkStatus();
    cudaStream_t s = stream_.get();
    TANDEM_RETURN_IF_ERROR(events_[0].Record(s));
    TANDEM_RETURN_IF_ERROR(Reserve(ops_, std::max<size_t>(num_ops, 1)));
    if (num_ops > 0) {
      TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
          ops_.data(), ops, num_ops * sizeof(DeviceFilterOp), cudaMemcpyHostToDevice, s));
    }
    TANDEM_RETURN_IF_ERROR(events_[1].Record(s));
    const uint32_t blocks = (num_bit_words + kThreads - 1) / kThreads;
    EvaluateFilterKernel<<<blocks, kThreads, 0, s>>>(
        words_.data(), starts_.data(), offsets_.data(), plwah_, ops_.data(),
        static_cast<uint32_t>(num_ops), num_rows_, num_bit_words, bits_.data());
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    TANDEM_RETURN_IF_ERROR(events_[2].Record(s));
    TANDEM_RETURN_IF_ERROR(bits_.CopyToHost(host_bits_.data(), num_bit_words, s));
    TANDEM_RETURN_IF_ERROR(events_[3].Record(s));
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    std::memcpy(bits, host_bits_.data(), sizeof(uint32_t) * num_bit_words);
    if (times != nullptr) {
      TANDEM_ASSIGN_OR_RETURN(times->upload_ms, Elapsed(0, 1));
      TANDEM_ASSIGN_OR_RETURN(times->evaluate_ms, Elapsed(1, 2));
      TANDEM_ASSIGN_OR_RETURN(times->download_ms, Elapsed(2, 3));
    }
    return absl::OkStatus();
  }

  uint64_t device_bytes() const override {
    return words_.bytes() + starts_.bytes() + offsets_.bytes() + bits_.bytes() + ops_.bytes();
  }

 private:
  absl::StatusOr<double> Elapsed(int from, int to) {
    float ms = 0;
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events_[from].get(), events_[to].get()));
    return double{ms};
  }

  bool plwah_ = false;
  uint32_t num_rows_ = 0;
  size_t num_columns_ = 0;
  CudaStream stream_;
  CudaEvent events_[4];
  DeviceBuffer<uint32_t> words_, starts_, bits_;
  DeviceBuffer<uint64_t> offsets_;
  DeviceBuffer<DeviceFilterOp> ops_;
  PinnedBuffer<uint32_t> host_bits_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceFilterColumns>> DeviceFilterColumns::Create(
    bool plwah, uint32_t num_rows, const uint32_t* words, const uint32_t* starts, size_t num_words,
    const uint64_t* offsets, size_t num_columns) {
  auto device = std::make_unique<DeviceFilterColumnsImpl>();
  TANDEM_RETURN_IF_ERROR(
      device->Init(plwah, num_rows, words, starts, num_words, offsets, num_columns));
  return std::unique_ptr<DeviceFilterColumns>(std::move(device));
}

}  // namespace tandem::gpu
