// File: kernels/rice_decode.cuh
//
// GPU Rice decoding (Ding et al. 2009, section 6.1): one warp per block of kRiceBlock postings. A
// gap is q * 2^b + r, so docID i of a block is
//
//     base + 2^b * (q_0 + ... + q_i) + (r_0 + ... + r_i),
//
// two localized prefix sums from the block's stored base sums:
//   - unary part: a bit-wise prefix sum plus compaction. Zero-bits are terminators. A warp reads
//     32 words (1024 bits) of the block's unary bits at a time and walks them in passes of 8 words,
//     one byte per lane (passes without a terminator are skipped): a warp exclusive scan (CUB) of
//     the bytes' zero counts numbers every terminator (one popcount per 8 bits instead of the
//     paper's one integer per bit), and the terminator of posting e at bit offset p (from the
//     block's first unary bit) yields p - e, the one-bits before it, i.e. q_0 + ... + q_e, which is
//     compacted by posting into shared memory. A byte per lane spreads the terminators of a typical
//     block (about 128 + 128 * mean(q) bits) over all lanes; whole words without terminators cost
//     one ballot.
//   - binary part: b-bit remainders unpacked four per lane, summed by a warp exclusive scan (CUB).
// Without the final prefix sum (kDocids = false) the gaps are (Q_i - Q_{i-1}) * 2^b + r_i.
#pragma once

#include <cstdint>
#include <cub/warp/warp_scan.cuh>

#include "gpu/kernels/bits.cuh"
#include "gpu/kernels/pfor_decode.cuh"
#include "gpu/layouts/list_format.h"

namespace tandem::gpu::kernels {

struct RiceWarpStorage {
  alignas(16) uint32_t slots[kRiceBlock + 4];  // the block's packed remainders + spare
  alignas(16) uint32_t q_sums[kRiceBlock];     // q_0 + ... + q_e of posting e, local to the block
};

// The whole warp decodes list block k (< d.num_blocks) into dst[0..count). Returns with the warp
// converged (__syncwarp), so the caller may reuse `s` for another block.
template <bool kDocids>
__device__ __forceinline__ void RiceDecodeBlock(const RiceDesc& d,
                                                const uint32_t* __restrict__ image, uint32_t k,
                                                uint32_t* __restrict__ dst, RiceWarpStorage& s,
                                                cub::WarpScan<uint32_t>& scan, uint32_t lane) {
  constexpr uint32_t kPerLane = kRiceBlock / 32;
  static_assert(kPerLane == 4, "one 16-byte vector per lane");

  const uint32_t first = k * kRiceBlock;
  const uint32_t count = min(kRiceBlock, d.num_postings - first);
  const uint32_t b = d.bit_width;

  // Base sums (the docID before the block, the unary one-bits before and after it) and the binary
  // part, loaded together.
  uint32_t meta = 0;
  if (lane < 3) {
    const uint64_t at = lane == 0 ? d.bases + k : d.unary_bases + k + (lane - 1);
    meta = __ldg(image + at);
  }
  StageSlots<1>(image + d.binary + uint64_t{first / 32} * b, count, b, lane, s.slots);
  const uint32_t base = __shfl_sync(~0u, meta, 0);
  const uint32_t q_before = __shfl_sync(~0u, meta, 1);
  const uint32_t q_after = __shfl_sync(~0u, meta, 2);

  if (count < kRiceBlock) reinterpret_cast<uint4*>(s.q_sums)[lane] = make_uint4(0, 0, 0, 0);
  __syncwarp();

  // Unary part: bits [start, end) hold the block's count terminators and q_after - q_before ones;
  // long runs of ones (outlier gaps) take several rounds.
  const uint64_t start = uint64_t{first} + q_before;
  const uint64_t end = start + count + (q_after - q_before);
  const uint64_t first_word = start / 32;
  const uint64_t last_word = (end - 1) / 32;
  const uint32_t* unary = image + d.unary;
  uint32_t found = 0;  // terminators numbered so far
  for (uint64_t w0 = first_word; w0 <= last_word && found < count; w0 += 32) {
    const uint64_t w = w0 + lane;
    uint32_t word = ~0u;  // one-bits are not terminators: bits outside the block read as ones
    if (w <= last_word) {
      word = __ldg(unary + w);
      if (w == first_word) word |= LowMask(start % 32);
      if (w == last_word) word |= ~LowMask((end - 1) % 32 + 1);
    }
    const uint32_t terminators = ~word;
    const uint32_t words_with_terminators = __ballot_sync(~0u, terminators != 0);
#pragma unroll
    for (uint32_t pass = 0; pass < 4; ++pass) {
      if (((words_with_terminators >> (8 * pass)) & 0xffu) == 0) continue;
      const uint32_t word_index = 8 * pass + lane / 4;  // lane takes byte lane % 4 of this word
      const uint32_t shift = 8 * (lane % 4);
      uint32_t zeros = (__shfl_sync(~0u, terminators, word_index) >> shift) & 0xffu;
      uint32_t before = 0, total = 0;
      scan.ExclusiveSum(static_cast<uint32_t>(__popc(zeros)), before, total);
      // Bit offset, from the block's first unary bit, of this lane's byte.
      const uint64_t byte_offset = (w0 + word_index) * 32 + shift - start;
      uint32_t e = found + before;
      while (zeros != 0) {
        const uint32_t bit = __ffs(zeros) - 1;
        zeros &= zeros - 1;
        if (e < kRiceBlock) s.q_sums[e] = static_cast<uint32_t>(byte_offset + bit - e);
        ++e;
      }
      found += total;
    }
  }
  __syncwarp();

  uint32_t r[kPerLane];
#pragma unroll
  for (uint32_t t = 0; t < kPerLane; ++t) {
    const uint32_t i = lane * kPerLane + t;
    r[t] = (b != 0 && i < count) ? ExtractPacked(s.slots, i * b, b) : 0;
  }
  const uint4 q4 = reinterpret_cast<const uint4*>(s.q_sums)[lane];
  const uint32_t q_sum[kPerLane] = {q4.x, q4.y, q4.z, q4.w};
  uint32_t v[kPerLane];
  if constexpr (kDocids) {
    const uint32_t lane_sum = r[0] + r[1] + r[2] + r[3];
    uint32_t before = 0;
    scan.ExclusiveSum(lane_sum, before);
    uint32_t r_sum = base + before;  // modulo 2^32, as the builder's gaps
#pragma unroll
    for (uint32_t t = 0; t < kPerLane; ++t) {
      r_sum += r[t];
      v[t] = r_sum + ShiftLeft(q_sum[t], b);
    }
  } else {
    uint32_t previous = __shfl_up_sync(~0u, q_sum[kPerLane - 1], 1);
    if (lane == 0) previous = 0;
#pragma unroll
    for (uint32_t t = 0; t < kPerLane; ++t) {
      v[t] = ShiftLeft(q_sum[t] - previous, b) + r[t];
      previous = q_sum[t];
    }
  }

  StoreLaneVector(dst, lane, count, v);
  __syncwarp();
}

// Warp `selected` of the launch decodes list block blocks[selected] (DecodeSelectedBlock).
template <bool kDocids>
__global__ void __launch_bounds__(kDecodeThreads)
    RiceDecodeKernel(const RiceDesc d, const uint32_t* __restrict__ image,
                     const uint32_t* __restrict__ blocks, uint32_t num_selected,
                     uint32_t* __restrict__ out) {
  __shared__ RiceWarpStorage storage[kDecodeWarpsPerCta];
  __shared__ cub::WarpScan<uint32_t>::TempStorage scan_storage[kDecodeWarpsPerCta];
  DecodeSelectedBlock<kRiceBlock>(
      d.num_blocks, blocks, num_selected, out, storage, scan_storage,
      [&](uint32_t k, uint32_t* dst, RiceWarpStorage& s, cub::WarpScan<uint32_t>& scan,
          uint32_t lane) { RiceDecodeBlock<kDocids>(d, image, k, dst, s, scan, lane); });
}

// Decodes every list block named by entries (ForEachEntryBlock, pfor_decode.cuh) in place: block k
// to out + k * kRiceBlock, where a whole-list decode puts it.
template <bool kDocids>
__global__ void __launch_bounds__(kDecodeThreads)
    RiceDecodeInPlaceKernel(const RiceDesc d, const uint32_t* __restrict__ image,
                            const uint32_t* __restrict__ entries, uint32_t max_entries,
                            const uint32_t* __restrict__ device_count, uint32_t* __restrict__ out) {
  __shared__ RiceWarpStorage storage[kDecodeWarpsPerCta];
  __shared__ cub::WarpScan<uint32_t>::TempStorage scan_storage[kDecodeWarpsPerCta];
  ForEachEntryBlock(
      entries, max_entries, device_count, d.num_blocks, storage, scan_storage,
      [&](uint32_t k, RiceWarpStorage& s, cub::WarpScan<uint32_t>& scan, uint32_t lane) {
        RiceDecodeBlock<kDocids>(d, image, k, out + uint64_t{k} * kRiceBlock, s, scan, lane);
      });
}

}  // namespace tandem::gpu::kernels
