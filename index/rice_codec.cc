// Rice coding (Witten, Moffat and Bell, "Managing Gigabytes"; the paper's [24]) with one parameter
// b per list, laid out as in Ding et al. 2009, section 6.1, so that a GPU can decode it with two
// prefix sums.
//
// A value v is split into q = v >> b and r = v mod 2^b; q is written in unary (q one-bits, then a
// zero) and r in b bits. As in Ding et al. (after Yan et al. 2009, the paper's [23]), the binary
// and unary codes live in two separate bit arrays: a prefix sum over the b-bit remainders and a
// bit-wise prefix sum over the unary array, compacted at its zero bits, give each value as r-sum +
// 2^b * q-sum.
//
// Block layout (bit order little-endian, see bit_packing.h):
//
//   binary   PackedBytes(n, b) bytes: values[i] mod 2^b for i = 0..n-1
//   unary    for i = 0..n-1: (values[i] >> b) one-bits, then one zero-bit; zero-padded to a whole
//            byte. Its length is n + sum(values[i] >> b) bits, rounded up to bytes.
//
// The binary part comes first because its size is known from n and b alone, so both parts can be
// located without decoding either. n and b are not stored: the caller knows n from the list length,
// and b is the list's parameter (ChooseParameter), kept once per list by the index. A GPU decoder
// that runs the bit-wise prefix sum over a whole unary part keeps only its first n zero-bits: the
// padding bits are zeros too.
//
// b is chosen so that 2^b is close to the mean value, which keeps q small for typical values; a
// value far above the mean costs q + 1 bits, so a list of small gaps with a few huge ones can
// produce long unary runs. The codec accepts any 32-bit value with any b in 0..32; it is the index
// writer's choice of b that keeps blocks compact.
#include <algorithm>
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "index/bit_packing.h"
#include "index/block_codec.h"
#include "index/codecs_internal.h"

namespace tandem::index {
namespace internal {
namespace {

// Appends the unary part for values[0..n): (values[i] >> b) one-bits and a zero-bit each, padded
// with zero-bits to a whole byte. Apart from the terminating zeros the part is all ones, so it is
// built 64 bits at a time as the complement of a mask of terminator positions: one shift and OR per
// value, no per-bit loop, and a long run of ones costs a memset of whole words.
void AppendUnary(const uint32_t* values, size_t n, uint32_t b, std::string* out) {
  uint64_t unary_bits = n;
  for (size_t i = 0; i < n; ++i) unary_bits += uint64_t{values[i]} >> b;
  const size_t start = out->size();
  // Whole words are written and the excess trimmed at the end.
  out->resize(start + (unary_bits + 63) / 64 * 8);
  uint8_t* words = reinterpret_cast<uint8_t*>(out->data()) + start;
  auto store = [words](uint64_t index, uint64_t word) { std::memcpy(words + 8 * index, &word, 8); };

  uint64_t pos = 0;         // bit position of the next terminator
  uint64_t word_index = 0;  // the word `zeros` belongs to
  uint64_t zeros = 0;       // terminators found so far in that word
  for (size_t i = 0; i < n; ++i) {
    pos += uint64_t{values[i]} >> b;
    if (pos / 64 != word_index) {
      store(word_index, ~zeros);
      if (pos / 64 > word_index + 1) {  // whole words of ones in between
        std::memset(words + 8 * (word_index + 1), 0xFF, 8 * (pos / 64 - word_index - 1));
      }
      word_index = pos / 64;
      zeros = 0;
    }
    zeros |= uint64_t{1} << (pos % 64);
    ++pos;
  }
  // Bits past the last terminator are padding and stay zero.
  const uint64_t used = pos - 64 * word_index;  // 1..64
  store(word_index, ~zeros & (used == 64 ? ~uint64_t{0} : (uint64_t{1} << used) - 1));
  out->resize(start + (unary_bits + 7) / 8);
}

// Decodes the unary part at [in, end) and adds q << b to values[0..n): q is the number of one-bits
// before the i-th zero-bit. Returns the first byte after the part, or nullptr when the bits run out
// before the n-th zero-bit, a q exceeds max_q, or the padding after the n-th zero-bit is not zero
// (non-canonical, so not what Encode wrote).
//
// The bits are read a 64-bit word at a time and the decoder walks the word's zero-bits (count
// trailing zeros, clear lowest set bit of the inverted word), so each value costs a few independent
// instructions and the only hard-to-predict branch is the one leaving a word, not one per value. A
// run of ones spanning words is carried over; a long corrupt run stops as soon as it passes max_q.
const uint8_t* DecodeUnary(const uint8_t* in, const uint8_t* end, size_t n, uint32_t b,
                           uint64_t max_q, uint32_t* values) {
  size_t i = 0;
  uint64_t carry = 0;  // ones of the current code seen in earlier words
  while (in < end) {
    const size_t take = std::min<size_t>(static_cast<size_t>(end - in), 8);
    uint64_t word = 0;
    if (take == 8) {
      std::memcpy(&word, in, 8);  // a fixed size compiles to one load
    } else {
      std::memcpy(&word, in, take);
    }
    const uint32_t valid_bits = static_cast<uint32_t>(8 * take);
    uint64_t zeros = valid_bits == 64 ? ~word : ~word & ((uint64_t{1} << valid_bits) - 1);
    uint32_t start = 0;  // first bit of the current code in this word
    while (zeros != 0) {
      const uint32_t pos = static_cast<uint32_t>(std::countr_zero(zeros));
      const uint64_t q = carry + (pos - start);
      if (q > max_q) return nullptr;
      values[i] |= static_cast<uint32_t>(q << b);
      carry = 0;
      start = pos + 1;
      zeros &= zeros - 1;
      if (++i == n) {
        const uint32_t pad = (8 - start % 8) % 8;
        if (pad != 0 && ((word >> start) & ((uint64_t{1} << pad) - 1)) != 0) return nullptr;
        return in + (start + pad) / 8;
      }
    }
    carry += valid_bits - start;
    if (carry > max_q) return nullptr;
    in += take;
  }
  return nullptr;
}

class RiceCodec final : public BlockCodec {
 public:
  std::string_view name() const override { return "rice"; }

  // b = floor(log2(mean)), so 2^b <= mean < 2^(b+1): the paper's "2^b close to the average of the
  // gaps" (Ding et al. section 2). A mean below 1 (all or nearly all zeros, as frequencies minus
  // one often are) gives b = 0. The mean fits in 32 bits, so b <= 31.
  bool has_parameters() const override { return true; }
  uint32_t ChooseParameter(const uint32_t* values, size_t n) const override {
    if (n == 0) return 0;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += values[i];
    const uint64_t mean = sum / n;
    return mean == 0 ? 0 : static_cast<uint32_t>(std::bit_width(mean)) - 1;
  }

  void Encode(const uint32_t* values, size_t n, uint32_t param, std::string* out) const override {
    assert(n >= 1 && n <= kBlockSize && param <= 32);
    const uint32_t b = param;
    AppendPackedBits(values, n, b, out);
    AppendUnary(values, n, b, out);
  }

  const uint8_t* Decode(const uint8_t* in, const uint8_t* end, size_t n, uint32_t param,
                        uint32_t* values) const override {
    if (n == 0 || n > kBlockSize || param > 32 || in > end) return nullptr;
    const uint32_t b = param;
    const size_t avail = static_cast<size_t>(end - in);
    const size_t binary_bytes = PackedBytes(n, b);
    if (avail < binary_bytes) return nullptr;
    UnpackBits(in, avail, n, b, values);

    // q << b must not reach 2^32: with r < 2^b that keeps q * 2^b + r a 32-bit value.
    const uint64_t max_q = uint64_t{0xFFFFFFFF} >> b;
    return DecodeUnary(in + binary_bytes, end, n, b, max_q, values);
  }
};

}  // namespace

const BlockCodec* RiceBlockCodec() { return CodecInstance<RiceCodec>(); }

}  // namespace internal
}  // namespace tandem::index
