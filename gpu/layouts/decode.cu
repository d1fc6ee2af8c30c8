// Host orchestration of the decoders in gpu/kernels/: checks the arguments, picks the kernel
// instantiation and launches it on the caller's stream. One launch per call.
#include <algorithm>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"
#include "gpu/kernels/freq_fetch.cuh"
#include "gpu/kernels/lrc_decode.cuh"
#include "gpu/kernels/para_pfor_decode.cuh"
#include "gpu/kernels/pfor_decode.cuh"
#include "gpu/kernels/rice_decode.cuh"
#include "gpu/layouts/decode.h"

namespace tandem::gpu {
namespace {

bool Aligned16(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

template <typename Desc>
absl::Status CheckCall(const Desc& desc, const uint32_t* image, const uint32_t* out,
                       cudaStream_t stream) {
  if (const char* error = CheckDesc(desc)) {
    return absl::InvalidArgumentError(absl::StrCat("bad GPU list descriptor: ", error));
  }
  if (image == nullptr || !Aligned16(image)) {
    return absl::InvalidArgumentError("the list image must be a 16-byte aligned device pointer");
  }
  if (out == nullptr || !Aligned16(out)) {
    return absl::InvalidArgumentError("the output must be a 16-byte aligned device pointer");
  }
  if (stream == nullptr) {
    return absl::InvalidArgumentError(
        "the legacy default stream is not used for decoding; pass a stream");
  }
  return absl::OkStatus();
}

dim3 DecodeGrid(uint32_t warps) {
  return dim3((warps + kernels::kDecodeWarpsPerCta - 1) / kernels::kDecodeWarpsPerCta);
}

// The block kernels of each codec, instantiated for the output (docIDs or gaps) and PForDelta's
// block size: Selected decodes chosen blocks (kernels::DecodeSelectedBlock), InPlace the blocks
// that entries name (kernels::ForEachEntryBlock).
template <bool kDocids>
struct BlockKernels {
  static auto Selected(const PForDesc& d) {
    return d.block_size == 128 ? kernels::PForDecodeKernel<128, kDocids>
                               : kernels::PForDecodeKernel<512, kDocids>;
  }
  static auto Selected(const RiceDesc&) { return kernels::RiceDecodeKernel<kDocids>; }
  static auto Selected(const ParaPForDesc&) { return kernels::ParaPForDecodeKernel<kDocids>; }
  static auto InPlace(const PForDesc& d) {
    return d.block_size == 128 ? kernels::PForDecodeInPlaceKernel<128, kDocids>
                               : kernels::PForDecodeInPlaceKernel<512, kDocids>;
  }
  static auto InPlace(const RiceDesc&) { return kernels::RiceDecodeInPlaceKernel<kDocids>; }
};

// Decodes blocks[0..num_selected), or the first num_selected blocks when `blocks` is null.
template <typename Desc>
absl::Status LaunchSelected(const DeviceImage<Desc>& list, const uint32_t* blocks,
                            uint32_t num_selected, DecodeOutput output, uint32_t* out,
                            cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckCall(list.desc, list.image, out, stream));
  if (num_selected == 0) return absl::OkStatus();
  const auto kernel = output == DecodeOutput::kDocids ? BlockKernels<true>::Selected(list.desc)
                                                      : BlockKernels<false>::Selected(list.desc);
  kernel<<<DecodeGrid(num_selected), kernels::kDecodeThreads, 0, stream>>>(
      list.desc, list.image, blocks, num_selected, out);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

// Launches a fetch kernel of `threads` threads per CTA, one thread per position.
template <typename Desc, typename Kernel>
absl::Status LaunchFetch(Kernel kernel, uint32_t threads, const DeviceImage<Desc>& list,
                         const uint32_t* positions, uint32_t count, uint32_t* out,
                         cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckCall(list.desc, list.image, out, stream));
  if (count == 0) return absl::OkStatus();
  if (positions == nullptr) return absl::InvalidArgumentError("no positions given");
  kernel<<<(count + threads - 1) / threads, threads, 0, stream>>>(list.desc, list.image, positions,
                                                                  count, out);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace

absl::Status FetchFreqs(const DeviceFreqList& list, const uint32_t* positions, uint32_t count,
                        uint32_t* out, cudaStream_t stream) {
  return LaunchFetch(kernels::FreqFetchKernel, kernels::kFetchThreads, list, positions, count, out,
                     stream);
}

template <typename Desc>
absl::Status DecodeAll(const DeviceImage<Desc>& list, DecodeOutput output, uint32_t* out,
                       cudaStream_t stream) {
  return LaunchSelected(list, nullptr, list.desc.num_blocks, output, out, stream);
}

template <typename Desc>
absl::Status DecodeBlocks(const DeviceImage<Desc>& list, const uint32_t* blocks,
                          uint32_t num_selected, DecodeOutput output, uint32_t* out,
                          cudaStream_t stream) {
  if (blocks == nullptr && num_selected > 0) {
    return absl::InvalidArgumentError("no block indices given");
  }
  return LaunchSelected(list, blocks, num_selected, output, out, stream);
}

template <typename Desc>
absl::Status DecodeBlocksInPlace(const DeviceImage<Desc>& list, const uint32_t* entries,
                                 uint32_t max_entries, const uint32_t* device_count,
                                 DecodeOutput output, uint32_t* out, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckCall(list.desc, list.image, out, stream));
  if (entries == nullptr && max_entries > 0) {
    return absl::InvalidArgumentError("no block entries given");
  }
  if (max_entries == 0) return absl::OkStatus();
  const auto kernel = output == DecodeOutput::kDocids ? BlockKernels<true>::InPlace(list.desc)
                                                      : BlockKernels<false>::InPlace(list.desc);
  kernel<<<DecodeGrid(std::min(max_entries, kMaxInPlaceWarps)), kernels::kDecodeThreads, 0,
           stream>>>(list.desc, list.image, entries, max_entries, device_count, out);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

// The codecs decoded a block per warp (decode.h).
template absl::Status DecodeAll(const DevicePForList&, DecodeOutput, uint32_t*, cudaStream_t);
template absl::Status DecodeAll(const DeviceRiceList&, DecodeOutput, uint32_t*, cudaStream_t);
template absl::Status DecodeAll(const DeviceParaPForList&, DecodeOutput, uint32_t*, cudaStream_t);
template absl::Status DecodeBlocks(const DevicePForList&, const uint32_t*, uint32_t, DecodeOutput,
                                   uint32_t*, cudaStream_t);
template absl::Status DecodeBlocks(const DeviceRiceList&, const uint32_t*, uint32_t, DecodeOutput,
                                   uint32_t*, cudaStream_t);
template absl::Status DecodeBlocks(const DeviceParaPForList&, const uint32_t*, uint32_t,
                                   DecodeOutput, uint32_t*, cudaStream_t);
template absl::Status DecodeBlocksInPlace(const DevicePForList&, const uint32_t*, uint32_t,
                                          const uint32_t*, DecodeOutput, uint32_t*, cudaStream_t);
template absl::Status DecodeBlocksInPlace(const DeviceRiceList&, const uint32_t*, uint32_t,
                                          const uint32_t*, DecodeOutput, uint32_t*, cudaStream_t);

absl::Status DecodeLrcList(const DeviceLrcList& list, uint32_t* out, cudaStream_t stream) {
  TANDEM_RETURN_IF_ERROR(CheckCall(list.desc, list.image, out, stream));
  const LrcDesc& d = list.desc;
  // One thread per posting for LRC's one line and for lists of about one wave; otherwise a warp
  // per segment (kernels/lrc_decode.cuh).
  if (d.kind == LrcKind::kLrc ||
      (d.kind != LrcKind::kHsLrc && d.num_postings <= kernels::kLrcOneWavePostings)) {
    const uint32_t ctas = std::min<uint32_t>(
        (d.num_postings + kernels::kLrcThreads - 1) / kernels::kLrcThreads, 1u << 16);
    kernels::LrcDecodePostingsKernel<<<ctas, kernels::kLrcThreads, 0, stream>>>(d, list.image, out);
  } else {
    constexpr uint32_t kWarps = kernels::kLrcSegmentThreads / 32;
    const uint32_t ctas = std::min<uint32_t>((d.num_segments + kWarps - 1) / kWarps, 1u << 20);
    kernels::LrcDecodeSegmentsKernel<<<ctas, kernels::kLrcSegmentThreads, 0, stream>>>(
        d, list.image, out);
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status FetchLrcDocids(const DeviceLrcList& list, const uint32_t* positions, uint32_t count,
                            uint32_t* out, cudaStream_t stream) {
  return LaunchFetch(kernels::LrcFetchKernel, kernels::kLrcThreads, list, positions, count, out,
                     stream);
}

}  // namespace tandem::gpu
