// Tests of SegLRC's own choices and layout (seglrc_codec.cc): the fitted line on exact, noisy and
// extreme blocks, the raw fallback, a block encoded by hand and the headers the decoder must
// reject. The properties every codec shares (round trips, truncation, garbage) are in
// block_codec_test.cc.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/codec_test_util.h"
#include "index/seglrc_internal.h"

namespace tandem::index {
namespace {

const BlockCodec& SegLrc() { return *GetBlockCodec("seglrc"); }

std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out.push_back(static_cast<char>(0x80 | (v & 0x7F)));
  out.push_back(static_cast<char>(v));
  return out;
}

std::string EncodeSegLrc(const std::vector<uint32_t>& values) {
  std::string out;
  SegLrc().Encode(values.data(), values.size(), 0, &out);
  return out;
}

// Decodes `bytes` as one block of n values; nullopt when the codec rejects them. A block it accepts
// must take all of `bytes`.
std::optional<std::vector<uint32_t>> DecodeSegLrc(const std::string& bytes, size_t n) {
  const ExactBuffer buffer(bytes);
  std::vector<uint32_t> decoded(n);
  const uint8_t* next = SegLrc().Decode(buffer.begin(), buffer.end(), n, 0, decoded.data());
  if (next == nullptr) return std::nullopt;
  EXPECT_EQ(next, buffer.end());
  return decoded;
}

// Evenly spaced docIDs lie on the line: no deviation bits at all, only the header. The first gap,
// from the previous block's last docID, has no weight in the least-squares slope.
TEST(SegLrcTest, ArithmeticSequencesTakeWidthZero) {
  for (uint32_t d : {0u, 1u, 5u, 1000u, 1u << 31, kMax32}) {
    for (size_t n : {size_t{1}, size_t{2}, size_t{77}, kBlockSize}) {
      for (uint32_t first : {d, 0u, 12345u}) {
        std::vector<uint32_t> values(n, d);
        values[0] = first;
        const internal::SegLrcLine line = internal::FitSegLrcLine(values.data(), n);
        EXPECT_FALSE(line.raw);
        EXPECT_EQ(line.width, 0u) << "d " << d << " n " << n;
        if (n > 1) {
          EXPECT_EQ(line.slope, uint64_t{d} << internal::kSegLrcSlopeFractionBits);
        }
        EXPECT_EQ(line.base, int64_t{first}) << "d " << d << " n " << n;
        const std::string bytes = EncodeSegLrc(values);
        EXPECT_LE(bytes.size(), 13u);  // mode byte, slope (at most 7 bytes), base (at most 5)
        EXPECT_EQ(DecodeSegLrc(bytes, n), values) << "d " << d << " n " << n;
      }
    }
  }
  EXPECT_EQ(EncodeSegLrc(std::vector<uint32_t>(kBlockSize, 5)),
            std::string("\x00\x80\x80\x14\x0A", 5));  // w 0, slope 5 * 2^16, zigzag(5)
}

// Gaps 0, 4, 1, 1: prefix sums 0, 4, 5, 6. Least squares: slope (4 * 32 - 6 * 15) / (4 * 14 - 36)
// = 1.9, in 32.16 fixed point round(1.9 * 65536) = 124518; rises 0, 1, 3, 5; residuals 0, 3, 2, 1;
// base 0; deviations 0, 3, 2, 1 at width 2.
TEST(SegLrcTest, LayoutMatchesAHandEncodedBlock) {
  const std::vector<uint32_t> values = {0, 4, 1, 1};
  const internal::SegLrcLine line = internal::FitSegLrcLine(values.data(), values.size());
  EXPECT_EQ(line.slope, 124518u);
  EXPECT_EQ(line.base, 0);
  EXPECT_EQ(line.width, 2u);
  EXPECT_EQ(EncodeSegLrc(values), std::string("\x02\xE6\xCC\x07\x00\x6C", 6));
}

// DocIDs near a line, each up to `jitter` above it: the deviations take about bit_width(jitter)
// bits, however large the gaps themselves are.
TEST(SegLrcTest, NoisyLinearSequencesTakeSmallWidths) {
  std::mt19937_64 rng(23);
  for (double spacing : {16.0, 1000.5, 3e6}) {
    for (uint32_t jitter : {1u, 4u, 16u, 256u}) {
      if (jitter > spacing) continue;
      for (size_t n : {size_t{16}, kBlockSize}) {
        std::vector<uint32_t> values(n);
        uint64_t previous = 0;
        for (size_t j = 0; j < n; ++j) {
          const uint64_t docid = static_cast<uint64_t>(spacing * (j + 1)) + rng() % jitter;
          values[j] = static_cast<uint32_t>(docid - previous);
          previous = docid;
        }
        const internal::SegLrcLine line = internal::FitSegLrcLine(values.data(), n);
        EXPECT_FALSE(line.raw);
        EXPECT_LE(line.width, static_cast<uint32_t>(std::bit_width(jitter)) + 2)
            << "spacing " << spacing << " jitter " << jitter << " n " << n;
        EXPECT_EQ(DecodeSegLrc(EncodeSegLrc(values), n), values);
      }
    }
  }
}

// Deviations spanning 2^32 or more fall back to the raw gaps; deviations just inside stay a line.
TEST(SegLrcTest, HugeDeviationsFallBackToRawGaps) {
  std::vector<uint32_t> steps(kBlockSize, 0);
  std::fill_n(steps.begin(), kBlockSize / 2, kMax32);  // a ramp of 2^38, then flat
  internal::SegLrcLine line = internal::FitSegLrcLine(steps.data(), steps.size());
  EXPECT_TRUE(line.raw);
  EXPECT_EQ(line.width, 32u);
  std::string bytes = EncodeSegLrc(steps);
  EXPECT_EQ(bytes.size(), 1 + 4 * kBlockSize);
  EXPECT_EQ(bytes[0], '\xA0');  // raw, w 32
  EXPECT_EQ(DecodeSegLrc(bytes, steps.size()), steps);

  steps.assign(kBlockSize, 1);
  steps[40] = 1u << 30;
  steps[41] = kMax32;
  steps[90] = kMax32;
  line = internal::FitSegLrcLine(steps.data(), steps.size());
  EXPECT_TRUE(line.raw);
  EXPECT_EQ(DecodeSegLrc(EncodeSegLrc(steps), steps.size()), steps);

  std::vector<uint32_t> alternating(kBlockSize);
  for (size_t j = 0; j < kBlockSize; ++j) alternating[j] = j % 2 == 0 ? 0 : kMax32;
  line = internal::FitSegLrcLine(alternating.data(), alternating.size());
  EXPECT_FALSE(line.raw);
  EXPECT_GE(line.width, 31u);
  EXPECT_EQ(DecodeSegLrc(EncodeSegLrc(alternating), kBlockSize), alternating);
}

TEST(SegLrcTest, RejectsInvalidHeaders) {
  const std::string valid("\x02\xE6\xCC\x07\x00\x6C", 6);  // {0, 4, 1, 1}, see above
  ASSERT_EQ(DecodeSegLrc(valid, 4), std::vector<uint32_t>({0, 4, 1, 1}));
  const std::string padding(64, '\0');
  std::string bad = valid;
  for (char mode : {'\x21', '\xA1', '\x40', '\xFF'}) {  // widths past 32, unknown flags
    bad[0] = mode;
    EXPECT_FALSE(DecodeSegLrc(bad + padding, 4)) << static_cast<int>(mode);
  }

  // n = 1: mode, slope, zigzag(base), no deviation bits; {5} is "\0\0\x0A".
  const std::string zero_slope("\x00\x00", 2);
  EXPECT_EQ(DecodeSegLrc(zero_slope + '\x0A', 1), std::vector<uint32_t>({5}));
  EXPECT_EQ(DecodeSegLrc(zero_slope + Varint(uint64_t{kMax32} << 1), 1),
            std::vector<uint32_t>({kMax32}));
  EXPECT_FALSE(DecodeSegLrc(std::string("\x00\x80\x00\x0A", 4), 1));  // redundant zero group
  EXPECT_FALSE(DecodeSegLrc('\0' + std::string(10, '\xFF') + '\x01' + '\x0A', 1));  // > 64 bits
  EXPECT_FALSE(DecodeSegLrc(zero_slope + Varint(uint64_t{1} << 33), 1));            // base 2^32
  EXPECT_FALSE(DecodeSegLrc(zero_slope + '\x01', 1));                           // base -1: s_0 < 0
  EXPECT_FALSE(DecodeSegLrc(zero_slope + Varint((uint64_t{1} << 40) - 1), 1));  // base -2^39
  EXPECT_FALSE(DecodeSegLrc(zero_slope + Varint(~uint64_t{0}), 1));             // base -2^63
  // A slope past (2^32 - 1) * 2^16.
  EXPECT_FALSE(DecodeSegLrc('\0' + Varint(internal::kSegLrcMaxSlope + 1) + '\0', 2));
  EXPECT_EQ(DecodeSegLrc('\0' + Varint(internal::kSegLrcMaxSlope) + '\0', 2),
            std::vector<uint32_t>({0, kMax32}));

  // n = 2, width 1: deviations 1, 0 on a flat line make s_1 < s_0; on the steepest line,
  // deviations 0, 1 make a gap of 2^32.
  const std::string flat("\x01\x00\x00", 3);
  EXPECT_EQ(DecodeSegLrc(flat + '\x02', 2), std::vector<uint32_t>({0, 1}));
  EXPECT_FALSE(DecodeSegLrc(flat + '\x01', 2));
  const std::string steep = '\x01' + Varint(internal::kSegLrcMaxSlope) + '\0';
  EXPECT_FALSE(DecodeSegLrc(steep + '\x02', 2));
  // Not what Encode writes: no deviation is 0, or the width exceeds the largest deviation's.
  EXPECT_FALSE(DecodeSegLrc(flat + '\x03', 2));
  EXPECT_FALSE(DecodeSegLrc(std::string("\x02\x00\x00\x04", 4), 2));
  // Raw blocks: the width must be the largest gap's.
  EXPECT_EQ(DecodeSegLrc(std::string("\x82\x0E", 2), 2), std::vector<uint32_t>({2, 3}));
  EXPECT_FALSE(DecodeSegLrc(std::string("\x83\x0A", 2), 2));  // 2 and 1 need only 2 bits
}

}  // namespace
}  // namespace tandem::index
