// Rice coding (Witten, Moffat and Bell, "Managing Gigabytes"; the paper's [24]) with one parameter b per
// list, laid out as in Ding et al. 2009, section 6.1, so that a GPU can decode it with two prefix sums.
//
// A value v is split into q = v >> b and r = v mod 2^b; q is written in unary (q one-bits, then a zero)
// and r in b bits. As in Ding et al. (after Yan et al. 2009, the paper's [23]), the binary and unary
// codes live in two separate bit arrays: a prefix sum over the b-bit remainders and a bit-wise prefix
// sum over the unary array, compacted at its zero bits, give each value as r-sum + 2^b * q-sum.
//
// Block layout (bit order little-endian, see bit_packing.h):
//
//   binary   PackedBytes(n, b) bytes: values[i] mod 2^b for i = 0..n-1
//   unary    for i = 0..n-1: (values[i] >> b) one-bits, then one zero-bit; zero-padded to a whole
//            byte. Its length is n + sum(values[i] >> b) bits, rounded up to bytes.
//
// The binary part comes first because its size is known from n and b alone, so both parts can be
// located without decoding either. n and b are not stored: the caller knows n from the list length,
// and b is the list's parameter (ChooseParameter), kept once per list by the index.
//
// b is chosen so that 2^b is close to the mean value, which keeps q small for typical values; a value
// far above the mean costs q + 1 bits, so a list of small gaps with a few huge ones can produce long
// unary runs. The codec accepts any 32-bit value with any b in 0..32; it is the index writer's choice of
// b that keeps blocks compact.
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

// Sets bits [pos, pos + count) of a little-endian bit array: a partial first byte, whole 0xFF bytes,
// then a partial last byte, so a long unary run costs a memset rather than a loop over its bits.
void SetOnes(uint8_t* bits, uint64_t pos, uint64_t count) {
  const uint32_t offset = pos % 8;
  if (offset != 0) {
    const uint32_t head = static_cast<uint32_t>(std::min<uint64_t>(count, 8 - offset));
    bits[pos / 8] |= static_cast<uint8_t>(((1u << head) - 1) << offset);
    pos += head;
    count -= head;
  }
  std::memset(bits + pos / 8, 0xFF, count / 8);
  pos += count & ~uint64_t{7};
  if (count % 8 != 0) bits[pos / 8] |= static_cast<uint8_t>((1u << (count % 8)) - 1);
}

// Reads unary codes from [next, end) a 64-bit word at a time. Invariant: word_ holds bits_left_
// unread bits in its low end and zeros above them, so countr_one(word_) never counts past them.
class UnaryReader {
 public:
  UnaryReader(const uint8_t* begin, const uint8_t* end) : next_(begin), end_(end) {}

  // Reads one code into *q. Returns false when the bits run out before its zero-bit, or when the
  // count exceeds max_q (checked as the run grows, so a long corrupt run stops early).
  bool Read(uint64_t max_q, uint64_t* q) {
    uint64_t ones = 0;
    while (true) {
      const uint32_t run = static_cast<uint32_t>(std::countr_one(word_));
      if (run < bits_left_) {  // the terminating zero-bit is in this word
        ones += run;
        word_ = run == 63 ? 0 : word_ >> (run + 1);
        bits_left_ -= run + 1;
        *q = ones;
        return ones <= max_q;
      }
      ones += run;
      if (ones > max_q || !Refill()) return false;
    }
  }

  // The first byte after the codes read so far, or nullptr when the padding bits that complete the
  // last byte are not zero (non-canonical, so the bytes are not what Encode wrote).
  const uint8_t* Finish() const {
    const uint32_t pad = bits_left_ % 8;
    if ((word_ & ((uint64_t{1} << pad) - 1)) != 0) return nullptr;
    return next_ - bits_left_ / 8;
  }

 private:
  bool Refill() {
    const size_t left = static_cast<size_t>(end_ - next_);
    if (left == 0) return false;
    const size_t take = std::min<size_t>(left, 8);
    word_ = 0;
    std::memcpy(&word_, next_, take);
    next_ += take;
    bits_left_ = static_cast<uint32_t>(8 * take);
    return true;
  }

  const uint8_t* next_;
  const uint8_t* const end_;
  uint64_t word_ = 0;
  uint32_t bits_left_ = 0;
};

class RiceCodec final : public BlockCodec {
 public:
  std::string_view name() const override { return "rice"; }

  // b = floor(log2(mean)), so 2^b <= mean < 2^(b+1): the paper's "2^b close to the average of the
  // gaps" (Ding et al. section 2). A mean below 1 (all or nearly all zeros, as frequencies minus one
  // often are) gives b = 0. The mean fits in 32 bits, so b <= 31.
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

    uint64_t unary_bits = n;
    for (size_t i = 0; i < n; ++i) unary_bits += uint64_t{values[i]} >> b;
    const size_t start = out->size();
    out->resize(start + (unary_bits + 7) / 8);  // zero-filled: the terminators and the padding
    uint8_t* bits = reinterpret_cast<uint8_t*>(out->data()) + start;
    uint64_t pos = 0;
    for (size_t i = 0; i < n; ++i) {
      const uint64_t q = uint64_t{values[i]} >> b;
      if (q != 0) SetOnes(bits, pos, q);
      pos += q + 1;
    }
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
    UnaryReader unary(in + binary_bytes, end);
    for (size_t i = 0; i < n; ++i) {
      uint64_t q;
      if (!unary.Read(max_q, &q)) return nullptr;
      values[i] |= static_cast<uint32_t>(q << b);
    }
    return unary.Finish();
  }
};

}  // namespace

const BlockCodec* RiceBlockCodec() {
  static const BlockCodec* const kCodec = new RiceCodec();
  return kCodec;
}

}  // namespace internal
}  // namespace tandem::index
