#include "broker/global_statistics.h"

#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::broker {
namespace {

using tandem::v1::CollectionStatistics;
using ::testing::HasSubstr;

CollectionStatistics Shard(uint64_t docs, uint64_t length,
                           std::vector<std::pair<std::string, uint64_t>> terms) {
  CollectionStatistics s;
  s.set_num_docs(docs);
  s.set_total_doc_length(length);
  for (const auto& [term, df] : terms) {
    tandem::v1::TermStatistics* t = s.add_terms();
    t->set_term(term);
    t->set_document_frequency(df);
  }
  return s;
}

TEST(SumStatistics, ShardsThatAnalyzeTheQueryDifferentlyAreNotOneCollection) {
  absl::StatusOr<CollectionStatistics> fewer =
      SumStatistics({Shard(3, 30, {{"a", 1}, {"b", 2}}), Shard(4, 40, {{"a", 1}})});
  ASSERT_FALSE(fewer.ok());
  EXPECT_EQ(fewer.status().code(), absl::StatusCode::kInternal);
  EXPECT_THAT(fewer.status().message(), HasSubstr("shard 1 analyzes the query into 1 terms"));

  absl::StatusOr<CollectionStatistics> other =
      SumStatistics({Shard(3, 30, {{"a", 1}, {"b", 2}}), Shard(4, 40, {{"a", 1}, {"c", 2}})});
  ASSERT_FALSE(other.ok());
  EXPECT_THAT(other.status().message(), HasSubstr("into \"c\", shard 0 into \"b\""));
}

TEST(SumStatistics, AddsDocumentsLengthsAndEachTermsFrequency) {
  absl::StatusOr<CollectionStatistics> sum =
      SumStatistics({Shard(3, 30, {{"a", 1}, {"b", 0}}), Shard(4, 41, {{"a", 2}, {"b", 4}}),
                     Shard(1, 5, {{"a", 0}, {"b", 1}})});
  ASSERT_TRUE(sum.ok()) << sum.status();
  EXPECT_EQ(sum->num_docs(), 8u);
  EXPECT_EQ(sum->total_doc_length(), 76u);
  ASSERT_EQ(sum->terms_size(), 2);
  EXPECT_EQ(sum->terms(0).term(), "a");
  EXPECT_EQ(sum->terms(0).document_frequency(), 3u);
  EXPECT_EQ(sum->terms(1).term(), "b");
  EXPECT_EQ(sum->terms(1).document_frequency(), 5u);
}

TEST(DeferredCancel, ACancelBeforeTheQueryStartsCancelsItWhenItDoes) {
  DeferredCancel early;
  early.Cancel();
  EXPECT_TRUE(early.cancelled());
  int cancels = 0;
  early.Set([&] { ++cancels; });
  EXPECT_EQ(cancels, 1);

  DeferredCancel late;
  late.Set([&] { ++cancels; });
  EXPECT_EQ(cancels, 1);
  late.Cancel();
  EXPECT_EQ(cancels, 2);
}

}  // namespace
}  // namespace tandem::broker
