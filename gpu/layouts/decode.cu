// Host orchestration of the decoders in gpu/kernels/: checks the arguments, picks the kernel
// instantiation and launches it on the caller's stream. One launch per call.
#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_cat.h"
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

// Calls launch(block, docids) with the PForDelta kernels' template arguments as
// std::integral_constant values: the block size (128 or 512) and whether docIDs or gaps come out.
template <typename Launch>
void WithPForInstance(uint32_t block_size, DecodeOutput output, Launch launch) {
  using Docids = std::true_type;
  using Gaps = std::false_type;
  using B128 = std::integral_constant<uint32_t, 128>;
  using B512 = std::integral_constant<uint32_t, 512>;
  const bool docids = output == DecodeOutput::kDocids;
  if (block_size == 128) {
    docids ? launch(B128{}, Docids{}) : launch(B128{}, Gaps{});
  } else {
    docids ? launch(B512{}, Docids{}) : launch(B512{}, Gaps{});
  }
}

absl::Status LaunchPFor(const DevicePForList& list, const uint32_t* blocks, uint32_t num_selected,
                        DecodeOutput output, uint32_t* out, cudaStream_t stream) {
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
  if (num_selected == 0) return absl::OkStatus();
  const dim3 grid = DecodeGrid(num_selected);
  WithPForInstance(list.desc.block_size, output, [&](auto block, auto docids) {
    kernels::PForDecodeKernel<decltype(block)::value, decltype(docids)::value>
        <<<grid, kernels::kDecodeThreads, 0, stream>>>(list.desc, list.image, blocks, num_selected,
                                                       out);
  });
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status LaunchRice(const DeviceRiceList& list, const uint32_t* blocks, uint32_t num_selected,
                        DecodeOutput output, uint32_t* out, cudaStream_t stream) {
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
  if (num_selected == 0) return absl::OkStatus();
  const dim3 grid = DecodeGrid(num_selected);
  const dim3 threads(kernels::kDecodeThreads);
  if (output == DecodeOutput::kDocids) {
    kernels::RiceDecodeKernel<true>
        <<<grid, threads, 0, stream>>>(list.desc, list.image, blocks, num_selected, out);
  } else {
    kernels::RiceDecodeKernel<false>
        <<<grid, threads, 0, stream>>>(list.desc, list.image, blocks, num_selected, out);
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status LaunchParaPFor(const DeviceParaPForList& list, const uint32_t* blocks,
                            uint32_t num_selected, DecodeOutput output, uint32_t* out,
                            cudaStream_t stream) {
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
  if (num_selected == 0) return absl::OkStatus();
  const dim3 grid = DecodeGrid(num_selected);
  const dim3 threads(kernels::kDecodeThreads);
  if (output == DecodeOutput::kDocids) {
    kernels::ParaPForDecodeKernel<true>
        <<<grid, threads, 0, stream>>>(list.desc, list.image, blocks, num_selected, out);
  } else {
    kernels::ParaPForDecodeKernel<false>
        <<<grid, threads, 0, stream>>>(list.desc, list.image, blocks, num_selected, out);
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

dim3 InPlaceGrid(uint32_t max_entries) {
  return DecodeGrid(std::min(max_entries, kMaxInPlaceWarps));
}

absl::Status CheckEntries(const uint32_t* entries, uint32_t max_entries) {
  if (entries == nullptr && max_entries > 0) {
    return absl::InvalidArgumentError("no block entries given");
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status DecodePForBlocksInPlace(const DevicePForList& list, const uint32_t* entries,
                                     uint32_t max_entries, const uint32_t* device_count,
                                     DecodeOutput output, uint32_t* out, cudaStream_t stream) {
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
  if (absl::Status s = CheckEntries(entries, max_entries); !s.ok()) return s;
  if (max_entries == 0) return absl::OkStatus();
  const dim3 grid = InPlaceGrid(max_entries);
  WithPForInstance(list.desc.block_size, output, [&](auto block, auto docids) {
    kernels::PForDecodeInPlaceKernel<decltype(block)::value, decltype(docids)::value>
        <<<grid, kernels::kDecodeThreads, 0, stream>>>(list.desc, list.image, entries, max_entries,
                                                       device_count, out);
  });
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status DecodeRiceBlocksInPlace(const DeviceRiceList& list, const uint32_t* entries,
                                     uint32_t max_entries, const uint32_t* device_count,
                                     DecodeOutput output, uint32_t* out, cudaStream_t stream) {
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
  if (absl::Status s = CheckEntries(entries, max_entries); !s.ok()) return s;
  if (max_entries == 0) return absl::OkStatus();
  const dim3 grid = InPlaceGrid(max_entries);
  const dim3 threads(kernels::kDecodeThreads);
  if (output == DecodeOutput::kDocids) {
    kernels::RiceDecodeInPlaceKernel<true><<<grid, threads, 0, stream>>>(
        list.desc, list.image, entries, max_entries, device_count, out);
  } else {
    kernels::RiceDecodeInPlaceKernel<false><<<grid, threads, 0, stream>>>(
        list.desc, list.image, entries, max_entries, device_count, out);
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status DecodePForList(const DevicePForList& list, DecodeOutput output, uint32_t* out,
                            cudaStream_t stream) {
  return LaunchPFor(list, nullptr, list.desc.num_blocks, output, out, stream);
}

absl::Status DecodePForBlocks(const DevicePForList& list, const uint32_t* blocks,
                              uint32_t num_selected, DecodeOutput output, uint32_t* out,
                              cudaStream_t stream) {
  if (blocks == nullptr && num_selected > 0) {
    return absl::InvalidArgumentError("no block indices given");
  }
  return LaunchPFor(list, blocks, num_selected, output, out, stream);
}

absl::Status DecodeRiceList(const DeviceRiceList& list, DecodeOutput output, uint32_t* out,
                            cudaStream_t stream) {
  return LaunchRice(list, nullptr, list.desc.num_blocks, output, out, stream);
}

absl::Status DecodeRiceBlocks(const DeviceRiceList& list, const uint32_t* blocks,
                              uint32_t num_selected, DecodeOutput output, uint32_t* out,
                              cudaStream_t stream) {
  if (blocks == nullptr && num_selected > 0) {
    return absl::InvalidArgumentError("no block indices given");
  }
  return LaunchRice(list, blocks, num_selected, output, out, stream);
}

absl::Status DecodeParaPForList(const DeviceParaPForList& list, DecodeOutput output, uint32_t* out,
                                cudaStream_t stream) {
  return LaunchParaPFor(list, nullptr, list.desc.num_blocks, output, out, stream);
}

absl::Status DecodeParaPForBlocks(const DeviceParaPForList& list, const uint32_t* blocks,
                                  uint32_t num_selected, DecodeOutput output, uint32_t* out,
                                  cudaStream_t stream) {
  if (blocks == nullptr && num_selected > 0) {
    return absl::InvalidArgumentError("no block indices given");
  }
  return LaunchParaPFor(list, blocks, num_selected, output, out, stream);
}

absl::Status DecodeLrcList(const DeviceLrcList& list, uint32_t* out, cudaStream_t stream) {
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
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
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
  if (count == 0) return absl::OkStatus();
  if (positions == nullptr) return absl::InvalidArgumentError("no positions given");
  const uint32_t ctas = (count + kernels::kLrcThreads - 1) / kernels::kLrcThreads;
  kernels::LrcFetchKernel<<<ctas, kernels::kLrcThreads, 0, stream>>>(list.desc, list.image,
                                                                     positions, count, out);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

absl::Status FetchFreqs(const DeviceFreqList& list, const uint32_t* positions, uint32_t count,
                        uint32_t* out, cudaStream_t stream) {
  if (absl::Status s = CheckCall(list.desc, list.image, out, stream); !s.ok()) return s;
  if (count == 0) return absl::OkStatus();
  if (positions == nullptr) return absl::InvalidArgumentError("no positions given");
  const dim3 grid((count + kernels::kFetchThreads - 1) / kernels::kFetchThreads);
  kernels::FreqFetchKernel<<<grid, kernels::kFetchThreads, 0, stream>>>(list.desc, list.image,
                                                                        positions, count, out);
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace tandem::gpu
