// Tests of ParaPFor's own choices and layout (parapfor_codec.cc): every forced slot width, the
// width choice, the header's widths and the headers the decoder must reject. The properties every
// codec shares (round trips, truncation, garbage) are in block_codec_test.cc.
#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/codec_test_util.h"
#include "index/parapfor_internal.h"

namespace tandem::index {
namespace {

const BlockCodec& ParaPFor() { return *GetBlockCodec("parapfor"); }

// parapfor_codec.cc: b, en, [ib, hb], slots, indices, overflows.
std::string ReferenceParaPFor(const std::vector<uint32_t>& values, uint32_t b) {
  const ReferenceExceptions e = FindExceptions(values, b);
  std::string out = {static_cast<char>(b), static_cast<char>(e.indices.size())};
  if (e.indices.empty()) return out + ReferencePacked(values, b);
  const uint32_t ib = std::bit_width(e.indices.back());
  out += {static_cast<char>(ib), static_cast<char>(e.high_bits)};
  return out + ReferencePacked(values, b) + ReferencePacked(e.indices, ib) +
         ReferencePacked(e.highs, e.high_bits);
}

std::string EncodeParaPFor(const std::vector<uint32_t>& values, uint32_t b) {
  std::string out;
  internal::EncodeParaPForBlock(values.data(), values.size(), b, &out);
  return out;
}

// Every slot width decodes, whatever the encoder would have chosen: b = 0 with nonzero values makes
// every value an exception, b = 32 leaves none.
TEST(ParaPForTest, EveryForcedBitWidthRoundTrips) {
  std::mt19937_64 rng(20);
  for (uint32_t b = 0; b <= 32; ++b) {
    for (Distribution d : kAllDistributions) {
      for (size_t n : {size_t{1}, size_t{9}, size_t{100}, kBlockSize}) {
        const std::vector<uint32_t> values = RandomValues(d, n, rng);
        const ExactBuffer buffer(EncodeParaPFor(values, b));
        std::vector<uint32_t> decoded(n);
        EXPECT_EQ(ParaPFor().Decode(buffer.begin(), buffer.end(), n, 0, decoded.data()),
                  buffer.end());
        EXPECT_EQ(decoded, values) << "b " << b << " n " << n;
      }
    }
  }
}

TEST(ParaPForTest, AllValuesExceptionsRoundTrip) {
  for (size_t n : {size_t{1}, size_t{2}, size_t{127}, kBlockSize}) {
    std::vector<uint32_t> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = 1 + static_cast<uint32_t>(i * 33'554'393);
    const std::string bytes = EncodeParaPFor(values, 0);
    ASSERT_GE(bytes.size(), 4u);
    EXPECT_EQ(static_cast<uint8_t>(bytes[1]), n);  // en: every value
    const ExactBuffer buffer(bytes);
    std::vector<uint32_t> decoded(n);
    EXPECT_EQ(ParaPFor().Decode(buffer.begin(), buffer.end(), n, 0, decoded.data()), buffer.end());
    EXPECT_EQ(decoded, values) << "n " << n;
  }
}

TEST(ParaPForTest, LayoutMatchesTheReference) {
  std::mt19937_64 rng(21);
  for (Distribution d : kAllDistributions) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{100}, kBlockSize}) {
      const std::vector<uint32_t> values = RandomValues(d, n, rng);
      std::string chosen;
      ParaPFor().Encode(values.data(), n, 0, &chosen);
      const internal::ParaPForBitWidth choice = internal::ChooseParaPForBitWidth(values.data(), n);
      EXPECT_EQ(chosen, ReferenceParaPFor(values, choice.bit_width));
      EXPECT_EQ(chosen.size(), choice.encoded_bytes);
      for (uint32_t b = 0; b <= 32; ++b) {
        EXPECT_EQ(EncodeParaPFor(values, b), ReferenceParaPFor(values, b)) << "b " << b;
      }
    }
  }
}

// The chosen width is the cheapest of all 33, whatever the exceptions cost.
TEST(ParaPForTest, ChosenWidthGivesTheSmallestBlock) {
  std::mt19937_64 rng(22);
  for (Distribution d : kAllDistributions) {
    for (size_t n : {size_t{1}, size_t{5}, size_t{64}, kBlockSize}) {
      const std::vector<uint32_t> values = RandomValues(d, n, rng);
      const internal::ParaPForBitWidth choice = internal::ChooseParaPForBitWidth(values.data(), n);
      for (uint32_t b = 0; b <= 32; ++b) {
        EXPECT_LE(choice.encoded_bytes, EncodeParaPFor(values, b).size()) << "b " << b;
      }
    }
  }
}

// ib and hb are the widths of the largest index and overflow, not of n or of 32 - b.
TEST(ParaPForTest, HeaderCarriesTheWidthsOfTheLargestIndexAndOverflow) {
  std::vector<uint32_t> values(100, 3);
  values[5] = 1000;  // overflow 250 at b = 2: 8 bits
  values[70] = 7;    // overflow 1: the largest index, 7 bits
  const internal::ParaPForBitWidth choice =
      internal::ChooseParaPForBitWidth(values.data(), values.size());
  EXPECT_EQ(choice.bit_width, 2u);
  EXPECT_EQ(choice.exceptions, 2u);
  std::string bytes;
  ParaPFor().Encode(values.data(), values.size(), 0, &bytes);
  EXPECT_EQ(bytes.substr(0, 4), std::string("\x02\x02\x07\x08", 4));
  EXPECT_EQ(bytes.size(),
            4u + 25 + 2 + 2);  // slots, then two 7-bit indices and two 8-bit overflows
}

TEST(ParaPForTest, OneValueTakesTheHeaderAndOneSlot) {
  for (uint32_t v : {0u, 1u, 5u, 1u << 20, kMax32}) {
    std::string bytes;
    ParaPFor().Encode(&v, 1, 0, &bytes);
    const uint32_t b = std::bit_width(v);
    const std::string header = {static_cast<char>(b), '\0'};  // b, no exceptions
    EXPECT_EQ(bytes, header + ReferencePacked({v}, b));
  }
  const std::vector<uint32_t> zeros(kBlockSize, 0);
  EXPECT_EQ(EncodeParaPFor(zeros, 0), std::string("\0\0", 2));
}

TEST(ParaPForTest, RejectsInvalidHeaders) {
  // n = 3, b = 2: slots 3, 3, 1000 mod 4 = 0; one exception at index 2 (ib = 2) with overflow
  // 1000 >> 2 = 250 (hb = 8).
  const std::vector<uint32_t> values = {3, 3, 1000};
  const std::string valid("\x02\x01\x02\x08\x0F\x02\xFA", 7);
  ASSERT_EQ(EncodeParaPFor(values, 2), valid);
  auto decodes = [](const std::string& bytes, size_t n) {
    const ExactBuffer buffer(bytes);
    std::vector<uint32_t> decoded(n);
    return ParaPFor().Decode(buffer.begin(), buffer.end(), n, 0, decoded.data()) != nullptr;
  };
  EXPECT_TRUE(decodes(valid, 3));
  const std::string padding(16, '\0');
  auto with = [&](size_t pos, char byte) {
    std::string bad = valid;
    bad[pos] = byte;
    return bad + padding;
  };
  EXPECT_FALSE(decodes(with(0, 33), 3));      // slot width past 32
  EXPECT_FALSE(decodes(with(1, 4), 3));       // more exceptions than values
  EXPECT_FALSE(decodes(with(2, 3), 3));       // indices wider than bit_width(n - 1)
  EXPECT_FALSE(decodes(with(2, 1), 3));       // ib narrower than the largest index
  EXPECT_FALSE(decodes(with(3, 0), 3));       // exceptions with zero-width overflows
  EXPECT_FALSE(decodes(with(3, 31), 3));      // b + hb past 32
  EXPECT_FALSE(decodes(with(3, 9), 3));       // hb wider than the largest overflow
  EXPECT_FALSE(decodes(with(5, '\x03'), 3));  // index 3 >= n
  EXPECT_FALSE(decodes(with(6, '\0'), 3));    // zero overflow
  // b = 32 leaves no room for an overflow.
  EXPECT_FALSE(decodes(std::string("\x20\x01\x00\x01", 4) + padding, 1));

  // Two exceptions, at indices 0 and 2 (ib = 2, packed 0 | 2 << 2): out of order or repeated
  // indices are rejected.
  const std::vector<uint32_t> two = {1000, 3, 1000};
  const std::string valid_two("\x02\x02\x02\x08\x0C\x08\xFA\xFA", 8);
  ASSERT_EQ(EncodeParaPFor(two, 2), valid_two);
  EXPECT_TRUE(decodes(valid_two, 3));
  std::string swapped = valid_two;
  swapped[5] = '\x02';  // indices 2, 0
  EXPECT_FALSE(decodes(swapped, 3));
  std::string repeated = valid_two;
  repeated[5] = '\x0A';  // indices 2, 2
  EXPECT_FALSE(decodes(repeated, 3));
}

}  // namespace
}  // namespace tandem::index
