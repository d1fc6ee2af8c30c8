#include "workload/query_set.h"

#include <fstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/data_dir.h"
#include "tests/test_collection.h"

namespace tandem::workload {
namespace {

using ::testing::ElementsAre;

std::unique_ptr<index::Analyzer> SyntheticAnalyzer() {
  index::AnalyzerConfig c;
  c.tokenizer = "alnum";
  c.possessive = false;
  c.stemmer = "none";
  return *index::Analyzer::Create(c);
}

TEST(QuerySetTest, AnalyzesWithTheGivenAnalyzer) {
  testing::TempDir tmp;
  std::ofstream(tmp.path() + "/q.txt") << "7:The Obama family TREE\n8:the of\n9:caf\xe9 2009\n";
  auto analyzer = SyntheticAnalyzer();
  auto queries = LoadQuerySet(tmp.path() + "/q.txt", *analyzer);
  ASSERT_TRUE(queries.ok()) << queries.status();
  ASSERT_EQ(queries->size(), 3u);
  EXPECT_EQ((*queries)[0].id, "7");
  EXPECT_THAT((*queries)[0].terms, ElementsAre("obama", "family", "tree"));
  EXPECT_TRUE((*queries)[1].terms.empty());           // stop words only: kept, with no terms
  EXPECT_EQ((*queries)[2].text, "caf\xc3\xa9 2009");  // ISO-8859-1 read as UTF-8
  EXPECT_THAT((*queries)[2].terms, ElementsAre("caf", "2009"));
}

TEST(QuerySetTest, MixedColonAndPriorityLinesLoseThePriority) {
  testing::TempDir tmp;
  std::ofstream(tmp.path() + "/mq.txt") << "1:after school program\n20001:1:obama family tree\n"
                                           "20002:4:french lick\n";
  auto analyzer = SyntheticAnalyzer();
  auto queries = LoadQuerySet(tmp.path() + "/mq.txt", *analyzer);
  ASSERT_TRUE(queries.ok()) << queries.status();
  EXPECT_EQ((*queries)[1].id, "20001");
  EXPECT_EQ((*queries)[1].text, "obama family tree");
  EXPECT_THAT((*queries)[2].terms, ElementsAre("french", "lick"));
  // An explicit format is taken as it is.
  auto as_colon = LoadQuerySet(tmp.path() + "/mq.txt", *analyzer, QueryFileFormat::kColon);
  ASSERT_TRUE(as_colon.ok());
  EXPECT_EQ((*as_colon)[1].text, "1:obama family tree");
}

TEST(QuerySetTest, DistinctTermsKeepFirstOccurrenceOrder) {
  EXPECT_THAT(DistinctTerms({"b", "a", "b", "c", "a"}), ElementsAre("b", "a", "c"));
}

// The pool keeps the queries with an index term in file order; the split and the limit pick from
// it.
TEST(QuerySetTest, SelectQueriesPoolsThenSplitsThenLimits) {
  testing::TempDir tmp;
  testing::CollectionSpec spec;
  spec.num_docs = 200;
  spec.vocabulary = 20;
  ASSERT_TRUE(
      testing::BuildIndex(testing::RandomDocuments(spec), tmp.path() + "/idx", spec.codec).ok());
  auto idx = index::Index::Open(tmp.path() + "/idx");
  ASSERT_TRUE(idx.ok()) << idx.status();
  std::vector<AnalyzedQuery> queries;
  for (int i = 0; i < 30; ++i) {
    AnalyzedQuery q;
    q.id = std::to_string(i);
    // Every third query has no term the index holds.
    q.terms = {i % 3 == 0 ? "absent" : "t" + std::to_string(i % 5), "missing"};
    queries.push_back(std::move(q));
  }
  auto all = SelectQueries(queries, **idx, {.part = SplitPart::kAll});
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), 20u);
  EXPECT_EQ((*all)[0].id, "1");
  EXPECT_EQ((*all)[1].id, "2");
  EXPECT_EQ((*all)[2].id, "4");
  auto limited = SelectQueries(queries, **idx, {.part = SplitPart::kAll, .limit = 3});
  ASSERT_TRUE(limited.ok());
  EXPECT_EQ(limited->size(), 3u);

  const QuerySelection eval{.part = SplitPart::kEval, .seed = 7, .train = 12, .eval = 5};
  auto chosen = SelectQueries(queries, **idx, eval);
  ASSERT_TRUE(chosen.ok()) << chosen.status();
  auto split = SplitQueries(20, 7, 12, 5);
  ASSERT_TRUE(split.ok());
  ASSERT_EQ(chosen->size(), 5u);
  for (size_t j = 0; j < 5; ++j) EXPECT_EQ((*chosen)[j].id, (*all)[split->eval[j]].id);
  QuerySelection train = eval;
  train.part = SplitPart::kTrain;
  train.limit = 4;
  auto trained = SelectQueries(queries, **idx, train);
  ASSERT_TRUE(trained.ok());
  ASSERT_EQ(trained->size(), 4u);
  EXPECT_EQ((*trained)[0].id, (*all)[split->train[0]].id);
  // A split larger than the pool.
  EXPECT_EQ(SelectQueries(queries, **idx, {.part = SplitPart::kEval, .train = 18, .eval = 5})
                .status()
                .code(),
            absl::StatusCode::kInvalidArgument);

  // From a query log: loaded with the index's analyzer, then selected alike.
  const std::string log = tmp.path() + "/queries.txt";
  std::ofstream(log) << "1:t1 missing\n2:absent\n3:T2 t3\n";
  auto from_file = SelectQueries(log, **idx, {.part = SplitPart::kAll});
  ASSERT_TRUE(from_file.ok()) << from_file.status();
  ASSERT_EQ(from_file->size(), 2u);
  EXPECT_EQ((*from_file)[1].id, "3");
  EXPECT_EQ((*from_file)[1].terms, (std::vector<std::string>{"t2", "t3"}));
  EXPECT_EQ(SelectQueries(tmp.path() + "/none.txt", **idx, {}).status().code(),
            absl::StatusCode::kNotFound);
}

TEST(QuerySetTest, MissingFileIsNotFound) {
  auto analyzer = SyntheticAnalyzer();
  EXPECT_EQ(LoadQuerySet("/nonexistent/q.txt", *analyzer).status().code(),
            absl::StatusCode::kNotFound);
}

// Every log of ../shared/data/queries loads with the right count and no leftover ids or priorities.
TEST(QuerySetDataTest, LoadsEverySharedQueryLog) {
  auto analyzer = SyntheticAnalyzer();
  const std::vector<std::pair<std::string, size_t>> logs = {
      {"queries/trec05-efficiency.txt", 50000},
      {"queries/trec06-efficiency.txt", 100000},
      {"queries/msmarco-passage-dev-small.txt", 6980},
      {"queries/million-query-2007-2009.txt", 60000}};
  for (const auto& [name, count] : logs) {
    const std::string path = testing::DataFile(name);
    if (path.empty()) GTEST_SKIP() << "shared data absent: " << name;
    auto queries = LoadQuerySet(path, *analyzer);
    ASSERT_TRUE(queries.ok()) << queries.status();
    EXPECT_EQ(queries->size(), count) << name;
    size_t with_terms = 0;
    for (const AnalyzedQuery& q : *queries) with_terms += q.terms.empty() ? 0 : 1;
    EXPECT_GT(with_terms, count * 99 / 100) << name;
  }
  auto mq = LoadQuerySet(testing::DataFile("queries/million-query-2007-2009.txt"), *analyzer);
  ASSERT_TRUE(mq.ok());
  EXPECT_EQ((*mq)[20000].id, "20001");
  EXPECT_EQ((*mq)[20000].text, "obama family tree");
}

}  // namespace
}  // namespace tandem::workload
