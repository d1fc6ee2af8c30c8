#include "workload/query_split.h"

#include <algorithm>
#include <set>

#include "gtest/gtest.h"

namespace tandem::workload {
namespace {

TEST(QuerySplitTest, DisjointSortedAndOfTheRequestedSizes) {
  absl::StatusOr<QuerySplit> s = SplitQueries(10000, 1, 3000, 1000);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->train.size(), 3000u);
  EXPECT_EQ(s->eval.size(), 1000u);
  EXPECT_TRUE(std::is_sorted(s->train.begin(), s->train.end()));
  EXPECT_TRUE(std::is_sorted(s->eval.begin(), s->eval.end()));
  std::set<size_t> all(s->train.begin(), s->train.end());
  all.insert(s->eval.begin(), s->eval.end());
  EXPECT_EQ(all.size(), 4000u);  // no position in both, none repeated
  EXPECT_LT(*all.rbegin(), 10000u);
}

TEST(QuerySplitTest, DeterministicBySeed) {
  absl::StatusOr<QuerySplit> a = SplitQueries(5000, 7, 300, 100);
  absl::StatusOr<QuerySplit> b = SplitQueries(5000, 7, 300, 100);
  absl::StatusOr<QuerySplit> c = SplitQueries(5000, 8, 300, 100);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_EQ(a->train, b->train);
  EXPECT_EQ(a->eval, b->eval);
  EXPECT_NE(a->train, c->train);
  // Fixed values, computed by a separate Python rendering of the algorithm in query_split.h: the
  // split is part of the benchmark's definition and must not drift.
  absl::StatusOr<QuerySplit> tiny = SplitQueries(10, 1, 3, 2);
  ASSERT_TRUE(tiny.ok());
  EXPECT_EQ(tiny->train, (std::vector<size_t>{0, 1, 9}));
  EXPECT_EQ(tiny->eval, (std::vector<size_t>{4, 8}));
}

TEST(QuerySplitTest, SpreadsOverThePool) {
  absl::StatusOr<QuerySplit> s = SplitQueries(40000, 1, 3000, 1000);
  ASSERT_TRUE(s.ok());
  // A random sample, not a prefix: about a quarter of each set in each quarter of the pool.
  for (const auto* part : {&s->train, &s->eval}) {
    const double first_quarter =
        std::count_if(part->begin(), part->end(), [](size_t i) { return i < 10000; });
    EXPECT_NEAR(first_quarter / part->size(), 0.25, 0.05);
  }
}

TEST(QuerySplitTest, TooFewQueriesIsAnError) {
  EXPECT_EQ(SplitQueries(3999, 1, 3000, 1000).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(SplitQueries(4000, 1, 3000, 1000).ok());
  EXPECT_TRUE(SplitQueries(0, 1, 0, 0).ok());
}

TEST(QuerySplitTest, ParsesPartNames) {
  EXPECT_EQ(*ParseSplitPart("train"), SplitPart::kTrain);
  EXPECT_EQ(*ParseSplitPart("eval"), SplitPart::kEval);
  EXPECT_EQ(*ParseSplitPart("all"), SplitPart::kAll);
  EXPECT_FALSE(ParseSplitPart("test").ok());
}

}  // namespace
}  // namespace tandem::workload
