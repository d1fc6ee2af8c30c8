// Tests of SIMD-BP128's own layout and paths (simdbp_codec.cc): every bit width at the sizes that
// take the vertical and the packed form, the bytes against a bit-by-bit reference, the scalar,
// SSE4.1 and AVX2 paths against each other (paths the CPU lacks are skipped), truncation at every
// byte and the headers a decoder must reject; then the gap-to-docID prefix sum on every path. The
// properties every codec shares are in block_codec_test.cc.
#include "index/simdbp_codec.h"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "index/bit_packing.h"
#include "index/block_codec.h"
#include "index/codec_test_util.h"

namespace tandem::index {
namespace {

const BlockCodec& SimdBp() { return *GetBlockCodec("simdbp"); }

std::string Encode(const std::vector<uint32_t>& values) {
  std::string out;
  SimdBp().Encode(values.data(), values.size(), 0, &out);
  return out;
}

// Restores the path the process started with when a test ends.
class SimdBpTest : public testing::Test {
 protected:
  void TearDown() override { SetSimdPath(initial_); }

  // Decodes on every available path, expecting `values` and exactly the encoded bytes consumed.
  void ExpectDecodesOnEveryPath(const std::string& bytes, const std::vector<uint32_t>& values) {
    const ExactBuffer buf(bytes);
    for (SimdPath path : AvailableSimdPaths()) {
      SCOPED_TRACE(SimdPathName(path));
      ASSERT_TRUE(SetSimdPath(path));
      std::vector<uint32_t> out(values.size(), 0xDEADBEEF);
      EXPECT_EQ(SimdBp().Decode(buf.begin(), buf.end(), values.size(), 0, out.data()), buf.end());
      EXPECT_EQ(out, values);
    }
  }

 private:
  SimdPath initial_ = ActiveSimdPath();
};

// n values below 2^b, the largest exactly b bits wide.
std::vector<uint32_t> ValuesOfWidth(uint32_t b, size_t n, std::mt19937_64& rng) {
  std::vector<uint32_t> v(n);
  for (auto& x : v) x = LowBits(static_cast<uint32_t>(rng()), b);
  if (b > 0) v[rng() % n] |= uint32_t{1} << (b - 1);
  return v;
}

// The documented layout, one bit at a time: b, then for 128 values each lane's 32 fields packed
// little-endian into b words, the lanes' words interleaved; for fewer values, the plain packing.
std::string ReferenceSimdBp(const std::vector<uint32_t>& values, uint32_t b) {
  std::string out(1, static_cast<char>(b));
  if (values.size() < kBlockSize) return out + ReferencePacked(values, b);
  std::string lanes[4];
  for (size_t lane = 0; lane < 4; ++lane) {
    std::vector<uint32_t> fields;
    for (size_t i = lane; i < kBlockSize; i += 4) fields.push_back(values[i]);
    lanes[lane] = ReferencePacked(fields, b);
  }
  for (size_t w = 0; w < b; ++w) {
    for (size_t lane = 0; lane < 4; ++lane) out += lanes[lane].substr(4 * w, 4);
  }
  return out;
}

TEST_F(SimdBpTest, EveryBitWidthAndSizeRoundTripsOnEveryPath) {
  std::mt19937_64 rng(1);
  for (uint32_t b = 0; b <= 32; ++b) {
    for (size_t n : {size_t{1}, size_t{2}, size_t{3}, size_t{4}, size_t{5}, size_t{8}, size_t{9},
                     size_t{64}, size_t{127}, kBlockSize}) {
      SCOPED_TRACE(testing::Message() << "b=" << b << " n=" << n);
      const std::vector<uint32_t> values = ValuesOfWidth(b, n, rng);
      const std::string bytes = Encode(values);
      ASSERT_EQ(bytes, ReferenceSimdBp(values, b));
      EXPECT_EQ(bytes.size(), 1 + (n == kBlockSize ? 16 * b : PackedBytes(n, b)));
      ExpectDecodesOnEveryPath(bytes, values);
    }
  }
}

TEST_F(SimdBpTest, AllZerosTakeOneByte) {
  for (size_t n : {size_t{1}, size_t{127}, kBlockSize}) {
    const std::vector<uint32_t> zeros(n, 0);
    EXPECT_EQ(Encode(zeros), std::string(1, '\0'));
    ExpectDecodesOnEveryPath(Encode(zeros), zeros);
  }
}

TEST_F(SimdBpTest, MaxValuesTakeThirtyTwoBits) {
  for (size_t n : {size_t{1}, size_t{127}, kBlockSize}) {
    const std::vector<uint32_t> max(n, kMax32);
    const std::string bytes = Encode(max);
    EXPECT_EQ(bytes.size(), 1 + 4 * n);
    EXPECT_EQ(static_cast<uint8_t>(bytes[0]), 32);
    ExpectDecodesOnEveryPath(bytes, max);
  }
}

TEST_F(SimdBpTest, PathsAgreeOnRandomBlocks) {
  std::mt19937_64 rng(7);
  for (int round = 0; round < 300; ++round) {
    for (Distribution d : kAllDistributions) {
      const size_t n = round % 3 == 0 ? 1 + rng() % kBlockSize : kBlockSize;
      const std::vector<uint32_t> values = RandomValues(d, n, rng);
      ExpectDecodesOnEveryPath(Encode(values), values);
    }
  }
}

TEST_F(SimdBpTest, TruncationAtEveryByteIsAnError) {
  std::mt19937_64 rng(3);
  for (uint32_t b : {0u, 1u, 5u, 13u, 31u, 32u}) {
    for (size_t n : {size_t{1}, size_t{127}, kBlockSize}) {
      const std::string bytes = Encode(ValuesOfWidth(b, n, rng));
      for (SimdPath path : AvailableSimdPaths()) {
        ASSERT_TRUE(SetSimdPath(path));
        for (size_t cut = 0; cut < bytes.size(); ++cut) {
          SCOPED_TRACE(testing::Message()
                       << SimdPathName(path) << " b=" << b << " n=" << n << " cut=" << cut);
          const ExactBuffer buf(std::string_view(bytes).substr(0, cut));
          std::vector<uint32_t> out(n);
          EXPECT_EQ(SimdBp().Decode(buf.begin(), buf.end(), n, 0, out.data()), nullptr);
        }
      }
    }
  }
}

TEST_F(SimdBpTest, RejectsWidthsAbove32AndWidthsNotOfTheLargestValue) {
  std::mt19937_64 rng(5);
  for (size_t n : {size_t{100}, kBlockSize}) {
    std::vector<uint32_t> out(n);
    for (uint32_t b = 33; b < 256; ++b) {
      const ExactBuffer buf(std::string(1, static_cast<char>(b)) + std::string(4 * n, '\xFF'));
      EXPECT_EQ(SimdBp().Decode(buf.begin(), buf.end(), n, 0, out.data()), nullptr) << b;
    }
    // Fields declared wider than the largest value needs.
    const std::vector<uint32_t> values = ValuesOfWidth(9, n, rng);
    std::vector<uint32_t> shifted(values);
    for (auto& v : shifted) v >>= 1;
    for (SimdPath path : AvailableSimdPaths()) {
      ASSERT_TRUE(SetSimdPath(path));
      const ExactBuffer buf(ReferenceSimdBp(shifted, 10));  // the largest is 8 bits wide, not 10
      EXPECT_EQ(SimdBp().Decode(buf.begin(), buf.end(), n, 0, out.data()), nullptr);
    }
  }
}

TEST_F(SimdBpTest, RejectsNonzeroPaddingOfAPartialBlock) {
  const std::vector<uint32_t> values = {5, 1, 7};  // b = 3: 9 bits, 7 bits of padding
  std::string bytes = Encode(values);
  ASSERT_EQ(bytes.size(), 3u);
  bytes[2] = static_cast<char>(bytes[2] | 0x80);
  const ExactBuffer buf(bytes);
  uint32_t out[3];
  EXPECT_EQ(SimdBp().Decode(buf.begin(), buf.end(), 3, 0, out), nullptr);
}

TEST_F(SimdBpTest, ForcedPathsAndNames) {
  for (SimdPath path : {SimdPath::kScalar, SimdPath::kSse41, SimdPath::kAvx2}) {
    SimdPath parsed;
    ASSERT_TRUE(ParseSimdPath(SimdPathName(path), &parsed));
    EXPECT_EQ(parsed, path);
    EXPECT_EQ(SetSimdPath(path), SimdPathAvailable(path));
    if (SimdPathAvailable(path)) {
      EXPECT_EQ(ActiveSimdPath(), path);
    }
  }
  SimdPath parsed;
  EXPECT_FALSE(ParseSimdPath("avx512", &parsed));
  EXPECT_TRUE(SimdPathAvailable(SimdPath::kScalar));
  EXPECT_EQ(AvailableSimdPaths().front(), SimdPath::kScalar);
}

// ---- GapsToDocids ------------------------------------------------------------------------------

// Expects the same docIDs and verdict from every path as from the definition.
void ExpectGapsToDocidsOnEveryPath(uint32_t base, const std::vector<uint32_t>& gaps) {
  std::vector<uint32_t> expected(gaps.size());
  uint64_t doc = base;
  bool ok = true;
  for (size_t i = 0; i < gaps.size(); ++i) {
    ok &= gaps[i] > 0 || i == 0;
    doc += gaps[i];
    expected[i] = static_cast<uint32_t>(doc);
  }
  ok &= doc <= kMax32;
  for (SimdPath path : AvailableSimdPaths()) {
    SCOPED_TRACE(SimdPathName(path));
    ASSERT_TRUE(SetSimdPath(path));
    std::vector<uint32_t> docids(gaps.size());
    EXPECT_EQ(GapsToDocids(base, gaps.data(), gaps.size(), docids.data()), ok);
    EXPECT_EQ(docids, expected);
    std::vector<uint32_t> in_place(gaps);
    EXPECT_EQ(GapsToDocids(base, in_place.data(), in_place.size(), in_place.data()), ok);
    EXPECT_EQ(in_place, expected);
  }
}

TEST_F(SimdBpTest, GapsToDocidsAgreesWithTheDefinitionOnEveryPath) {
  std::mt19937_64 rng(11);
  for (size_t n = 1; n <= kBlockSize; ++n) {
    SCOPED_TRACE(n);
    std::vector<uint32_t> gaps(n);
    for (auto& g : gaps) g = 1 + static_cast<uint32_t>(rng() % 1000);
    const uint32_t base = static_cast<uint32_t>(rng() % 1000000);
    ExpectGapsToDocidsOnEveryPath(base, gaps);
    gaps[0] = 0;  // a first gap of 0 is the caller's to judge
    ExpectGapsToDocidsOnEveryPath(0, gaps);
    ExpectGapsToDocidsOnEveryPath(base, gaps);
  }
}

TEST_F(SimdBpTest, GapsToDocidsRejectsZeroGapsAndWrapsAtEveryPosition) {
  std::mt19937_64 rng(13);
  for (size_t n : {size_t{5}, size_t{13}, size_t{127}, kBlockSize}) {
    for (size_t at = 0; at < n; ++at) {
      SCOPED_TRACE(testing::Message() << "n=" << n << " at=" << at);
      std::vector<uint32_t> gaps(n);
      for (auto& g : gaps) g = 1 + static_cast<uint32_t>(rng() % 50);
      std::vector<uint32_t> zero(gaps);
      zero[at] = 0;
      ExpectGapsToDocidsOnEveryPath(100, zero);
      std::vector<uint32_t> wrap(gaps);
      wrap[at] = kMax32 - 10;  // the sum passes 2^32 here
      ExpectGapsToDocidsOnEveryPath(1000, wrap);
      std::vector<uint32_t> top(gaps);
      top[at] = kMax32 - 100000;  // the sum ends just below 2^32
      ExpectGapsToDocidsOnEveryPath(0, top);
    }
  }
}

}  // namespace
}  // namespace tandem::index
