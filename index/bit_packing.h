// File: bit_packing.h
//
// Packs and unpacks runs of b-bit unsigned integers (0 <= b <= 32), the fixed-width slots that
// every block codec is built on: PForDelta's and ParaPFor's b-bit slots and exception arrays
// (Zukowski et al. 2006; Ding et al. 2009, section 6; Ao et al. 2011, Appendix G), Rice's binary
// part (Ding et al. 2009, section 6.1) and SegLRC's deviations (Ao et al. 2011, section 4.2).
//
// Bit order is little-endian: value i occupies bits [i*b, (i+1)*b) of the byte string, where bit k
// is bit (k % 8) of byte k / 8. n values take PackedBytes(n, b) bytes; unused high bits of the last
// byte are zero.
//
//   std::string out;
//   AppendPackedBits(values, n, b, &out);
//   if (static_cast<size_t>(end - in) < PackedBytes(n, b)) return nullptr;  // check first
//   UnpackBits(in, end - in, n, b, values);
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace tandem::index {

// The byte formats are little-endian and the fast paths load them with memcpy, so a big-endian host
// would need byte swaps here; none is supported.
static_assert(std::endian::native == std::endian::little,
              "Tandem's codecs assume a little-endian host");

// Bytes taken by n values of b bits.
constexpr size_t PackedBytes(size_t n, uint32_t b) { return (n * b + 7) / 8; }

// std::bit_width(v) for a 32-bit v: the slot width v needs. Without LZCNT (the baseline x86-64
// target) std::bit_width compiles to BSR plus a zero test, and BSR's destination is also an input,
// which chains a histogram's independent lookups into one serial dependency. 2v + 1 is never zero,
// so this form needs no zero test and runs about twice as fast in the PForDelta width choices.
inline uint32_t BitWidth(uint32_t v) {
  return static_cast<uint32_t>(std::bit_width((uint64_t{v} << 1) | 1)) - 1;
}

namespace bit_packing_internal {

inline uint64_t LoadLittle64(const uint8_t* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;
}

// Packs one group of 8 values into B bytes. As in unpacking, every bit offset is a compile-time
// constant, so the values are shifted into up to four 64-bit words in registers independently of
// each other, instead of through one accumulator whose fill level each value has to wait for.
template <uint32_t B, size_t... J>
inline void PackGroup(const uint32_t* in, uint8_t* out, std::index_sequence<J...>) {
  constexpr uint64_t kMask = (uint64_t{1} << B) - 1;
  uint64_t words[(8 * B + 63) / 64] = {};
  auto put = [&]<size_t K>(std::integral_constant<size_t, K>) {
    constexpr size_t kBit = K * B;
    const uint64_t v = in[K] & kMask;
    words[kBit / 64] |= v << (kBit % 64);
    if constexpr (kBit % 64 + B > 64) words[kBit / 64 + 1] |= v >> (64 - kBit % 64);
  };
  (put(std::integral_constant<size_t, J>{}), ...);
  std::memcpy(out, words, B);
}

template <uint32_t B>
void PackFixed(const uint32_t* in, size_t n, uint8_t* out) {
  if constexpr (B > 0) {
    const size_t groups = n / 8;
    for (size_t g = 0; g < groups; ++g, in += 8, out += B) {
      PackGroup<B>(in, out, std::make_index_sequence<8>{});
    }
    // A last partial group is padded with zeros and only its PackedBytes are kept.
    const size_t rest = n % 8;
    if (rest == 0) return;
    uint32_t padded[8] = {};
    std::memcpy(padded, in, rest * sizeof(uint32_t));
    uint8_t bytes[B];
    PackGroup<B>(padded, bytes, std::make_index_sequence<8>{});
    std::memcpy(out, bytes, PackedBytes(rest, B));
  }
}

using PackFn = void (*)(const uint32_t*, size_t, uint8_t*);

template <size_t... B>
constexpr std::array<PackFn, sizeof...(B)> MakePackTable(std::index_sequence<B...>) {
  return {&PackFixed<static_cast<uint32_t>(B)>...};
}

inline constexpr std::array<PackFn, 33> kPackTable = MakePackTable(std::make_index_sequence<33>{});

// Bytes that the loads of one group of 8 B-bit values touch, counted from the group's first byte:
// the last value starts at byte 7*B/8 and is read with an 8-byte load.
template <uint32_t B>
inline constexpr size_t kGroupReach = (7 * B) / 8 + 8;

// Unpacks one group of 8 values. Eight B-bit values span exactly B bytes, so every group starts on
// a byte boundary and each value's byte offset and shift are compile-time constants: one unaligned
// 64-bit load, a shift and a mask per value, with no loop-carried bit position. Reads
// [in, in + kGroupReach<B>).
template <uint32_t B, size_t... J>
inline void UnpackGroup(const uint8_t* in, uint32_t* out, std::index_sequence<J...>) {
  constexpr uint64_t kMask = (uint64_t{1} << B) - 1;
  ((out[J] = static_cast<uint32_t>((LoadLittle64(in + J * B / 8) >> (J * B % 8)) & kMask)), ...);
}

// Unpacks `groups` groups of 8 values; reads [in, in + (groups - 1) * B + kGroupReach<B>).
template <uint32_t B>
inline void UnpackGroups(const uint8_t* in, size_t groups, uint32_t* out) {
  for (size_t g = 0; g < groups; ++g, in += B, out += 8) {
    UnpackGroup<B>(in, out, std::make_index_sequence<8>{});
  }
}

template <uint32_t B>
void UnpackFixed(const uint8_t* in, size_t avail, size_t n, uint32_t* out) {
  if constexpr (B == 0) {
    std::fill_n(out, n, 0);
  } else if constexpr (B == 32) {
    if (n > 0) std::memcpy(out, in, n * sizeof(uint32_t));  // memcpy with null is UB even for 0
  } else {
    constexpr size_t kReach = kGroupReach<B>;
    // Groups whose loads stay inside the `avail` readable bytes run straight from the input. Bytes
    // past the packed values (the next block, say) may be loaded but are masked away.
    size_t groups = n / 8;
    groups = avail < kReach ? 0 : std::min(groups, (avail - kReach) / B + 1);
    UnpackGroups<B>(in, groups, out);
    size_t done = groups * 8;
    if (done == n) return;

    // The rest (fewer than max(kReach, B) packed bytes, see below) is copied into a zero-padded
    // buffer so the same unrolled code runs on it without reading past `avail`. Either the loop
    // above stopped at n / 8, leaving less than one group's B bytes, or it stopped where fewer than
    // kReach bytes remained.
    const size_t consumed = groups * B;
    const size_t rest = PackedBytes(n, B) - consumed;
    uint8_t tail[2 * kReach + B] = {};
    std::memcpy(tail, in + consumed, rest);
    const uint8_t* t = tail;
    while (done < n) {
      uint32_t group[8];
      UnpackGroups<B>(t, 1, group);
      const size_t take = std::min<size_t>(8, n - done);
      std::memcpy(out + done, group, take * sizeof(uint32_t));
      done += take;
      t += B;
    }
  }
}

using UnpackFn = void (*)(const uint8_t*, size_t, size_t, uint32_t*);

template <size_t... B>
constexpr std::array<UnpackFn, sizeof...(B)> MakeUnpackTable(std::index_sequence<B...>) {
  return {&UnpackFixed<static_cast<uint32_t>(B)>...};
}

inline constexpr std::array<UnpackFn, 33> kUnpackTable =
    MakeUnpackTable(std::make_index_sequence<33>{});

}  // namespace bit_packing_internal

// Writes the low b bits of values[0..n) to out[0..PackedBytes(n, b)), b at most 32. Higher bits of
// the values are ignored, which lets PForDelta store an exception's low bits in its slot directly.
inline void PackBits(const uint32_t* values, size_t n, uint32_t b, uint8_t* out) {
  bit_packing_internal::kPackTable[b](values, n, out);
}

// Appends the PackedBytes(n, b) bytes of PackBits to *out.
inline void AppendPackedBits(const uint32_t* values, size_t n, uint32_t b, std::string* out) {
  const size_t old_size = out->size();
  out->resize(old_size + PackedBytes(n, b));
  PackBits(values, n, b, reinterpret_cast<uint8_t*>(out->data()) + old_size);
}

// Reads n b-bit values from `in` into out[0..n). `avail` is the number of readable bytes at `in`;
// it must be at least PackedBytes(n, b) (callers check this first) and no byte at or past in +
// avail is read. A larger `avail` lets more of the values take the fast path. b must be at most 32.
inline void UnpackBits(const uint8_t* in, size_t avail, size_t n, uint32_t b, uint32_t* out) {
  bit_packing_internal::kUnpackTable[b](in, avail, n, out);
}

// The exceptions of values[0..n) at slot width b, as PForDelta and ParaPFor store them: the index
// of every value of b + 1 bits or more, into positions[], and its bits above b, into highs[], in
// index order. Returns how many there are and ORs every high part into *all_highs (whose width is
// that of the widest). Branch-free: every value is written at the next free entry, which only
// advances past an exception; exceptions come at random, so a branch on them would often be
// mispredicted. Both arrays hold n entries.
template <typename Index>
inline size_t CollectExceptions(const uint32_t* values, size_t n, uint32_t b, Index* positions,
                                uint32_t* highs, uint32_t* all_highs) {
  size_t count = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint32_t high = static_cast<uint32_t>(uint64_t{values[i]} >> b);
    positions[count] = static_cast<Index>(i);
    highs[count] = high;
    count += high != 0;
    *all_highs |= high;
  }
  return count;
}

}  // namespace tandem::index
