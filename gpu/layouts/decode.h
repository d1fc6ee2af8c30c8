// File: decode.h
//
// Posting-list decompression on the GPU by prefix sums (Ding et al. 2009, section 6), individual
// frequency fetches (section 8), and the codecs of Ao et al. 2011 (ParaPFor, LRC; section 4), over
// lists already in device memory in the layouts of gpu/list_format.h (built on the host by
// gpu/list_layout.h).
//
// Each call is one kernel launch on the caller's stream, whatever the list's length: a warp decodes
// one block (128 or 512 postings) from its uncompressed base docID, so the whole list or any subset
// of its blocks (the blocks a Parallel Merge Find selected, section 8) decodes in the same pass,
// into a compact slot per selected block or in place.
//
//   DevicePForList list{image.desc, device_words};  // device_words: image.words on the GPU
//   TANDEM_RETURN_IF_ERROR(DecodePForList(list, DecodeOutput::kDocids, d_docids, stream));
//   TANDEM_RETURN_IF_ERROR(
//       DecodePForBlocks(list, d_blocks, 12, DecodeOutput::kDocids, d_out, stream));
//   TANDEM_RETURN_IF_ERROR(FetchFreqs(freqs, d_positions, m, d_tf, stream));
//
// Calls only check their arguments and launch; they return before the device has run. Device
// pointers: images and outputs 16-byte aligned (cudaMalloc's are). The null (legacy default) stream
// is refused: every launch names its stream. Compiles as C++17 (nvcc) and C++20 (g++).
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "absl/status/status.h"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu {

// A list whose image lies in device memory, in one of the layouts of list_format.h.
template <typename Desc>
struct DeviceImage {
  Desc desc;
  const uint32_t* image = nullptr;
};
using DevicePForList = DeviceImage<PForDesc>;
using DeviceRiceList = DeviceImage<RiceDesc>;
using DeviceFreqList = DeviceImage<FreqDesc>;
using DeviceParaPForList = DeviceImage<ParaPForDesc>;
using DeviceLrcList = DeviceImage<LrcDesc>;

// The codecs a warp decodes a block at a time, with a prefix sum for docIDs: PForDelta (Desc =
// PForDesc), Rice (RiceDesc) and ParaPFor (ParaPForDesc; Ao et al. 2011, Appendix G.2: one warp
// per block of kParaPForBlock postings, exceptions patched each by its own lane). The codec's own
// names below (DecodePForList, ...) are what callers use; decode.cu instantiates these for the
// three descriptors.

// Decodes the whole list into out[0..num_postings): docIDs, or gaps (docid[i] - docid[i-1], the
// first from 0).
template <typename Desc>
absl::Status DecodeAll(const DeviceImage<Desc>& list, DecodeOutput output, uint32_t* out,
                       cudaStream_t stream);

// Decodes the blocks blocks[0..num_selected) (device array of block indices, any order) into
// out[s * block_size ...]: selected block s fills out[s * block_size, s * block_size + n_s), n_s
// being its posting count (block_size except for a list's last block). Gaps of a block start from
// the docID before the block, so gaps and docIDs of any subset are exact. Indices >= num_blocks
// write nothing. `out` holds num_selected * block_size values.
template <typename Desc>
absl::Status DecodeBlocks(const DeviceImage<Desc>& list, const uint32_t* blocks,
                          uint32_t num_selected, DecodeOutput output, uint32_t* out,
                          cudaStream_t stream);

// PForDelta and Rice: decodes the blocks named by entries[0..count) in place: block k into
// out[k * block_size ...), where the whole-list decode puts it. count = max_entries or, with
// device_count (a device word read when the launch runs, so an earlier launch on the stream may
// set it), min(max_entries, *device_count). Entries >= num_blocks are skipped: the AND names a
// block only at the first candidate that falls in it (section 7) and needs neither a scan nor a
// compacted block list. One launch of at most kMaxInPlaceWarps warps. `out` holds num_blocks *
// block_size values; unnamed blocks' places are left as they were.
inline constexpr uint32_t kMaxInPlaceWarps = 8192;
template <typename Desc>
absl::Status DecodeBlocksInPlace(const DeviceImage<Desc>& list, const uint32_t* entries,
                                 uint32_t max_entries, const uint32_t* device_count,
                                 DecodeOutput output, uint32_t* out, cudaStream_t stream);

inline constexpr auto& DecodePForList = DecodeAll<PForDesc>;
inline constexpr auto& DecodeRiceList = DecodeAll<RiceDesc>;
inline constexpr auto& DecodeParaPForList = DecodeAll<ParaPForDesc>;
inline constexpr auto& DecodePForBlocks = DecodeBlocks<PForDesc>;
inline constexpr auto& DecodeRiceBlocks = DecodeBlocks<RiceDesc>;
inline constexpr auto& DecodeParaPForBlocks = DecodeBlocks<ParaPForDesc>;
inline constexpr auto& DecodePForBlocksInPlace = DecodeBlocksInPlace<PForDesc>;
inline constexpr auto& DecodeRiceBlocksInPlace = DecodeBlocksInPlace<RiceDesc>;

// LRC (section 4.2): the whole list's docIDs, no prefix sum: one thread per posting, or a warp per
// segment for long lists and HS-LRC.
absl::Status DecodeLrcList(const DeviceLrcList& list, uint32_t* out, cudaStream_t stream);

// The docIDs at positions[0..count) (device array, any order), each decoded alone (section 4.3's
// random access); a position >= num_postings yields 0.
absl::Status FetchLrcDocids(const DeviceLrcList& list, const uint32_t* positions, uint32_t count,
                            uint32_t* out, cudaStream_t stream);

// Fetches the frequencies (>= 1) of postings positions[0..count) (device array of positions in the
// list, any order, repeats allowed) into out[0..count), without decoding their blocks (section 8).
// A position >= num_postings yields 0.
absl::Status FetchFreqs(const DeviceFreqList& list, const uint32_t* positions, uint32_t count,
                        uint32_t* out, cudaStream_t stream);

}  // namespace tandem::gpu
