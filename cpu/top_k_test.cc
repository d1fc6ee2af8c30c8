#include "cpu/top_k.h"

#include <bit>
#include <cmath>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::cpu {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// Scores worth ordering: both zeros, both infinities, the smallest denormal, the largest finite,
// and ordinary values of both signs.
const float kEdgeScores[] = {0.0f,
                             -0.0f,
                             kInf,
                             -kInf,
                             std::numeric_limits<float>::denorm_min(),
                             -std::numeric_limits<float>::denorm_min(),
                             std::numeric_limits<float>::min(),
                             std::numeric_limits<float>::max(),
                             -std::numeric_limits<float>::max(),
                             1.0f,
                             -1.0f,
                             std::nextafter(1.0f, 2.0f),
                             3.25f};

TEST(TopKTest, KeysOrderAsRanksBefore) {
  const uint32_t docids[] = {0, 1, 7, UINT32_MAX - 1, UINT32_MAX};
  for (float a : kEdgeScores) {
    for (float b : kEdgeScores) {
      for (uint32_t da : docids) {
        for (uint32_t db : docids) {
          const bool key_before = TopK::KeyOf(da, a) > TopK::KeyOf(db, b);
          EXPECT_EQ(key_before, RanksBefore(Hit{da, a}, Hit{db, b}))
              << a << "@" << da << " vs " << b << "@" << db;
        }
      }
    }
  }
}

TEST(TopKTest, KeysGiveBackTheScore) {
  for (float s : kEdgeScores) {
    const float back = TopK::ScoreOf(TopK::KeyOf(3, s));
    EXPECT_EQ(back, s);
    if (s != 0.0f) {
      EXPECT_EQ(std::bit_cast<uint32_t>(back), std::bit_cast<uint32_t>(s));
    }
  }
  std::mt19937 rng(5);
  for (int i = 0; i < 10000; ++i) {
    const float s = std::bit_cast<float>(static_cast<uint32_t>(rng()));
    if (std::isnan(s)) continue;
    const uint64_t key = TopK::KeyOf(static_cast<uint32_t>(i), s);
    EXPECT_EQ(TopK::ScoreOf(key), s);
    EXPECT_EQ(~static_cast<uint32_t>(key), static_cast<uint32_t>(i));
  }
}

// Random hits with many ties against a sort of all of them, for k below, at and above their count.
TEST(TopKTest, KeepsTheKBestInRankOrder) {
  std::mt19937 rng(11);
  for (size_t n : {0u, 1u, 5u, 200u, 3000u}) {
    std::vector<Hit> all;
    std::set<uint32_t> used;
    while (all.size() < n) {
      const uint32_t docid = rng() % (4 * n + 10);
      if (!used.insert(docid).second) continue;
      // Few distinct scores, so that ties at the k-th score are common.
      const float score = static_cast<float>(rng() % 17) * 0.5f;
      all.push_back({docid, score});
    }
    std::vector<Hit> sorted = all;
    std::sort(sorted.begin(), sorted.end(), RanksBefore);
    for (size_t k : {1u, 2u, 10u, 1000u, 5000u}) {
      TopK top(k);
      for (const Hit& h : all) {
        const bool would = top.WouldEnter(h.docid, h.score);
        const size_t before = top.size();
        const float threshold = top.threshold();
        top.Push(h.docid, h.score);
        if (before < k) {
          EXPECT_TRUE(would);
          EXPECT_EQ(threshold, -kInf);
        } else {
          EXPECT_GE(h.score, would ? threshold : -kInf);
        }
      }
      std::vector<Hit> want(sorted.begin(), sorted.begin() + std::min(k, n));
      EXPECT_EQ(std::move(top).Finish(), want) << "n " << n << " k " << k;
    }
  }
}

TEST(TopKTest, ThresholdIsTheKthScoreOnceFull) {
  TopK top(3);
  EXPECT_EQ(top.threshold(), -kInf);
  top.Push(10, 1.0f);
  top.Push(11, 5.0f);
  EXPECT_FALSE(top.full());
  top.Push(12, 3.0f);
  EXPECT_TRUE(top.full());
  EXPECT_EQ(top.threshold(), 1.0f);
  EXPECT_FALSE(top.WouldEnter(13, 1.0f));  // ties go to the lower docID, 10
  EXPECT_TRUE(top.WouldEnter(9, 1.0f));
  top.Push(9, 1.0f);
  EXPECT_EQ(top.threshold(), 1.0f);
  top.Push(14, 4.0f);
  EXPECT_EQ(top.threshold(), 3.0f);
  EXPECT_EQ(std::move(top).Finish(), (std::vector<Hit>{{11, 5.0f}, {14, 4.0f}, {12, 3.0f}}));
}

TEST(TopKTest, KZeroKeepsNothing) {
  TopK top(0);
  EXPECT_TRUE(top.full());
  EXPECT_EQ(top.threshold(), kInf);
  EXPECT_FALSE(top.WouldEnter(1, 2.0f));
  top.Push(1, 2.0f);
  EXPECT_TRUE(std::move(top).Finish().empty());
}

}  // namespace
}  // namespace tandem::cpu
