// File: simdbp_codec_internal.h
//
// The kernels behind the "simdbp" codec (simdbp_codec.cc), one table per SIMD path
// (simdbp_codec_kernels.cc). Code outside index/ uses the codec through GetBlockCodec("simdbp")
// and the path choice through simdbp_codec.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "index/block_codec.h"

namespace tandem::index::internal {

// A full block of kBlockSize values packed at b bits takes kSimdBpWordsPerBit * b 32-bit words.
static_assert(kBlockSize == 128, "SIMD-BP128 packs blocks of exactly 128 values");
inline constexpr size_t kSimdBpLanes = 4;
inline constexpr size_t kSimdBpWordsPerBit = kSimdBpLanes;

// Writes the 16 * b bytes of 128 values packed at b bits (0 <= b <= 32, every value below 2^b) in
// the vertical layout: value i is the (i / 4)-th b-bit field of lane i % 4, a lane's fields run
// little-endian through its b words, and word w of lane l is 32-bit word 4 * w + l of the output.
// The encoder is the same on every path, so the bytes never depend on the CPU.
void PackVertical128(const uint32_t* values, uint32_t b, uint8_t* out);

// Unpacks 128 values from the 16 * b bytes at `in` (reads nothing else) and returns the OR of
// the values, from which the decoder checks that b is the width of the largest.
using UnpackVerticalFn = uint32_t (*)(const uint8_t* in, uint32_t* out);
// GapsToDocids's contract (simdbp_codec.h).
using GapsToDocidsFn = bool (*)(uint32_t base, const uint32_t* gaps, size_t n, uint32_t* docids);

struct SimdBpKernels {
  UnpackVerticalFn unpack[33];  // by bit width b
  GapsToDocidsFn gaps_to_docids;
};

// The portable kernels, which every build has.
const SimdBpKernels& ScalarSimdBpKernels();
// The x86 kernels; nullptr in a build for another architecture. They run only on a CPU with the
// instructions (SimdPathAvailable).
const SimdBpKernels* Sse41SimdBpKernels();
const SimdBpKernels* Avx2SimdBpKernels();

}  // namespace tandem::index::internal
