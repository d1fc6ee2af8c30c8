// The kernels of SIMD-BP128 (Lemire and Boytsov 2015, section 4) for 128 values in four 32-bit
// lanes, and the prefix sum that turns docID gaps into docIDs, each written three times: portable
// scalar code, SSE4.1 and AVX2. The x86 versions carry per-function target attributes, so the
// library builds for baseline x86-64 and simdbp_codec.cc calls them only on a CPU that has the
// instructions (no -mavx2 for the whole build).
//
// The packing is written here rather than taken from a library: Debian 12 packages no SIMD-BP128
// implementation (no libsimdcomp, no FastPFor; only libstreamvbyte, another format), and the
// codec's byte layout (index/FORMAT.md) must be Tandem's own, fixed independently of any library's
// version.
//
// Unpacking: with 4·b words of the block in the vertical layout, row k (values 4k..4k+3) is the
// k-th b-bit field of every lane, so one 128-bit word of the input holds the same field of four
// values and one shift, one mask (and, when the field straddles two words, a second shift and an
// OR) yield four values. Each row's word and shift are compile-time constants (one instantiation
// per b), so no bit position is carried from value to value. AVX2 decodes two rows, i.e. 8
// consecutive values, per instruction: the two rows' words are loaded side by side into one
// 256-bit register and shifted by per-half counts (VPSRLVD).
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "index/simdbp_codec_internal.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define TANDEM_SIMDBP_X86 1
#endif

namespace tandem::index::internal {
namespace {

template <uint32_t B>
constexpr uint32_t kMask = B == 32 ? 0xFFFFFFFFu : (uint32_t{1} << B) - 1;

// Where row K's field of B bits lies in a lane: word, shift, and whether it spills into the next.
template <uint32_t B, uint32_t K>
struct Field {
  static constexpr uint32_t kWord = K * B / 32;
  static constexpr uint32_t kShift = K * B % 32;
  static constexpr bool kSpills = kShift + B > 32;
};

// ---- Portable scalar code ----------------------------------------------------------------------

template <uint32_t B, uint32_t K>
inline void UnpackRowScalar(const uint32_t* words, uint32_t* out, uint32_t* all) {
  using F = Field<B, K>;
  for (uint32_t lane = 0; lane < kSimdBpLanes; ++lane) {
    uint32_t v = words[kSimdBpLanes * F::kWord + lane] >> F::kShift;
    if constexpr (F::kSpills) {
      v |= words[kSimdBpLanes * (F::kWord + 1) + lane] << (32 - F::kShift);
    }
    v &= kMask<B>;
    out[kSimdBpLanes * K + lane] = v;
    *all |= v;
  }
}

template <uint32_t B, size_t... K>
inline uint32_t UnpackRowsScalar(const uint32_t* words, uint32_t* out, std::index_sequence<K...>) {
  uint32_t all = 0;
  (UnpackRowScalar<B, K>(words, out, &all), ...);
  return all;
}

template <uint32_t B>
uint32_t UnpackScalar(const uint8_t* in, uint32_t* out) {
  if constexpr (B == 0) {
    std::memset(out, 0, kBlockSize * sizeof(uint32_t));
    return 0;
  } else {
    uint32_t words[kSimdBpWordsPerBit * B];
    std::memcpy(words, in, sizeof(words));
    return UnpackRowsScalar<B>(words, out, std::make_index_sequence<kBlockSize / kSimdBpLanes>{});
  }
}

// The first docID may equal `base`; every later one must exceed the one before. A sum that wraps
// around 2^32 comes out below the docID before it (every gap is below 2^32), so it fails the same
// comparison.
bool GapsToDocidsScalar(uint32_t base, const uint32_t* gaps, size_t n, uint32_t* docids) {
  uint32_t doc = base + gaps[0];
  bool ok = doc >= base;
  docids[0] = doc;
  for (size_t i = 1; i < n; ++i) {
    const uint32_t next = doc + gaps[i];
    ok &= next > doc;
    docids[i] = doc = next;
  }
  return ok;
}

template <size_t... B>
constexpr SimdBpKernels MakeScalarKernels(std::index_sequence<B...>) {
  return {{&UnpackScalar<static_cast<uint32_t>(B)>...}, &GapsToDocidsScalar};
}

#ifdef TANDEM_SIMDBP_X86

#define TANDEM_SSE41 __attribute__((target("sse4.1")))
#define TANDEM_AVX2 __attribute__((target("avx2")))
#define TANDEM_INLINE inline __attribute__((always_inline))

// ---- SSE4.1 ------------------------------------------------------------------------------------

template <uint32_t B, uint32_t K>
TANDEM_SSE41 TANDEM_INLINE void UnpackRowSse41(const __m128i* in, __m128i mask, uint32_t* out,
                                               __m128i* all) {
  using F = Field<B, K>;
  __m128i v = _mm_srli_epi32(_mm_loadu_si128(in + F::kWord), F::kShift);
  if constexpr (F::kSpills) {
    v = _mm_or_si128(v, _mm_slli_epi32(_mm_loadu_si128(in + F::kWord + 1), 32 - F::kShift));
  }
  v = _mm_and_si128(v, mask);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out) + K, v);
  *all = _mm_or_si128(*all, v);
}

template <uint32_t B, size_t... K>
TANDEM_SSE41 TANDEM_INLINE uint32_t UnpackRowsSse41(const uint8_t* in, uint32_t* out,
                                                    std::index_sequence<K...>) {
  const __m128i mask = _mm_set1_epi32(static_cast<int>(kMask<B>));
  __m128i all = _mm_setzero_si128();
  (UnpackRowSse41<B, K>(reinterpret_cast<const __m128i*>(in), mask, out, &all), ...);
  all = _mm_or_si128(all, _mm_shuffle_epi32(all, 0x4E));
  all = _mm_or_si128(all, _mm_shuffle_epi32(all, 0xB1));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(all));
}

template <uint32_t B>
TANDEM_SSE41 uint32_t UnpackSse41(const uint8_t* in, uint32_t* out) {
  if constexpr (B == 0 || B == 32) {
    return UnpackScalar<B>(in, out);  // zeros, or a copy
  } else {
    return UnpackRowsSse41<B>(in, out, std::make_index_sequence<kBlockSize / kSimdBpLanes>{});
  }
}

// Prefix sum of four gaps in a register (two shifted adds), plus the docID before them. `before`
// holds that docID in every lane and comes back holding the last of the four. `bad` collects the
// lanes whose docID does not exceed the one before (or, in the first lane of a block with
// kFirst, is below it).
template <bool kFirst>
TANDEM_SSE41 TANDEM_INLINE __m128i PrefixSumSse41(__m128i v, __m128i* before, __m128i* bad) {
  v = _mm_add_epi32(v, _mm_slli_si128(v, 4));
  v = _mm_add_epi32(v, _mm_slli_si128(v, 8));
  v = _mm_add_epi32(v, *before);
  const __m128i prev = _mm_alignr_epi8(v, *before, 12);  // the docID before each lane
  __m128i not_above = _mm_cmpeq_epi32(_mm_max_epu32(prev, v), prev);
  if constexpr (kFirst) {
    const __m128i first_equal =
        _mm_and_si128(_mm_cmpeq_epi32(prev, v), _mm_setr_epi32(-1, 0, 0, 0));
    not_above = _mm_andnot_si128(first_equal, not_above);
  }
  *bad = _mm_or_si128(*bad, not_above);
  *before = _mm_shuffle_epi32(v, 0xFF);
  return v;
}

// The docIDs from position i on, one at a time, after the vectors.
inline bool GapsToDocidsTail(size_t i, uint32_t doc, const uint32_t* gaps, size_t n,
                             uint32_t* docids) {
  bool ok = true;
  for (; i < n; ++i) {
    const uint32_t next = doc + gaps[i];
    ok &= next > doc;
    docids[i] = doc = next;
  }
  return ok;
}

TANDEM_SSE41 bool GapsToDocidsSse41(uint32_t base, const uint32_t* gaps, size_t n,
                                    uint32_t* docids) {
  if (n < 4) return GapsToDocidsScalar(base, gaps, n, docids);
  __m128i before = _mm_set1_epi32(static_cast<int>(base));
  __m128i bad = _mm_setzero_si128();
  auto* out = reinterpret_cast<__m128i*>(docids);
  const auto* in = reinterpret_cast<const __m128i*>(gaps);
  _mm_storeu_si128(out, PrefixSumSse41<true>(_mm_loadu_si128(in), &before, &bad));
  size_t i = 4;
  for (; i + 4 <= n; i += 4) {
    _mm_storeu_si128(out + i / 4,
                     PrefixSumSse41<false>(_mm_loadu_si128(in + i / 4), &before, &bad));
  }
  const bool ok = _mm_testz_si128(bad, bad);
  return GapsToDocidsTail(i, static_cast<uint32_t>(_mm_cvtsi128_si32(before)), gaps, n, docids) &&
         ok;
}

template <size_t... B>
constexpr SimdBpKernels MakeSse41Kernels(std::index_sequence<B...>) {
  return {{&UnpackSse41<static_cast<uint32_t>(B)>...}, &GapsToDocidsSse41};
}

// ---- AVX2 --------------------------------------------------------------------------------------

// Rows K and K + 1 (values 4K .. 4K + 7). Their fields start in words lo and hi, hi = lo or
// lo + 1 (b <= 32). One register holds word lo of the four lanes in its low half and word hi in
// its high half: a 256-bit load of words lo, lo + 1 or a broadcast of word lo. The words the
// fields spill into come the same way, from lo + 1. No load reaches a word the block lacks: word
// lo + 2 is loaded only when row K + 1 spills into it.
template <uint32_t B, uint32_t K>
TANDEM_AVX2 TANDEM_INLINE void UnpackRowPairAvx2(const uint8_t* in, __m256i mask, uint32_t* out,
                                                 __m256i* all) {
  using F0 = Field<B, K>;
  using F1 = Field<B, K + 1>;
  constexpr uint32_t kLo = F0::kWord;
  constexpr size_t kWordBytes = 16;
  static_assert(F1::kWord == kLo || F1::kWord == kLo + 1);
  const uint8_t* lo = in + kWordBytes * kLo;
  __m256i v;
  if constexpr (F1::kWord == kLo) {
    v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(lo)));
  } else {
    v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(lo));
  }
  constexpr int kS0 = static_cast<int>(F0::kShift);
  constexpr int kS1 = static_cast<int>(F1::kShift);
  v = _mm256_srlv_epi32(v, _mm256_setr_epi32(kS0, kS0, kS0, kS0, kS1, kS1, kS1, kS1));
  if constexpr (F0::kSpills || F1::kSpills) {
    const uint8_t* next = lo + kWordBytes;
    __m256i w;
    if constexpr (F1::kWord == kLo + 1 && F1::kSpills) {
      w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(next));
    } else {
      w = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(next)));
    }
    // A count of 32 clears the half whose field does not spill.
    constexpr int kL0 = F0::kSpills ? 32 - kS0 : 32;
    constexpr int kL1 = F1::kSpills ? 32 - kS1 : 32;
    v = _mm256_or_si256(
        v, _mm256_sllv_epi32(w, _mm256_setr_epi32(kL0, kL0, kL0, kL0, kL1, kL1, kL1, kL1)));
  }
  v = _mm256_and_si256(v, mask);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out) + K / 2, v);
  *all = _mm256_or_si256(*all, v);
}

template <uint32_t B, size_t... P>
TANDEM_AVX2 TANDEM_INLINE uint32_t UnpackRowsAvx2(const uint8_t* in, uint32_t* out,
                                                  std::index_sequence<P...>) {
  const __m256i mask = _mm256_set1_epi32(static_cast<int>(kMask<B>));
  __m256i all = _mm256_setzero_si256();
  (UnpackRowPairAvx2<B, 2 * P>(in, mask, out, &all), ...);
  __m128i a = _mm_or_si128(_mm256_castsi256_si128(all), _mm256_extracti128_si256(all, 1));
  a = _mm_or_si128(a, _mm_shuffle_epi32(a, 0x4E));
  a = _mm_or_si128(a, _mm_shuffle_epi32(a, 0xB1));
  return static_cast<uint32_t>(_mm_cvtsi128_si32(a));
}

template <uint32_t B>
TANDEM_AVX2 uint32_t UnpackAvx2(const uint8_t* in, uint32_t* out) {
  if constexpr (B == 0 || B == 32) {
    return UnpackScalar<B>(in, out);
  } else {
    return UnpackRowsAvx2<B>(in, out, std::make_index_sequence<kBlockSize / 8>{});
  }
}

// PrefixSumSse41 for eight lanes: the two 128-bit halves are summed apart, then the low half's
// last sum is added to the high half.
template <bool kFirst>
TANDEM_AVX2 TANDEM_INLINE __m256i PrefixSumAvx2(__m256i v, __m256i* before, __m256i* bad) {
  v = _mm256_add_epi32(v, _mm256_slli_si256(v, 4));
  v = _mm256_add_epi32(v, _mm256_slli_si256(v, 8));
  const __m256i low_last = _mm256_shuffle_epi32(v, 0xFF);
  v = _mm256_add_epi32(v, _mm256_permute2x128_si256(low_last, low_last, 0x08));  // [0 | low's]
  v = _mm256_add_epi32(v, *before);
  const __m256i rotate = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
  const __m256i prev = _mm256_blend_epi32(_mm256_permutevar8x32_epi32(v, rotate), *before, 0x01);
  __m256i not_above = _mm256_cmpeq_epi32(_mm256_max_epu32(prev, v), prev);
  if constexpr (kFirst) {
    const __m256i first_equal =
        _mm256_and_si256(_mm256_cmpeq_epi32(prev, v), _mm256_setr_epi32(-1, 0, 0, 0, 0, 0, 0, 0));
    not_above = _mm256_andnot_si256(first_equal, not_above);
  }
  *bad = _mm256_or_si256(*bad, not_above);
  *before = _mm256_permutevar8x32_epi32(v, _mm256_set1_epi32(7));
  return v;
}

TANDEM_AVX2 bool GapsToDocidsAvx2(uint32_t base, const uint32_t* gaps, size_t n, uint32_t* docids) {
  if (n < 8) return GapsToDocidsSse41(base, gaps, n, docids);
  __m256i before = _mm256_set1_epi32(static_cast<int>(base));
  __m256i bad = _mm256_setzero_si256();
  auto* out = reinterpret_cast<__m256i*>(docids);
  const auto* in = reinterpret_cast<const __m256i*>(gaps);
  _mm256_storeu_si256(out, PrefixSumAvx2<true>(_mm256_loadu_si256(in), &before, &bad));
  size_t i = 8;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_si256(out + i / 8,
                        PrefixSumAvx2<false>(_mm256_loadu_si256(in + i / 8), &before, &bad));
  }
  const bool ok = _mm256_testz_si256(bad, bad);
  const uint32_t doc = static_cast<uint32_t>(_mm256_cvtsi256_si32(before));
  return GapsToDocidsTail(i, doc, gaps, n, docids) && ok;
}

template <size_t... B>
constexpr SimdBpKernels MakeAvx2Kernels(std::index_sequence<B...>) {
  return {{&UnpackAvx2<static_cast<uint32_t>(B)>...}, &GapsToDocidsAvx2};
}

#endif  // TANDEM_SIMDBP_X86

}  // namespace

void PackVertical128(const uint32_t* values, uint32_t b, uint8_t* out) {
  uint32_t words[kSimdBpWordsPerBit * 32] = {};
  for (uint32_t k = 0; k < kBlockSize / kSimdBpLanes; ++k) {
    const uint32_t word = k * b / 32;
    const uint32_t shift = k * b % 32;
    for (uint32_t lane = 0; lane < kSimdBpLanes; ++lane) {
      const uint32_t v = values[kSimdBpLanes * k + lane];
      words[kSimdBpLanes * word + lane] |= v << shift;  // shift < 32; b = 0 leaves v = 0
      if (shift + b > 32) words[kSimdBpLanes * (word + 1) + lane] |= v >> (32 - shift);
    }
  }
  std::memcpy(out, words, kSimdBpWordsPerBit * b * sizeof(uint32_t));
}

const SimdBpKernels& ScalarSimdBpKernels() {
  static constexpr SimdBpKernels kKernels = MakeScalarKernels(std::make_index_sequence<33>{});
  return kKernels;
}

#ifdef TANDEM_SIMDBP_X86
const SimdBpKernels* Sse41SimdBpKernels() {
  static constexpr SimdBpKernels kKernels = MakeSse41Kernels(std::make_index_sequence<33>{});
  return &kKernels;
}
const SimdBpKernels* Avx2SimdBpKernels() {
  static constexpr SimdBpKernels kKernels = MakeAvx2Kernels(std::make_index_sequence<33>{});
  return &kKernels;
}
#else
const SimdBpKernels* Sse41SimdBpKernels() { return nullptr; }
const SimdBpKernels* Avx2SimdBpKernels() { return nullptr; }
#endif

}  // namespace tandem::index::internal
