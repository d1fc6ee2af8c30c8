// Property tests run against every registered codec (random blocks of every size and of the value
// distributions an index produces, every edge case, truncated and corrupted input), then tests of
// PForDelta's and Rice's own choices and of the bit packing every codec shares (ParaPFor's and
// SegLRC's are in their own files). Run under AddressSanitizer, the exact-size buffers of
// codec_test_util.h turn any read past `end` into a failure.
#include "index/block_codec.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/bit_packing.h"
#include "index/codec_test_util.h"
#include "index/pfor_internal.h"

namespace tandem::index {
namespace {

// pfor_codec.cc: b, e, [h], slots, positions, highs.
std::string ReferencePFor(const std::vector<uint32_t>& values, uint32_t b) {
  const ReferenceExceptions e = FindExceptions(values, b);
  std::string out = {static_cast<char>(b), static_cast<char>(e.indices.size())};
  if (!e.indices.empty()) out.push_back(static_cast<char>(e.high_bits));
  std::string positions;  // one byte each
  for (uint32_t i : e.indices) positions.push_back(static_cast<char>(i));
  return out + ReferencePacked(values, b) + positions + ReferencePacked(e.highs, e.high_bits);
}

// rice_codec.cc: binary part, then unary part.
std::string ReferenceRice(const std::vector<uint32_t>& values, uint32_t b) {
  ReferenceBits unary;
  for (uint32_t v : values) {
    for (uint64_t q = uint64_t{v} >> b; q > 0; --q) unary.PutBit(true);
    unary.PutBit(false);
  }
  return ReferencePacked(values, b) + unary.bytes();
}

class BlockCodecTest : public testing::TestWithParam<std::string> {
 protected:
  const BlockCodec& codec() const { return *GetBlockCodec(GetParam()); }

  std::string Encode(const std::vector<uint32_t>& values, uint32_t param) const {
    std::string out;
    codec().Encode(values.data(), values.size(), param, &out);
    return out;
  }

  // Decodes n values with `param` from exactly `bytes`, which need not be a valid block: the codec
  // may refuse them, but what it accepts must end inside the buffer.
  void ExpectDecodeStaysInBounds(const std::string& bytes, size_t n, uint32_t param) const {
    const ExactBuffer buffer(bytes);
    std::vector<uint32_t> decoded(n);
    const uint8_t* p = codec().Decode(buffer.begin(), buffer.end(), n, param, decoded.data());
    if (p != nullptr) {
      EXPECT_GT(p, buffer.begin());
      EXPECT_LE(p, buffer.end());
    }
  }

  // Encodes `values` as one block with the parameter the codec picks for them, decodes it from an
  // exact-size buffer and expects the values back and the returned pointer at the buffer's end.
  void ExpectRoundTrip(const std::vector<uint32_t>& values) const {
    const uint32_t param = codec().ChooseParameter(values.data(), values.size());
    ExpectRoundTrip(values, param);
  }

  void ExpectRoundTrip(const std::vector<uint32_t>& values, uint32_t param) const {
    const ExactBuffer buffer(Encode(values, param));
    std::vector<uint32_t> decoded(values.size());
    const uint8_t* next =
        codec().Decode(buffer.begin(), buffer.end(), values.size(), param, decoded.data());
    ASSERT_EQ(next, buffer.end()) << "n=" << values.size() << " param=" << param;
    ASSERT_EQ(decoded, values) << "param=" << param;
  }
};

TEST_P(BlockCodecTest, RegistryFindsCodecByItsName) {
  EXPECT_EQ(codec().name(), GetParam());
  EXPECT_EQ(GetBlockCodec(GetParam()), GetBlockCodec(GetParam()));
}

TEST_P(BlockCodecTest, RandomBlocksOfEverySizeAndDistributionRoundTrip) {
  std::mt19937_64 rng(1);
  for (Distribution d : kAllDistributions) {
    for (size_t n = 1; n <= kBlockSize; ++n) {
      for (int rep = 0; rep < 4; ++rep) {
        SCOPED_TRACE(testing::Message() << "distribution " << static_cast<int>(d) << " n " << n);
        ExpectRoundTrip(RandomValues(d, n, rng));
      }
    }
  }
}

TEST_P(BlockCodecTest, SingleValuesRoundTrip) {
  for (uint32_t bits = 0; bits <= 32; ++bits) {
    const uint64_t power = uint64_t{1} << bits;
    for (uint64_t v : {power - 1, power, power + 1}) {
      if (v <= kMax32) ExpectRoundTrip({static_cast<uint32_t>(v)});
    }
  }
}

TEST_P(BlockCodecTest, EqualValuesRoundTrip) {
  for (uint32_t v : {0u, 1u, 7u, 1000u, 1u << 31, kMax32 - 1, kMax32}) {
    for (size_t n : {size_t{1}, size_t{2}, size_t{8}, size_t{127}, kBlockSize}) {
      ExpectRoundTrip(std::vector<uint32_t>(n, v));
    }
  }
}

TEST_P(BlockCodecTest, ZerosWithOneHugeValueRoundTrip) {
  for (size_t pos : {size_t{0}, size_t{63}, kBlockSize - 1}) {
    std::vector<uint32_t> values(kBlockSize, 0);
    values[pos] = kMax32;
    ExpectRoundTrip(values);
  }
}

// A whole list: docIDs spread up to 2^32 - 1, so the first gap is huge, one parameter for the list,
// blocks of kBlockSize and a partial last block back to back in one buffer, decoded in order.
TEST_P(BlockCodecTest, ListOfBlocksDecodesSequentially) {
  std::mt19937_64 rng(2);
  for (Distribution d : kAllDistributions) {
    const size_t n = 1000 + rng() % 200;
    std::vector<uint32_t> values = RandomValues(d, n, rng);
    if (d == Distribution::kGeometricGaps) values[0] = kMax32 - 1'000'000;  // first docID near 2^32
    const uint32_t param = codec().ChooseParameter(values.data(), values.size());
    std::string bytes;
    for (size_t i = 0; i < n; i += kBlockSize) {
      codec().Encode(values.data() + i, std::min(kBlockSize, n - i), param, &bytes);
    }
    const ExactBuffer buffer(bytes);
    std::vector<uint32_t> decoded(n);
    const uint8_t* p = buffer.begin();
    for (size_t i = 0; i < n && p != nullptr; i += kBlockSize) {
      p = codec().Decode(p, buffer.end(), std::min(kBlockSize, n - i), param, decoded.data() + i);
    }
    EXPECT_EQ(p, buffer.end()) << "distribution " << static_cast<int>(d);
    EXPECT_EQ(decoded, values) << "distribution " << static_cast<int>(d);
  }
}

TEST_P(BlockCodecTest, TruncatedBlockIsRejected) {
  std::mt19937_64 rng(3);
  for (Distribution d : kAllDistributions) {
    for (size_t n : {size_t{1}, size_t{5}, size_t{77}, kBlockSize}) {
      const std::vector<uint32_t> values = RandomValues(d, n, rng);
      const uint32_t param = codec().ChooseParameter(values.data(), n);
      const std::string bytes = Encode(values, param);
      for (size_t cut = 0; cut < bytes.size(); ++cut) {
        const ExactBuffer buffer(std::string_view(bytes).substr(0, cut));
        std::vector<uint32_t> decoded(n);
        EXPECT_EQ(codec().Decode(buffer.begin(), buffer.end(), n, param, decoded.data()), nullptr)
            << "distribution " << static_cast<int>(d) << " n " << n << " cut " << cut;
      }
    }
  }
}

TEST_P(BlockCodecTest, TruncatedListFailsAtSomeBlock) {
  std::mt19937_64 rng(4);
  const std::vector<uint32_t> values = RandomValues(Distribution::kGeometricGaps, 300, rng);
  const uint32_t param = codec().ChooseParameter(values.data(), values.size());
  std::string bytes;
  for (size_t i = 0; i < values.size(); i += kBlockSize) {
    codec().Encode(values.data() + i, std::min(kBlockSize, values.size() - i), param, &bytes);
  }
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    const ExactBuffer buffer(std::string_view(bytes).substr(0, cut));
    std::vector<uint32_t> decoded(values.size());
    const uint8_t* p = buffer.begin();
    for (size_t i = 0; i < values.size() && p != nullptr; i += kBlockSize) {
      p = codec().Decode(p, buffer.end(), std::min(kBlockSize, values.size() - i), param,
                         decoded.data() + i);
    }
    EXPECT_EQ(p, nullptr) << "cut " << cut;
  }
}

// Decoding garbage must fail cleanly or stop inside the buffer; AddressSanitizer checks the reads.
TEST_P(BlockCodecTest, GarbageNeverReadsOutOfBounds) {
  std::mt19937_64 rng(5);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string bytes(rng() % 300, '\0');
    // Some buffers are all ones or all zeros: long unary runs, empty exception areas.
    const int fill = static_cast<int>(rng() % 4);
    for (char& c : bytes) c = static_cast<char>(fill == 0 ? 0xFF : fill == 1 ? 0 : rng());
    const size_t n = 1 + rng() % kBlockSize;
    const uint32_t param = static_cast<uint32_t>(rng() % 40);
    ExpectDecodeStaysInBounds(bytes, n, param);
  }
}

TEST_P(BlockCodecTest, CorruptedBlocksNeverReadOutOfBounds) {
  std::mt19937_64 rng(6);
  for (int trial = 0; trial < 5000; ++trial) {
    const size_t n = 1 + rng() % kBlockSize;
    const std::vector<uint32_t> values = RandomValues(kAllDistributions[trial % 6], n, rng);
    const uint32_t param = codec().ChooseParameter(values.data(), n);
    std::string bytes = Encode(values, param);
    for (int flips = 1 + static_cast<int>(rng() % 3); flips > 0; --flips) {
      bytes[rng() % bytes.size()] ^= static_cast<char>(1 + rng() % 255);
    }
    ExpectDecodeStaysInBounds(bytes, n, param);
  }
}

TEST_P(BlockCodecTest, RejectsBlockSizesOutsideTheInterface) {
  const std::string bytes(1024, '\0');
  const ExactBuffer buffer(bytes);
  std::vector<uint32_t> decoded(kBlockSize + 1);
  EXPECT_EQ(codec().Decode(buffer.begin(), buffer.end(), 0, 0, decoded.data()), nullptr);
  EXPECT_EQ(codec().Decode(buffer.begin(), buffer.end(), kBlockSize + 1, 0, decoded.data()),
            nullptr);
}

INSTANTIATE_TEST_SUITE_P(AllCodecs, BlockCodecTest, testing::ValuesIn(BlockCodecNames()),
                         [](const testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST(BlockCodecRegistryTest, NamesAreSortedAndUnknownNamesAreNull) {
  EXPECT_THAT(BlockCodecNames(),
              testing::ElementsAre("parapfor", "pfor", "rice", "seglrc", "simdbp"));
  EXPECT_EQ(GetBlockCodec("nope"), nullptr);
  EXPECT_EQ(GetBlockCodec(""), nullptr);
}

// ----- PForDelta -----

const BlockCodec& PFor() { return *GetBlockCodec("pfor"); }

TEST(PForTest, FewOutliersBecomeExceptionsAndTheRestFitTheSlots) {
  std::mt19937_64 rng(7);
  for (int trial = 0; trial < 100; ++trial) {
    std::vector<uint32_t> values(kBlockSize);
    for (auto& v : values) v = static_cast<uint32_t>(rng() % 16);
    values[rng() % 16] = 15;  // make sure some value needs all 4 bits
    for (int i = 0; i < 5; ++i) values[16 + rng() % 112] = 1u << (20 + rng() % 12);
    const internal::PForBitWidth choice = internal::ChoosePForBitWidth(values.data(), kBlockSize);
    EXPECT_EQ(choice.bit_width, 4u);
    EXPECT_LE(choice.exceptions, kBlockSize / 10);
    std::string bytes;
    PFor().Encode(values.data(), values.size(), 0, &bytes);
    EXPECT_EQ(bytes.size(), choice.encoded_bytes);
  }
}

// The cost-based choice should end near the classic "about 90% of the values fit" rule (Ding et al.
// section 2) on realistic blocks, not drift to many exceptions.
TEST(PForTest, ExceptionsStayNearTenPercentOnRealisticBlocks) {
  std::mt19937_64 rng(8);
  for (Distribution d : {Distribution::kGeometricGaps, Distribution::kZipfFrequencies,
                         Distribution::kRareHugeOutliers}) {
    size_t exceptions = 0;
    constexpr int kBlocks = 1000;
    for (int i = 0; i < kBlocks; ++i) {
      const std::vector<uint32_t> values = RandomValues(d, kBlockSize, rng);
      exceptions += internal::ChoosePForBitWidth(values.data(), kBlockSize).exceptions;
    }
    EXPECT_LE(exceptions, kBlocks * kBlockSize * 15 / 100)
        << "distribution " << static_cast<int>(d);
  }
}

TEST(PForTest, AllZerosTakeTheTwoHeaderBytes) {
  const std::vector<uint32_t> zeros(kBlockSize, 0);
  std::string bytes;
  PFor().Encode(zeros.data(), zeros.size(), 0, &bytes);
  EXPECT_EQ(bytes, std::string("\0\0", 2));
}

// Every bit width decodes, whatever the encoder would have chosen: b = 0 with nonzero values makes
// every value an exception, b = 32 leaves none.
TEST(PForTest, EveryForcedBitWidthRoundTrips) {
  std::mt19937_64 rng(9);
  for (uint32_t b = 0; b <= 32; ++b) {
    for (Distribution d : kAllDistributions) {
      for (size_t n : {size_t{1}, size_t{9}, size_t{100}, kBlockSize}) {
        const std::vector<uint32_t> values = RandomValues(d, n, rng);
        std::string bytes;
        internal::EncodePForBlock(values.data(), n, b, &bytes);
        const ExactBuffer buffer(bytes);
        std::vector<uint32_t> decoded(n);
        EXPECT_EQ(PFor().Decode(buffer.begin(), buffer.end(), n, 0, decoded.data()), buffer.end());
        EXPECT_EQ(decoded, values) << "b " << b << " n " << n;
      }
    }
  }
}

TEST(PForTest, LayoutMatchesTheReference) {
  std::mt19937_64 rng(12);
  for (Distribution d : kAllDistributions) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{100}, kBlockSize}) {
      const std::vector<uint32_t> values = RandomValues(d, n, rng);
      std::string chosen;
      PFor().Encode(values.data(), n, 0, &chosen);
      EXPECT_EQ(chosen,
                ReferencePFor(values, internal::ChoosePForBitWidth(values.data(), n).bit_width));
      for (uint32_t b = 0; b <= 32; ++b) {
        std::string forced;
        internal::EncodePForBlock(values.data(), n, b, &forced);
        EXPECT_EQ(forced, ReferencePFor(values, b)) << "b " << b << " n " << n;
      }
    }
  }
}

TEST(PForTest, RejectsInvalidHeaders) {
  std::vector<uint32_t> values(4, 3);
  values[2] = 1000;  // one exception at b = 2
  std::string valid;
  internal::EncodePForBlock(values.data(), values.size(), 2, &valid);
  ASSERT_EQ(valid[0], 2);
  ASSERT_EQ(valid[1], 1);
  auto decodes = [&](std::string bytes) {
    const ExactBuffer buffer(bytes);
    std::vector<uint32_t> decoded(values.size());
    return PFor().Decode(buffer.begin(), buffer.end(), values.size(), 0, decoded.data()) != nullptr;
  };
  EXPECT_TRUE(decodes(valid));
  std::string bad = valid;
  bad[0] = 33;  // slot width past 32
  EXPECT_FALSE(decodes(bad));
  bad = valid;
  bad[1] = 5;  // more exceptions than values
  EXPECT_FALSE(decodes(bad + std::string(16, '\0')));
  bad = valid;
  bad[2] = 0;  // exceptions with zero-width high parts
  EXPECT_FALSE(decodes(bad));
  bad = valid;
  bad[2] = 31;  // b + h past 32
  EXPECT_FALSE(decodes(bad + std::string(16, '\0')));
  bad = valid;
  bad[3 + 1] = 4;  // exception position past n (slots take one byte)
  EXPECT_FALSE(decodes(bad));
}

// ----- Rice -----

const BlockCodec& Rice() { return *GetBlockCodec("rice"); }

uint32_t RiceParameter(std::vector<uint32_t> values) {
  return Rice().ChooseParameter(values.data(), values.size());
}

TEST(RiceTest, ParameterIsFloorLog2OfTheMean) {
  EXPECT_EQ(Rice().ChooseParameter(nullptr, 0), 0u);
  EXPECT_EQ(RiceParameter({0, 0, 0}), 0u);
  EXPECT_EQ(RiceParameter({0, 0, 1}), 0u);  // mean 1/3
  EXPECT_EQ(RiceParameter({1, 1}), 0u);
  EXPECT_EQ(RiceParameter({3, 4}), 1u);     // mean 3.5
  EXPECT_EQ(RiceParameter({8, 8, 9}), 3u);  // mean 8.3
  EXPECT_EQ(RiceParameter({kMax32, kMax32}), 31u);
}

// Any b in 0..32 works for any value; values are kept below 2^(b+6) so the unary part stays short.
TEST(RiceTest, EveryParameterRoundTrips) {
  std::mt19937_64 rng(10);
  for (uint32_t b = 0; b <= 32; ++b) {
    for (size_t n : {size_t{1}, size_t{3}, size_t{64}, kBlockSize}) {
      std::vector<uint32_t> values(n);
      const uint64_t limit = std::min<uint64_t>(uint64_t{1} << (b + 6), uint64_t{kMax32} + 1);
      for (auto& v : values) v = static_cast<uint32_t>(rng() % limit);
      values[0] = static_cast<uint32_t>(limit - 1);
      const ExactBuffer buffer([&] {
        std::string out;
        Rice().Encode(values.data(), n, b, &out);
        return out;
      }());
      std::vector<uint32_t> decoded(n);
      EXPECT_EQ(Rice().Decode(buffer.begin(), buffer.end(), n, b, decoded.data()), buffer.end());
      EXPECT_EQ(decoded, values) << "b " << b << " n " << n;
    }
  }
}

TEST(RiceTest, LayoutMatchesTheReference) {
  std::mt19937_64 rng(13);
  for (Distribution d : kAllDistributions) {
    for (size_t n : {size_t{1}, size_t{7}, size_t{100}, kBlockSize}) {
      const std::vector<uint32_t> values = RandomValues(d, n, rng);
      const uint32_t chosen = Rice().ChooseParameter(values.data(), n);
      // The chosen b and a few below it (longer unary runs), never so low that they explode.
      for (uint32_t b = chosen >= 4 ? chosen - 4 : 0; b <= std::min(chosen + 2, 32u); ++b) {
        std::string bytes;
        Rice().Encode(values.data(), n, b, &bytes);
        EXPECT_EQ(bytes, ReferenceRice(values, b)) << "b " << b << " n " << n;
      }
    }
  }
}

// 2^32 - 1 with b = 8 is a unary run of 2^24 one-bits (2 MiB), crossing many 64-bit words.
TEST(RiceTest, LongUnaryRunsRoundTrip) {
  for (uint32_t b : {8u, 16u, 24u}) {
    const std::vector<uint32_t> values = {5, kMax32, 0, kMax32 - 1, 3};
    std::string bytes;
    Rice().Encode(values.data(), values.size(), b, &bytes);
    const ExactBuffer buffer(bytes);
    std::vector<uint32_t> decoded(values.size());
    EXPECT_EQ(Rice().Decode(buffer.begin(), buffer.end(), values.size(), b, decoded.data()),
              buffer.end());
    EXPECT_EQ(decoded, values) << "b " << b;
  }
}

TEST(RiceTest, RejectsQuotientsThatOverflow32Bits) {
  // n = 1, b = 31: four bytes of remainder, then q = 2 (bits 1, 1, 0): 2 * 2^31 does not fit.
  const std::string overflow("\0\0\0\0\x03", 5);
  const std::string fits("\0\0\0\0\x01", 5);  // q = 1: 2^31
  uint32_t value = 0;
  const ExactBuffer bad(overflow);
  EXPECT_EQ(Rice().Decode(bad.begin(), bad.end(), 1, 31, &value), nullptr);
  const ExactBuffer good(fits);
  EXPECT_EQ(Rice().Decode(good.begin(), good.end(), 1, 31, &value), good.end());
  EXPECT_EQ(value, 1u << 31);
}

TEST(RiceTest, RejectsNonzeroPaddingAndBadParameters) {
  uint32_t value = 0;
  const ExactBuffer padded(std::string("\x02", 1));  // b = 0: q = 0, then a stray one-bit
  EXPECT_EQ(Rice().Decode(padded.begin(), padded.end(), 1, 0, &value), nullptr);
  const ExactBuffer zero(std::string(8, '\0'));
  EXPECT_EQ(Rice().Decode(zero.begin(), zero.end(), 1, 33, &value), nullptr);
}

// ----- Bit packing -----

TEST(BitPackingTest, EveryWidthAndCountRoundTrips) {
  std::mt19937_64 rng(11);
  for (uint32_t b = 0; b <= 32; ++b) {
    for (size_t n = 0; n <= 200; ++n) {
      std::vector<uint32_t> values(n);
      for (auto& v : values) v = static_cast<uint32_t>(rng());  // high bits must be ignored
      std::string packed;
      AppendPackedBits(values.data(), n, b, &packed);
      ASSERT_EQ(packed, ReferencePacked(values, b)) << "b " << b << " n " << n;
      ASSERT_EQ(packed.size(), PackedBytes(n, b));
      for (auto& v : values) v = b == 32 ? v : v & ((1u << b) - 1);
      // Exactly the packed bytes readable, then with bytes of a following block after them.
      for (size_t extra : {0, 3, 64}) {
        const ExactBuffer buffer(packed + std::string(extra, '\xFF'));
        std::vector<uint32_t> unpacked(n);
        UnpackBits(buffer.begin(), packed.size() + extra, n, b, unpacked.data());
        ASSERT_EQ(unpacked, values) << "b " << b << " n " << n << " extra " << extra;
      }
    }
  }
}

TEST(BitPackingTest, BitOrderIsLittleEndian) {
  const uint32_t values[] = {1, 2, 3, 4};
  std::string packed;
  AppendPackedBits(values, 4, 3, &packed);
  // 001 010 011 100 from the low bit: bits 1000 1011 | 0001 -> bytes 0xD1, 0x08.
  EXPECT_EQ(packed, std::string("\xD1\x08", 2));
}

}  // namespace
}  // namespace tandem::index
