// File: kernels/bits.cuh
//
// Device helpers for the bit-packed arrays of gpu/list_format.h: value i of width w sits at bits
// [i*w, (i+1)*w), little-endian across 32-bit words, and every packed array ends with a spare word,
// so a value is two adjacent word loads and one funnel shift.
#pragma once

#include <cstdint>

namespace tandem::gpu::kernels {

// The low w bits set, for w in 0..32.
__device__ __forceinline__ uint32_t LowMask(uint32_t w) { return w >= 32 ? ~0u : (1u << w) - 1; }

// x << shift modulo 2^32 for shift in 0..32 (a plain shift by 32 is undefined in C++).
__device__ __forceinline__ uint32_t ShiftLeft(uint32_t x, uint32_t shift) {
  return shift >= 32 ? 0u : x << shift;
}

// Whether document d passes a filter's bits (bit d % 32 of word d / 32; null: every document).
__device__ __forceinline__ bool Allowed(const uint32_t* __restrict__ filter, uint32_t d) {
  return filter == nullptr || ((__ldg(filter + d / 32) >> (d % 32)) & 1u) != 0;
}

// Value `index` of width w of a packed array in global memory.
__device__ __forceinline__ uint32_t LoadPacked(const uint32_t* __restrict__ words, uint64_t index,
                                               uint32_t w) {
  if (w == 0) return 0;
  const uint64_t bit = index * w;
  const uint32_t* p = words + (bit >> 5);
  return __funnelshift_r(__ldg(p), __ldg(p + 1), static_cast<uint32_t>(bit & 31)) & LowMask(w);
}

// Value at bit offset `bit` (width w, 1..32) of packed words staged in shared memory.
__device__ __forceinline__ uint32_t ExtractPacked(const uint32_t* words, uint32_t bit, uint32_t w) {
  return __funnelshift_r(words[bit >> 5], words[(bit >> 5) + 1], bit & 31) & LowMask(w);
}

// Stages the packed b-bit slots of one block of `count` values into shared memory with 16-byte
// loads, a warp's lanes taking consecutive vectors (coalesced). `src` is the block's first slot
// word, 16-byte aligned (a block of 128 or 512 slots spans a multiple of 4 words); the layout's
// padding keeps the last vector inside the array. Also zeroes the word after the staged ones, which
// the extraction of the block's last value may read. kMaxVecsPerLane * 128 >= the block's words.
template <uint32_t kMaxVecsPerLane>
__device__ __forceinline__ void StageSlots(const uint32_t* __restrict__ src, uint32_t count,
                                           uint32_t b, uint32_t lane, uint32_t* smem) {
  const uint32_t vecs = (count * b + 127) / 128;  // 16-byte vectors holding count*b bits
  const uint4* from = reinterpret_cast<const uint4*>(src);
  uint4* to = reinterpret_cast<uint4*>(smem);
  uint4 staged[kMaxVecsPerLane];
#pragma unroll
  for (uint32_t i = 0; i < kMaxVecsPerLane; ++i) {
    if (lane + 32 * i < vecs) staged[i] = __ldg(from + lane + 32 * i);  // all loads in flight first
  }
#pragma unroll
  for (uint32_t i = 0; i < kMaxVecsPerLane; ++i) {
    if (lane + 32 * i < vecs) to[lane + 32 * i] = staged[i];
  }
  if (lane == 0) smem[4 * vecs] = 0;
}

// Lane `lane` stores its four consecutive values of a block, v[0..4) at dst[4 lane ..), with one
// 16-byte store (dst is 16-byte aligned) unless the block ends inside them (count values in all).
__device__ __forceinline__ void StoreLaneVector(uint32_t* __restrict__ dst, uint32_t lane,
                                                uint32_t count, const uint32_t (&v)[4]) {
  const uint32_t i = 4 * lane;
  if (i + 4 <= count) {
    reinterpret_cast<uint4*>(dst)[lane] = make_uint4(v[0], v[1], v[2], v[3]);
  } else {
#pragma unroll
    for (uint32_t r = 0; r < 4; ++r) {
      if (i + r < count) dst[i + r] = v[r];
    }
  }
}

}  // namespace tandem::gpu::kernels
