// SegLRC, Linear Regression Compression per segment (Ao et al. 2011, "Efficient parallel lists
// intersection and index compression algorithms using GPUs", VLDB, section 4.2). A block of this
// index is the paper's segment.
//
// The docIDs of a list grow almost linearly with their index (the paper's section 3.3), so a block
// stores a line through them and each docID's vertical deviation from it, not the gaps between
// docIDs. The values handed to a codec are gaps v_j, so the line is fitted to their prefix sums
// s_j = v_0 + ... + v_j, the block's docIDs less the previous block's last one. Every s_j, and so
// every docID, is then recoverable alone from the header and its own packed deviation, which is
// what lets the paper's GPU intersection (section 4.3) binary-search a compressed list.
//
// The paper stores f(j) = alpha*j + beta, M = ceil(-min_j delta_j) and lambda_j = M +
// ceil(delta_j), and recovers s_j = floor(f(j) + lambda_j - M). Here the line is in integer fixed
// point so that every decoder computes the same prefix sums bit for bit, and beta and M are folded
// into one integer, the base:
//
//   s_j = base + floor(slope * j / 2^16) + lambda_j,   lambda_j >= 0, min_j lambda_j = 0
//
// slope is the least-squares slope of the points (j, s_j), computed exactly in integers (so the
// encoder, too, writes the same bytes everywhere) and rounded to 16 fraction bits: 32.16 fixed
// point. Over the 127 steps of a block that rounding moves the line by less than 127 * 2^-17 <
// 0.001, so more fraction bits would buy nothing but a longer varint, and with 16 the decoder's
// products stay within 32 bits (see DecodeLine). The intercept of the fit needs no storing:
// whatever it is, normalizing the deviations so that the smallest is 0 gives the same lambda_j. The
// deviations are packed at the width of the largest, with no exceptions, as the paper's GPU
// intersection uses LRC (section 4.3) and so that each stays readable on its own.
//
// The least-squares slope of non-decreasing prefix sums is a weighted mean of the gaps, so slope is
// at most 2^32 - 1 and slope * j fits 64 bits. The deviations, though, can span more than 32 bits
// (say 64 gaps of 2^32 - 1, then 64 zeros), and no line fixes every such block; those blocks fall
// back to raw mode, the gaps packed at the width of the largest.
//
// Block layout (multi-bit fields packed little-endian, see bit_packing.h):
//
//   byte 0      mode and width: w (0..32) for a line block, 0x80 | w for a raw block
//   line block:
//     slope       LEB128 varint, 0..(2^32 - 1) * 2^16
//     base        LEB128 varint of zigzag(base) (0, -1, 1, -2, ... as 0, 1, 2, 3, ...);
//                 base = min_j (s_j - floor(slope * j / 2^16)), in (-2^39, 2^32)
//     deviations  PackedBytes(n, w) bytes: lambda_j for j = 0..n-1; the smallest is 0 and the
//                 largest is w bits wide
//   raw block:
//     values      PackedBytes(n, w) bytes: v_j for j = 0..n-1; the largest is w bits wide
//
// The decoder recovers v_j = s_j - s_{j-1} (s_{-1} = 0) and rejects a block whose v_j fall outside
// [0, 2^32). n is not stored: the caller knows it from the list length. The block parameter is
// unused (0).
#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "index/bit_packing.h"
#include "index/block_codec.h"
#include "index/codecs_internal.h"
#include "index/seglrc_internal.h"

namespace tandem::index {
namespace internal {
namespace {

constexpr uint8_t kRawFlag = 0x80;
constexpr uint64_t kMax32 = 0xFFFFFFFF;
// floor(slope * j / 2^16) < 2^39 for every slope and j < kBlockSize, so every valid base lies in
// (-2^39, 2^32): s_j >= 0 and s_0 = base + lambda_0 < 2^32.
constexpr int64_t kMinBase = -(int64_t{1} << 39);
constexpr int64_t kMaxBase = int64_t{kMax32};  // also the largest s_0

// floor(slope * j / 2^16): the line's rise over j steps, for the encoder. slope * j < 2^48 * 2^7.
inline int64_t Rise(uint64_t slope, size_t j) {
  return static_cast<int64_t>((slope * j) >> kSegLrcSlopeFractionBits);
}

void AppendVarint(uint64_t v, std::string* out) {
  for (; v >= 0x80; v >>= 7) out->push_back(static_cast<char>(0x80 | (v & 0x7F)));
  out->push_back(static_cast<char>(v));
}

// Reads a LEB128 varint from [*p, end) and advances *p past it. Fails when the bytes run out, when
// the value exceeds 64 bits, or on a final zero group, which AppendVarint never writes.
bool ReadVarint(const uint8_t** p, const uint8_t* end, uint64_t* value) {
  uint64_t v = 0;
  for (uint32_t shift = 0; shift < 64; shift += 7) {
    if (*p == end) return false;
    const uint8_t byte = *(*p)++;
    if (shift == 63 && byte > 1) return false;  // bits past 64, or a continuation
    v |= uint64_t{byte & 0x7Fu} << shift;
    if ((byte & 0x80) == 0) {
      if (byte == 0 && shift > 0) return false;
      *value = v;
      return true;
    }
  }
  return false;
}

uint64_t ZigZag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ (v < 0 ? ~uint64_t{0} : 0); }

int64_t UnZigZag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// The least-squares slope of the points (j, s[j]), j < n, in fixed point, rounded to nearest:
// (n * sum(j * s_j) - sum(j) * sum(s_j)) / (n * sum(j^2) - sum(j)^2). s_j < 2^39, so both products
// stay below 2^60, and the division is split so that the scaled numerator needs no 128 bits.
uint64_t LeastSquaresSlope(const uint64_t* s, size_t n) {
  if (n < 2) return 0;
  uint64_t sum_s = 0;
  uint64_t sum_js = 0;
  for (size_t j = 0; j < n; ++j) {
    sum_s += s[j];
    sum_js += j * s[j];
  }
  const uint64_t sum_j = n * (n - 1) / 2;
  const uint64_t sum_jj = (n - 1) * n * (2 * n - 1) / 6;
  // For non-decreasing s_j the covariance with j is non-negative.
  assert(n * sum_js >= sum_j * sum_s);
  const uint64_t num = n * sum_js - sum_j * sum_s;
  const uint64_t den = n * sum_jj - sum_j * sum_j;  // > 0 for n >= 2, below 2^28
  const uint64_t whole = num / den;
  const uint64_t rest = num % den;
  const uint64_t slope =
      (whole << kSegLrcSlopeFractionBits) + ((rest << kSegLrcSlopeFractionBits) + den / 2) / den;
  return std::min(slope, kSegLrcMaxSlope);  // the bound holds already; this keeps it obvious
}

// Fits the line to values[0..n) and, for a line block, writes the deviations lambda_j to
// deviations[0..n).
SegLrcLine Fit(const uint32_t* values, size_t n, uint32_t* deviations) {
  assert(n >= 1 && n <= kBlockSize);
  uint64_t s[kBlockSize];
  uint64_t sum = 0;
  for (size_t j = 0; j < n; ++j) s[j] = sum += values[j];

  SegLrcLine line;
  line.slope = LeastSquaresSlope(s, n);
  int64_t residual[kBlockSize];              // s_j less the line's rise; |residual| < 2^39
  int64_t lowest = residual[0] = values[0];  // s_0, with no rise
  int64_t highest = lowest;
  for (size_t j = 1; j < n; ++j) {
    residual[j] = static_cast<int64_t>(s[j]) - Rise(line.slope, j);
    lowest = std::min(lowest, residual[j]);
    highest = std::max(highest, residual[j]);
  }
  line.base = lowest;
  const uint64_t range = static_cast<uint64_t>(highest - lowest);
  if (range > kMax32) {
    uint32_t all = 0;
    for (size_t j = 0; j < n; ++j) all |= values[j];
    return {.raw = true, .slope = 0, .base = 0, .width = BitWidth(all)};
  }
  for (size_t j = 0; j < n; ++j) deviations[j] = static_cast<uint32_t>(residual[j] - line.base);
  line.width = BitWidth(static_cast<uint32_t>(range));
  return line;
}

class SegLrcCodec final : public BlockCodec {
 public:
  std::string_view name() const override { return "seglrc"; }

  void Encode(const uint32_t* values, size_t n, uint32_t param, std::string* out) const override {
    uint32_t deviations[kBlockSize];
    const SegLrcLine line = Fit(values, n, deviations);
    if (line.raw) {
      out->push_back(static_cast<char>(kRawFlag | line.width));
      AppendPackedBits(values, n, line.width, out);
      return;
    }
    out->push_back(static_cast<char>(line.width));
    AppendVarint(line.slope, out);
    AppendVarint(ZigZag(line.base), out);
    AppendPackedBits(deviations, n, line.width, out);
  }

  const uint8_t* Decode(const uint8_t* in, const uint8_t* end, size_t n, uint32_t param,
                        uint32_t* values) const override {
    if (n == 0 || n > kBlockSize || end - in < 1) return nullptr;
    const uint8_t mode = in[0];
    const uint32_t w = mode & ~kRawFlag;
    if (w > 32) return nullptr;
    if (mode & kRawFlag) return DecodeRaw(in + 1, end, n, w, values);
    return DecodeLine(in + 1, end, n, w, values);
  }

 private:
  // The body of a line block: slope, base and deviations from p on.
  static const uint8_t* DecodeLine(const uint8_t* p, const uint8_t* end, size_t n, uint32_t w,
                                   uint32_t* values) {
    uint64_t slope = 0;
    uint64_t zigzag_base = 0;
    if (!ReadVarint(&p, end, &slope) || slope > kSegLrcMaxSlope) return nullptr;
    if (!ReadVarint(&p, end, &zigzag_base)) return nullptr;
    const int64_t base = UnZigZag(zigzag_base);
    if (base <= kMinBase || base > kMaxBase) return nullptr;
    const size_t bytes = PackedBytes(n, w);
    if (static_cast<size_t>(end - p) < bytes) return nullptr;
    // lambda[j + 1] = lambda_j. lambda[0] stands in for lambda_{-1} and lambda[n + 1..kBlockSize]
    // repeat lambda_{n-1}, see below.
    uint32_t lambda[kBlockSize + 1];
    UnpackBits(p, static_cast<size_t>(end - p), n, w, lambda + 1);
    lambda[0] = lambda[1];
    std::fill(lambda + n + 1, lambda + kBlockSize + 1, lambda[n]);
    const int64_t first = base + lambda[1];  // s_0 = v_0
    if (first < 0 || first > kMaxBase) return nullptr;

    // For j >= 1, v_j = s_j - s_{j-1} needs only lambda_j, lambda_{j-1} and the line's rise over
    // one step. With slope = whole * 2^16 + fraction, floor(slope * j / 2^16) = whole * j +
    // floor(fraction * j / 2^16), so that rise is whole plus 0 or 1 (never past 2^32 - 1: whole is
    // 2^32 - 1 only with no fraction), from fraction * j < 2^23. The gap rise + lambda_j -
    // lambda_{j-1} is then formed in 32-bit arithmetic: it lies in [0, 2^32) iff the addition and
    // the subtraction both wrap or neither does.
    //
    // No iteration depends on another and the checks are accumulated rather than branched on.
    // The loop always runs over a whole block, a trip count the compiler vectorizes at -O2 with
    // no scalar remainder. Lanes whose two lambdas are equal (lane 0, whose rise is garbage and
    // whose gap is replaced by v_0, and the lanes past n) pass the checks whatever their rise, and
    // a partial block's gaps go through a buffer so that those lanes are not stored. Rejecting
    // what Encode never writes (no deviation 0, a width above the largest's) keeps the encoding
    // canonical, so corrupted bytes are more often caught here rather than producing wrong
    // postings.
    const uint32_t whole = static_cast<uint32_t>(slope >> kSegLrcSlopeFractionBits);
    const uint32_t fraction = static_cast<uint32_t>(slope) & 0xFFFF;
    uint32_t buffer[kBlockSize];
    uint32_t* gaps = n == kBlockSize ? values : buffer;
    uint32_t scaled = 0 - fraction;  // fraction * (j - 1), mod 2^32
    uint32_t out_of_range = 0;
    uint32_t all = 0;
    uint32_t zeros = 0;
    for (uint32_t j = 0; j < kBlockSize; ++j) {
      const uint32_t next = scaled + fraction;
      const uint32_t rise =
          whole + (next >> kSegLrcSlopeFractionBits) - (scaled >> kSegLrcSlopeFractionBits);
      scaled = next;
      const uint32_t up = rise + lambda[j + 1];
      gaps[j] = up - lambda[j];
      out_of_range |= static_cast<uint32_t>(up < rise) ^ static_cast<uint32_t>(up < lambda[j]);
      all |= lambda[j + 1];
      zeros |= static_cast<uint32_t>(lambda[j + 1] == 0);
    }
    if (out_of_range != 0 || zeros == 0 || BitWidth(all) != w) return nullptr;
    if (gaps != values) std::memcpy(values, gaps, n * sizeof(uint32_t));
    values[0] = static_cast<uint32_t>(first);
    return p + bytes;
  }

  // The body of a raw block: the gaps themselves, from p on.
  static const uint8_t* DecodeRaw(const uint8_t* p, const uint8_t* end, size_t n, uint32_t w,
                                  uint32_t* values) {
    const size_t bytes = PackedBytes(n, w);
    if (static_cast<size_t>(end - p) < bytes) return nullptr;
    UnpackBits(p, static_cast<size_t>(end - p), n, w, values);
    uint32_t all = 0;
    for (size_t j = 0; j < n; ++j) all |= values[j];
    if (BitWidth(all) != w) return nullptr;
    return p + bytes;
  }
};

}  // namespace

SegLrcLine FitSegLrcLine(const uint32_t* values, size_t n) {
  uint32_t deviations[kBlockSize];
  return Fit(values, n, deviations);
}

const BlockCodec* SegLrcBlockCodec() { return CodecInstance<SegLrcCodec>(); }

}  // namespace internal
}  // namespace tandem::index
