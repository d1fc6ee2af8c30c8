// File: kernels/pfor_decode.cuh
//
// GPU PForDelta decoding (Ding et al. 2009, section 6.2): one warp per block of kBlock postings.
//
//   1. Stage the block's b-bit slots into shared memory (16-byte coalesced loads, issued together
//      with the block's metadata loads) and unpack them, kBlock/32 consecutive values per lane.
//   2. Patch the block's exceptions: lanes read one exception each from the two PForDelta-coded
//      exception arrays (offset gaps and high parts), apply the rare second-level exceptions
//      (fetched once per block, 32 at a time, and handed to their lanes by shuffles), turn the
//      offset gaps into positions with a warp prefix sum (CUB), and OR the high bits into their
//      slots.
//   3. kDocids: the localized prefix sum (section 6) — each lane sums its values, one warp
//      exclusive scan (CUB), then running sums from the block's uncompressed base docID. Otherwise
//      the gaps.
//   4. Write the block with 16-byte coalesced stores.
//
// A warp's global loads form two dependent rounds (metadata and slots, then exceptions), so short
// lists, decoded in one wave, finish in about two memory latencies. Blocks are independent (their
// exception offsets restart in every block): a launch decodes the whole list or any subset of its
// blocks, one warp each, with no pass over the rest of the list.
#pragma once

#include <cstdint>
#include <cub/warp/warp_scan.cuh>

#include "gpu/kernels/bits.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

inline constexpr uint32_t kDecodeWarpsPerCta = 4;
inline constexpr uint32_t kDecodeThreads = 32 * kDecodeWarpsPerCta;

// Shared memory of one warp. Lane l's kPerLane values sit in row l of `values`; rows of 16 values
// are padded to 20 words so that the 16-byte accesses of 8 consecutive lanes hit distinct banks.
template <uint32_t kBlock>
struct PForWarpStorage {
  static constexpr uint32_t kPerLane = kBlock / 32;
  static constexpr uint32_t kRow = kPerLane == 4 ? 4 : kPerLane + 4;
  // The block's packed slots (kBlock words at b = 32) and a spare word.
  alignas(16) uint32_t slots[kBlock + 4];
  alignas(16) uint32_t values[32 * kRow];  // unpacked, patched values, one row per lane
  // Where value i of the block lives in `values`.
  static __device__ __forceinline__ uint32_t At(uint32_t i) {
    return (i / kPerLane) * kRow + i % kPerLane;
  }
};

// The whole warp decodes list block k (< d.num_blocks) into dst[0..count). Returns with the warp
// converged (__syncwarp), so the caller may reuse `s` for another block.
template <uint32_t kBlock, bool kDocids>
__device__ __forceinline__ void PForDecodeBlock(const PForDesc& d,
                                                const uint32_t* __restrict__ image, uint32_t k,
                                                uint32_t* __restrict__ dst,
                                                PForWarpStorage<kBlock>& s,
                                                cub::WarpScan<uint32_t>& scan, uint32_t lane) {
  static_assert(kBlock == 128 || kBlock == 512, "GPU PForDelta blocks hold 128 or 512 postings");
  using Storage = PForWarpStorage<kBlock>;
  constexpr uint32_t kPerLane = Storage::kPerLane;  // 4 or 16 values per lane
  constexpr uint32_t kVecsPerLane = kPerLane / 4;
  constexpr uint32_t kRowVecs = Storage::kRow / 4;

  const uint32_t first = k * kBlock;
  const uint32_t count = min(kBlock, d.num_postings - first);
  const uint32_t b = d.bit_width;

  // First round of loads: the block's base docID and exception ranges (one word per lane), and the
  // slots, all in flight together.
  uint32_t meta = 0;
  if (lane < 5) {
    const uint64_t at = lane == 0  ? d.bases + k
                        : lane < 3 ? d.exc_begin + k + (lane - 1)
                                   : d.sub_begin + k + (lane - 3);
    meta = __ldg(image + at);
  }
  StageSlots<kBlock / 128>(image + d.slots + uint64_t{first / 32} * b, count, b, lane, s.slots);
  const uint32_t base = __shfl_sync(~0u, meta, 0);
  const uint32_t exc_first = __shfl_sync(~0u, meta, 1);
  const uint32_t exc_end = __shfl_sync(~0u, meta, 2);
  const uint32_t sub_first = __shfl_sync(~0u, meta, 3);
  const uint32_t sub_end = __shfl_sync(~0u, meta, 4);

  // 1. Slots → values, lane l holding values [l * kPerLane, (l + 1) * kPerLane).
  __syncwarp();
  uint32_t v[kPerLane];
#pragma unroll
  for (uint32_t r = 0; r < kPerLane; ++r) {
    const uint32_t i = lane * kPerLane + r;
    v[r] = (b != 0 && i < count) ? ExtractPacked(s.slots, i * b, b) : 0;
  }
  uint4* values4 = reinterpret_cast<uint4*>(s.values);
  if (exc_first < exc_end) {  // the values go through shared memory only to be patched
#pragma unroll
    for (uint32_t q = 0; q < kVecsPerLane; ++q) {
      values4[lane * kRowVecs + q] = make_uint4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    }
    __syncwarp();

    // 2. Exceptions, 32 per round (a block of 128 usually has a handful, of 512 a few dozen). The
    // block's second-level exceptions come 32 at a time, lane t holding entry t of the batch.
    uint32_t batch_first = sub_first;  // first entry of the batch in registers
    uint32_t sub_key = ~0u, sub_extra = 0;
    if (batch_first + lane < sub_end) {
      sub_key = __ldg(image + d.sub_index + batch_first + lane);
      sub_extra = __ldg(image + d.sub_high + batch_first + lane);
    }
    uint32_t next = 0;           // next batch entry to apply
    uint32_t position_base = 0;  // the block position after the previous round's last exception
    for (uint32_t j0 = exc_first; j0 < exc_end; j0 += 32) {
      const uint32_t j = j0 + lane;
      const bool valid = j < exc_end;
      uint32_t offset_gap = valid ? LoadPacked(image + d.exc_offsets, j, d.offset_bits) : 0;
      uint32_t high = valid ? LoadPacked(image + d.exc_highs, j, d.high_bits) : 0;
      // Second-level exceptions (sorted by exception index) that fall in this round.
      const uint32_t round_end = min(j0 + 32, exc_end);
      while (batch_first + next < sub_end) {
        if (next == 32) {  // batch used up: the next 32 entries
          batch_first += 32;
          next = 0;
          sub_key = ~0u;
          if (batch_first + lane < sub_end) {
            sub_key = __ldg(image + d.sub_index + batch_first + lane);
            sub_extra = __ldg(image + d.sub_high + batch_first + lane);
          }
          continue;
        }
        const uint32_t key = __shfl_sync(~0u, sub_key, next);
        if ((key >> 1) >= round_end) break;
        const uint32_t extra = __shfl_sync(~0u, sub_extra, next);
        if ((key >> 1) == j) {
          if (key & 1) {
            high |= ShiftLeft(extra, d.high_bits);
          } else {
            offset_gap |= ShiftLeft(extra, d.offset_bits);
          }
        }
        ++next;
      }
      uint32_t inclusive = 0, total = 0;
      scan.InclusiveSum(valid ? offset_gap + 1 : 0u, inclusive, total);
      const uint32_t position = position_base + inclusive - 1;
      if (valid && position < count) s.values[Storage::At(position)] |= ShiftLeft(high + 1, b);
      position_base += total;
    }
    __syncwarp();
#pragma unroll
    for (uint32_t q = 0; q < kVecsPerLane; ++q) {
      const uint4 x = values4[lane * kRowVecs + q];
      v[4 * q] = x.x;
      v[4 * q + 1] = x.y;
      v[4 * q + 2] = x.z;
      v[4 * q + 3] = x.w;
    }
  }

  // 3. The localized prefix sum from the block's base docID.
  if constexpr (kDocids) {
    uint32_t lane_sum = 0;
#pragma unroll
    for (uint32_t r = 0; r < kPerLane; ++r) lane_sum += v[r];
    uint32_t before = 0;
    scan.ExclusiveSum(lane_sum, before);
    uint32_t running = base + before;  // modulo 2^32, as the builder's gaps
#pragma unroll
    for (uint32_t r = 0; r < kPerLane; ++r) v[r] = running += v[r];
  }

  // 4. Store. dst is a multiple of 4 values from a 16-byte aligned output (the block's first
  // posting, or a selection slot), so 16-byte stores stay aligned.
  if constexpr (kVecsPerLane == 1) {
    StoreLaneVector(dst, lane, count, v);
  } else {
    // Lanes hold consecutive runs of kPerLane values; go through shared memory so that each store
    // instruction writes 512 contiguous bytes.
#pragma unroll
    for (uint32_t q = 0; q < kVecsPerLane; ++q) {
      values4[lane * kRowVecs + q] = make_uint4(v[4 * q], v[4 * q + 1], v[4 * q + 2], v[4 * q + 3]);
    }
    __syncwarp();
#pragma unroll
    for (uint32_t q = 0; q < kVecsPerLane; ++q) {
      const uint32_t vec = 32 * q + lane;  // values [4 vec, 4 vec + 4) of the block
      const uint32_t i = 4 * vec;
      const uint4 x = values4[(vec / kVecsPerLane) * kRowVecs + vec % kVecsPerLane];
      if (i + 4 <= count) {
        reinterpret_cast<uint4*>(dst)[vec] = x;
      } else {
        const uint32_t tail[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
        for (uint32_t r = 0; r < 4; ++r) {
          if (i + r < count) dst[i + r] = tail[r];
        }
      }
    }
  }
  __syncwarp();
}

// For warp `selected` of a launch: decode(k, dst, warp storage, scan, lane) of list block
// k = blocks[selected] (or `selected` when blocks is null) into dst = out + selected * kBlock (or
// out + k * kBlock, where a whole-list decode puts it). The PForDelta, Rice and ParaPFor kernels'
// shared launch shape: a warp per block, four warps per CTA.
template <uint32_t kBlock, typename Storage, typename Decode>
__device__ __forceinline__ void DecodeSelectedBlock(
    uint32_t num_blocks, const uint32_t* __restrict__ blocks, uint32_t num_selected,
    uint32_t* __restrict__ out, Storage* storage,
    cub::WarpScan<uint32_t>::TempStorage* scan_storage, Decode decode) {
  const uint32_t warp = threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;
  const uint32_t selected = blockIdx.x * kDecodeWarpsPerCta + warp;
  if (selected >= num_selected) return;  // warp-uniform from here on
  const uint32_t k = blocks == nullptr ? selected : __ldg(blocks + selected);
  if (k >= num_blocks) return;
  cub::WarpScan<uint32_t> scan(scan_storage[warp]);
  decode(k, out + uint64_t{blocks == nullptr ? k : selected} * kBlock, storage[warp], scan, lane);
}

template <uint32_t kBlock, bool kDocids>
__global__ void __launch_bounds__(kDecodeThreads)
    PForDecodeKernel(const PForDesc d, const uint32_t* __restrict__ image,
                     const uint32_t* __restrict__ blocks, uint32_t num_selected,
                     uint32_t* __restrict__ out) {
  __shared__ PForWarpStorage<kBlock> storage[kDecodeWarpsPerCta];
  __shared__ cub::WarpScan<uint32_t>::TempStorage scan_storage[kDecodeWarpsPerCta];
  DecodeSelectedBlock<kBlock>(
      d.num_blocks, blocks, num_selected, out, storage, scan_storage,
      [&](uint32_t k, uint32_t* dst, PForWarpStorage<kBlock>& s, cub::WarpScan<uint32_t>& scan,
          uint32_t lane) { PForDecodeBlock<kBlock, kDocids>(d, image, k, dst, s, scan, lane); });
}

// Calls decode(k, warp storage, scan, lane) for every list block k < num_blocks named by
// entries[0..count), count = max_entries or, with device_count, min(max_entries, *device_count).
// Warp w of W looks at entries w, w + W, w + 2W, ... 32 at a time (lane l at w + l * W, one
// ballot), so a launch of min(count, W) warps keeps one block per warp while the entries are few
// and spreads the blocks evenly when most entries are skipped (the AND's candidates that are not
// the first of their block, section 7).
template <typename Storage, typename Decode>
__device__ __forceinline__ void ForEachEntryBlock(
    const uint32_t* __restrict__ entries, uint32_t max_entries,
    const uint32_t* __restrict__ device_count, uint32_t num_blocks, Storage* storage,
    cub::WarpScan<uint32_t>::TempStorage* scan_storage, Decode decode) {
  const uint32_t warp = threadIdx.x / 32;
  const uint32_t lane = threadIdx.x % 32;
  const uint64_t warps = uint64_t{gridDim.x} * kDecodeWarpsPerCta;
  const uint32_t count = device_count == nullptr ? max_entries : min(max_entries, *device_count);
  cub::WarpScan<uint32_t> scan(scan_storage[warp]);
  for (uint64_t base = uint64_t{blockIdx.x} * kDecodeWarpsPerCta + warp; base < count;
       base += 32 * warps) {
    const uint64_t at = base + lane * warps;
    const uint32_t k = at < count ? __ldg(entries + at) : num_blocks;
    for (uint32_t pending = __ballot_sync(~0u, k < num_blocks); pending != 0;
         pending &= pending - 1) {
      decode(__shfl_sync(~0u, k, __ffs(pending) - 1), storage[warp], scan, lane);
    }
  }
}

// Decodes every list block named by entries (ForEachEntryBlock) in place: block k to
// out + k * kBlock, where a whole-list decode puts it. A block named twice is written twice with
// the same values.
template <uint32_t kBlock, bool kDocids>
__global__ void __launch_bounds__(kDecodeThreads)
    PForDecodeInPlaceKernel(const PForDesc d, const uint32_t* __restrict__ image,
                            const uint32_t* __restrict__ entries, uint32_t max_entries,
                            const uint32_t* __restrict__ device_count, uint32_t* __restrict__ out) {
  __shared__ PForWarpStorage<kBlock> storage[kDecodeWarpsPerCta];
  __shared__ cub::WarpScan<uint32_t>::TempStorage scan_storage[kDecodeWarpsPerCta];
  ForEachEntryBlock(
      entries, max_entries, device_count, d.num_blocks, storage, scan_storage,
      [&](uint32_t k, PForWarpStorage<kBlock>& s, cub::WarpScan<uint32_t>& scan, uint32_t lane) {
        PForDecodeBlock<kBlock, kDocids>(d, image, k, out + uint64_t{k} * kBlock, s, scan, lane);
      });
}

}  // namespace tandem::gpu::kernels
