// File: simdbp_codec.h
//
// The run-time choice of SIMD path shared by the "simdbp" block codec (SIMD-BP128, Lemire and
// Boytsov 2015, "Decoding billions of integers per second through vectorization", Software:
// Practice and Experience 45(1)) and by the vectorized turn of a block's docID gaps into docIDs.
//
// The path is picked once, at first use: the best one the CPU has (AVX2, then SSE4.1, then
// portable scalar code), unless the environment variable TANDEM_SIMD names another
// (scalar|sse41|avx2; one the CPU lacks falls back to the best it has, with a warning on stderr).
// Every path gives the same values, and the encoder does not depend on it, so index files stay
// portable. Tests and benchmarks switch paths with SetSimdPath:
//
//   for (SimdPath path : AvailableSimdPaths()) {
//     SetSimdPath(path);
//     codec->Decode(p, end, n, 0, gaps);
//     bool ok = GapsToDocids(base, gaps, n, docids);
//   }
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace tandem::index {

enum class SimdPath { kScalar, kSse41, kAvx2 };

// "scalar", "sse41", "avx2": the names TANDEM_SIMD takes.
std::string_view SimdPathName(SimdPath path);
// The path named `name`; false for an unknown name.
bool ParseSimdPath(std::string_view name, SimdPath* path);

// Whether this build and this CPU can run `path`. The scalar path always can; the x86 paths only
// in an x86 build on a CPU with the instructions.
bool SimdPathAvailable(SimdPath path);
// The available paths, scalar first.
std::vector<SimdPath> AvailableSimdPaths();

// The path the codec and GapsToDocids use now.
SimdPath ActiveSimdPath();
// Switches every later decode to `path` (process-wide). Returns false, changing nothing, when the
// path is not available. Meant for tests and benchmarks, between decodes.
bool SetSimdPath(SimdPath path);

// Turns n >= 1 docID gaps into docIDs by a prefix sum from `base` (the docID before the block):
// docids[i] = base + gaps[0] + ... + gaps[i], modulo 2^32. gaps and docids may be the same array.
// Returns false when a sum wrapped around 2^32 or a gap after the first is 0, i.e. unless
// base <= docids[0] < docids[1] < ... < docids[n-1] holds without wrapping. (Whether the first gap
// may be 0 is the caller's rule: only a list's first docID may be 0.)
bool GapsToDocids(uint32_t base, const uint32_t* gaps, size_t n, uint32_t* docids);

}  // namespace tandem::index
