// File: kernels/para_pfor_decode.cuh
//
// ParaPFor decoding (Ao et al. 2011, Appendix G.2, Algorithm 2): one warp per block of
// kParaPForBlock postings, four per lane.
//
//   1. Stage the block's bit stream (slots, exception indices, overflows) into shared memory with
//      coalesced word loads, issued with the block's header, data offsets and base docID.
//   2. Every lane unpacks its four slots (Algorithm 2, lines 4-5).
//   3. Lane j patches exception j, j + 32, ...: it reads the exception's index and overflow and ORs
//      the overflow above the slot's b bits (lines 7-11). Indices are stored as they are, so no
//      exception waits for another (GPU PForDelta's offset gaps need a scan first).
//   4. kDocids: the localized prefix sum from the block's base docID (one warp scan); then 16-byte
//      stores.
#pragma once

#include <cstdint>
#include <cub/warp/warp_scan.cuh>

#include "gpu/kernels/bits.cuh"
#include "gpu/kernels/pfor_decode.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

struct ParaPForWarpStorage {
  // The largest block: 128 32-bit slots, or 128 exceptions of 7 index and 32 overflow bits over
  // 0-bit slots (156 words); and the spare word after it.
  static constexpr uint32_t kMaxWords = 160;
  alignas(16) uint32_t data[kMaxWords];
  alignas(16) uint32_t values[kParaPForBlock];
};

// The whole warp decodes block k (< d.num_blocks) into dst[0..count).
template <bool kDocids>
__device__ __forceinline__ void ParaPForDecodeBlock(const ParaPForDesc& d,
                                                    const uint32_t* __restrict__ image, uint32_t k,
                                                    uint32_t* __restrict__ dst,
                                                    ParaPForWarpStorage& s,
                                                    cub::WarpScan<uint32_t>& scan, uint32_t lane) {
  const uint32_t first = k * kParaPForBlock;
  const uint32_t count = min(kParaPForBlock, d.num_postings - first);
  uint32_t meta = 0;
  if (lane < 4) {
    const uint64_t at = lane == 0  ? d.headers + k
                        : lane < 3 ? d.offsets + k + (lane - 1)
                                   : d.bases + k;
    meta = __ldg(image + at);
  }
  const uint32_t header = __shfl_sync(~0u, meta, 0);
  const uint32_t begin = __shfl_sync(~0u, meta, 1);
  const uint32_t end = __shfl_sync(~0u, meta, 2);
  const uint32_t base = __shfl_sync(~0u, meta, 3);
  const uint32_t b = ParaPForSlotWidth(header), ib = ParaPForIndexWidth(header);
  const uint32_t hb = ParaPForOverflowWidth(header), en = ParaPForExceptions(header);

  // 1. The block's words and the one after them (the next block's first, or the spare word).
  const uint32_t words = min(end - begin + 1, ParaPForWarpStorage::kMaxWords);
  const uint32_t* from = image + d.data + begin;
  for (uint32_t w = lane; w < words; w += 32) s.data[w] = __ldg(from + w);
  __syncwarp();

  // 2. Slots: lane l holds values [4l, 4l + 4).
  uint32_t v[4];
#pragma unroll
  for (uint32_t r = 0; r < 4; ++r) {
    const uint32_t i = 4 * lane + r;
    v[r] = i < count ? ExtractPacked(s.data, i * b, b) : 0;
  }
  uint4* values4 = reinterpret_cast<uint4*>(s.values);
  if (en > 0) {
    values4[lane] = make_uint4(v[0], v[1], v[2], v[3]);
    __syncwarp();
    // 3. Exceptions, each patched by its own lane.
    const uint32_t indices = count * b, overflows = indices + en * ib;
    for (uint32_t j = lane; j < en; j += 32) {
      const uint32_t index = ExtractPacked(s.data, indices + j * ib, ib);
      const uint32_t overflow = ExtractPacked(s.data, overflows + j * hb, hb);
      if (index < count) s.values[index] |= ShiftLeft(overflow, b);
    }
    __syncwarp();
    const uint4 x = values4[lane];
    v[0] = x.x;
    v[1] = x.y;
    v[2] = x.z;
    v[3] = x.w;
  }

  // 4. The localized prefix sum, then the store.
  if constexpr (kDocids) {
    uint32_t before = 0;
    scan.ExclusiveSum(v[0] + v[1] + v[2] + v[3], before);
    uint32_t running = base + before;  // modulo 2^32, as the builder's gaps
#pragma unroll
    for (uint32_t r = 0; r < 4; ++r) v[r] = running += v[r];
  }
  StoreLaneVector(dst, lane, count, v);
  __syncwarp();
}

// Warp `selected` of the launch decodes block blocks[selected] (DecodeSelectedBlock).
template <bool kDocids>
__global__ void __launch_bounds__(kDecodeThreads)
    ParaPForDecodeKernel(const ParaPForDesc d, const uint32_t* __restrict__ image,
                         const uint32_t* __restrict__ blocks, uint32_t num_selected,
                         uint32_t* __restrict__ out) {
  __shared__ ParaPForWarpStorage storage[kDecodeWarpsPerCta];
  __shared__ cub::WarpScan<uint32_t>::TempStorage scan_storage[kDecodeWarpsPerCta];
  DecodeSelectedBlock<kParaPForBlock>(
      d.num_blocks, blocks, num_selected, out, storage, scan_storage,
      [&](uint32_t k, uint32_t* dst, ParaPForWarpStorage& s, cub::WarpScan<uint32_t>& scan,
          uint32_t lane) { ParaPForDecodeBlock<kDocids>(d, image, k, dst, s, scan, lane); });
}

}  // namespace tandem::gpu::kernels
