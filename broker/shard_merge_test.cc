#include "broker/shard_merge.h"

#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::broker {
namespace {

using tandem::v1::SearchResponse;

ShardAnswer Answer(uint32_t shard, uint32_t first_docid,
                   std::vector<std::pair<uint32_t, float>> hits) {
  ShardAnswer a{shard, first_docid, {}};
  for (const auto& [docid, score] : hits) {
    tandem::v1::Hit* hit = a.response.add_hits();
    hit->set_docid(docid);
    hit->set_score(score);
    hit->set_external_id("s" + std::to_string(shard) + "-" + std::to_string(docid));
  }
  return a;
}

std::vector<std::pair<uint32_t, float>> Hits(const SearchResponse& r) {
  std::vector<std::pair<uint32_t, float>> hits;
  for (const auto& h : r.hits()) hits.emplace_back(h.docid(), h.score());
  return hits;
}

TEST(MergeShardAnswers, RanksByScoreThenCollectionDocid) {
  std::vector<ShardAnswer> answers;
  answers.push_back(Answer(0, 0, {{5, 3.0f}, {1, 2.0f}, {9, 1.0f}}));
  answers.push_back(Answer(1, 100, {{0, 3.0f}, {7, 2.5f}}));
  answers.push_back(Answer(2, 200, {{3, 2.0f}}));
  absl::StatusOr<SearchResponse> merged = MergeShardAnswers(4, answers);
  ASSERT_TRUE(merged.ok()) << merged.status();
  // Equal scores: the lower collection docID first (shard 0's 5 before shard 1's 100).
  EXPECT_EQ(Hits(*merged), (std::vector<std::pair<uint32_t, float>>{
                               {5, 3.0f}, {100, 3.0f}, {107, 2.5f}, {1, 2.0f}}));
  EXPECT_EQ(merged->hits(1).external_id(), "s1-0");
}

TEST(MergeShardAnswers, FewerHitsThanKAndNoShards) {
  std::vector<ShardAnswer> answers;
  answers.push_back(Answer(0, 0, {{2, 1.0f}}));
  answers.push_back(Answer(1, 10, {}));
  absl::StatusOr<SearchResponse> merged = MergeShardAnswers(10, answers);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(Hits(*merged), (std::vector<std::pair<uint32_t, float>>{{2, 1.0f}}));
  std::vector<ShardAnswer> none;
  merged = MergeShardAnswers(10, none);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->hits_size(), 0);
  EXPECT_EQ(TotalHits(answers), 1u);
}

// Against a reference: one ranked list cut into shards and each shard's top-k merged again is the
// list's top-k, whatever the ties.
TEST(MergeShardAnswers, EqualsTheTopKOfTheWhole) {
  std::mt19937 random(7);
  for (int round = 0; round < 200; ++round) {
    const uint32_t docs = 1 + random() % 300;
    const uint32_t shards = 1 + random() % 7;
    const uint32_t k = 1 + random() % 40;
    std::vector<float> score(docs);
    for (float& s : score) s = static_cast<float>(random() % 8);  // many ties
    auto rank = [&](uint32_t lo, uint32_t hi) {
      std::vector<std::pair<uint32_t, float>> hits;
      for (uint32_t d = lo; d < hi; ++d) {
        if (score[d] > 0) hits.emplace_back(d, score[d]);
      }
      std::sort(hits.begin(), hits.end(), [](const auto& a, const auto& b) {
        return std::make_tuple(-a.second, a.first) < std::make_tuple(-b.second, b.first);
      });
      if (hits.size() > k) hits.resize(k);
      return hits;
    };
    std::vector<ShardAnswer> answers;
    for (uint32_t s = 0; s < shards; ++s) {
      const uint32_t lo = docs * s / shards, hi = docs * (s + 1) / shards;
      std::vector<std::pair<uint32_t, float>> local = rank(lo, hi);
      for (auto& [d, sc] : local) d -= lo;
      answers.push_back(Answer(s, lo, local));
    }
    absl::StatusOr<SearchResponse> merged = MergeShardAnswers(k, answers);
    ASSERT_TRUE(merged.ok());
    EXPECT_EQ(Hits(*merged), rank(0, docs)) << "round " << round;
  }
}

TEST(MergeShardAnswers, SumsAndMaximaOfStats) {
  std::vector<ShardAnswer> answers;
  answers.push_back(Answer(0, 0, {{1, 1.0f}}));
  answers.push_back(Answer(1, 10, {{1, 2.0f}}));
  answers[0].response.mutable_stats()->set_engine("gpu");
  answers[0].response.mutable_stats()->set_postings_decoded(10);
  answers[0].response.mutable_stats()->set_execution_micros(7);
  answers[0].response.mutable_stats()->set_executed_mode(tandem::v1::QUERY_MODE_AND);
  answers[0].response.mutable_stats()->add_terms("a");
  answers[1].response.mutable_stats()->set_engine("cpu");
  answers[1].response.mutable_stats()->set_postings_decoded(5);
  answers[1].response.mutable_stats()->set_execution_micros(9);
  answers[1].response.mutable_stats()->set_queued_micros(3);
  absl::StatusOr<SearchResponse> merged = MergeShardAnswers(10, answers);
  ASSERT_TRUE(merged.ok());
  EXPECT_EQ(merged->stats().engine(), "cpu+gpu");
  EXPECT_EQ(merged->stats().postings_decoded(), 15u);
  EXPECT_EQ(merged->stats().execution_micros(), 9u);
  EXPECT_EQ(merged->stats().queued_micros(), 3u);
  EXPECT_EQ(merged->stats().executed_mode(), tandem::v1::QUERY_MODE_AND);
  ASSERT_EQ(merged->stats().terms_size(), 1);
}

TEST(MergeShardAnswers, RefusesADocidBeyondThe32BitRange) {
  std::vector<ShardAnswer> answers;
  answers.push_back(Answer(3, 0xFFFFFFF0u, {{0x20, 1.0f}}));
  absl::StatusOr<SearchResponse> merged = MergeShardAnswers(10, answers);
  EXPECT_EQ(merged.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(merged.status().message().find("shard 3"), std::string::npos);
}

}  // namespace
}  // namespace tandem::broker
