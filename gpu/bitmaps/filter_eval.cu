// File: filter_eval.cu
//
// Filters evaluated on the device straight from the compressed columns: one thread per chunk of
// 31 rows runs the filter's postfix program (filter::FilterProgram), fetching each column's payload
// for its chunk by a binary search over the words' first chunks (kernels::ChunkPayload, as
// ExpandBitmap reads a filter), so no column is ever decompressed; the chunks are then compressed
// on the device by the bitmap builder's steps 5-7.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "gpu/bitmaps/bitmap_build_device.h"
#include "gpu/bitmaps/filter_eval_device.h"
#include "gpu/device/cuda_status.h"
#include "gpu/kernels/bitmap_chunks.cuh"

namespace tandem::gpu {
namespace {

constexpr uint32_t kThreads = 256;

// payloads[c]: the program's answer for chunk c, rows past num_rows cleared.
__global__ void EvaluateFilterKernel(const uint32_t* __restrict__ words,
                                     const uint32_t* __restrict__ starts,
                                     const uint64_t* __restrict__ offsets, bool plwah,
                                     const DeviceFilterOp* __restrict__ ops, uint32_t num_ops,
                                     uint32_t num_rows, uint32_t num_chunks,
                                     uint32_t* __restrict__ payloads) {
  uint32_t stack[kMaxDeviceFilterStack];
  for (uint32_t c = blockIdx.x * blockDim.x + threadIdx.x; c < num_chunks;
       c += gridDim.x * blockDim.x) {
    uint32_t sp = 0;
    for (uint32_t k = 0; k < num_ops; ++k) {
      const uint32_t code = __ldg(&ops[k].code);
      switch (code) {
        case kFilterColumn: {
          const uint32_t col = __ldg(&ops[k].column);
          const uint64_t begin = __ldg(offsets + col), end = __ldg(offsets + col + 1);
          stack[sp++] = kernels::ChunkPayload(words + begin, starts + begin,
                                              static_cast<uint32_t>(end - begin), plwah, c);
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
    uint32_t out = (sp > 0 ? stack[sp - 1] : 0u) & 0x7FFFFFFFu;
    const uint32_t last_rows = num_rows - (num_chunks - 1) * 31;  // 1..31
    if (c == num_chunks - 1 && last_rows < 31) out &= (1u << last_rows) - 1;
    payloads[c] = out;
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
    num_chunks_ = static_cast<uint32_t>((uint64_t{num_rows} + 30) / 31);
    TANDEM_ASSIGN_OR_RETURN(payloads_,
                            DeviceBuffer<uint32_t>::Allocate(std::max<uint32_t>(num_chunks_, 1)));
    TANDEM_ASSIGN_OR_RETURN(encoder_, DeviceBitmapBuilder::Create());
    cudaStream_t s = stream_.get();
    TANDEM_RETURN_IF_ERROR(words_.CopyFromHost(words, num_words, s));
    TANDEM_RETURN_IF_ERROR(starts_.CopyFromHost(starts, num_words, s));
    TANDEM_RETURN_IF_ERROR(offsets_.CopyFromHost(offsets, num_columns + 1, s));
    return stream_.Synchronize();
  }

  absl::Status Evaluate(const DeviceFilterOp* ops, size_t num_ops, uint32_t max_stack,
                        PinnedBitmapColumns* out, FilterEvalTimes* times) override {
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
    *out = PinnedBitmapColumns();
    cudaStream_t s = stream_.get();
    TANDEM_RETURN_IF_ERROR(events_[0].Record(s));
    TANDEM_RETURN_IF_ERROR(Reserve(ops_, std::max<size_t>(num_ops, 1)));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(ops_.data(), ops, num_ops * sizeof(DeviceFilterOp),
                                                cudaMemcpyHostToDevice, s));
    TANDEM_RETURN_IF_ERROR(events_[1].Record(s));
    if (num_chunks_ > 0) {
      const uint32_t blocks = (num_chunks_ + kThreads - 1) / kThreads;
      EvaluateFilterKernel<<<blocks, kThreads, 0, s>>>(
          words_.data(), starts_.data(), offsets_.data(), plwah_, ops_.data(),
          static_cast<uint32_t>(num_ops), num_rows_, num_chunks_, payloads_.data());
      TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    }
    TANDEM_RETURN_IF_ERROR(events_[2].Record(s));
    TANDEM_RETURN_IF_ERROR(stream_.Synchronize());
    // Compressed on the device by the bitmap builder's fills, folding and placement (steps 5-7).
    const auto start = std::chrono::steady_clock::now();
    TANDEM_RETURN_IF_ERROR(encoder_->EncodeChunks(plwah_, payloads_.data(), num_chunks_, out));
    if (times != nullptr) {
      TANDEM_ASSIGN_OR_RETURN(times->upload_ms, events_[1].MillisecondsSince(events_[0]));
      TANDEM_ASSIGN_OR_RETURN(times->evaluate_ms, events_[2].MillisecondsSince(events_[1]));
      times->encode_ms =
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count();
    }
    return absl::OkStatus();
  }

  uint64_t device_bytes() const override {
    return words_.bytes() + starts_.bytes() + offsets_.bytes() + payloads_.bytes() + ops_.bytes();
  }

 private:
  bool plwah_ = false;
  uint32_t num_rows_ = 0;
  uint32_t num_chunks_ = 0;
  size_t num_columns_ = 0;
  CudaStream stream_;
  CudaEvent events_[3];
  DeviceBuffer<uint32_t> words_, starts_, payloads_;
  DeviceBuffer<uint64_t> offsets_;
  DeviceBuffer<DeviceFilterOp> ops_;
  std::unique_ptr<DeviceBitmapBuilder> encoder_;
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
