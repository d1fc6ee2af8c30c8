#include "workload/trec_eval.h"

#include <cmath>
#include <fstream>

#include "gtest/gtest.h"
#include "tests/test_collection.h"

namespace tandem::workload {
namespace {

TEST(TrecEvalTest, HandComputedMeasures) {
  // Relevant: a (grade 2), b (1), c (1, never retrieved). Run: a, x, b.
  std::map<std::string, int> j = {{"a", 2}, {"b", 1}, {"c", 1}, {"n", 0}};
  QueryMeasures m = Evaluate(j, {{"x", 0.9f}, {"a", 1.0f}, {"b", 0.5f}});
  const double dcg = 2 / std::log2(2) + 1 / std::log2(4);
  const double ideal = 2 / std::log2(2) + 1 / std::log2(3) + 1 / std::log2(4);
  EXPECT_NEAR(m.ndcg10, dcg / ideal, 1e-12);
  EXPECT_NEAR(m.average_precision, (1.0 + 2.0 / 3) / 3, 1e-12);
  EXPECT_NEAR(m.recall100, 2.0 / 3, 1e-12);
}

TEST(TrecEvalTest, TiesRankByDocidDescendingLikeTrecEval) {
  std::map<std::string, int> j = {{"a", 1}};
  // Equal scores: trec_eval puts "b" before "a", so the relevant doc is at rank 2.
  QueryMeasures m = Evaluate(j, {{"a", 1.0f}, {"b", 1.0f}});
  EXPECT_NEAR(m.average_precision, 0.5, 1e-12);
}

TEST(TrecEvalTest, MissingRunsCountAsZero) {
  Qrels q = {{"1", {{"a", 1}}}, {"2", {{"b", 1}}}, {"3", {{"z", 0}}}};
  Measures m = EvaluateAll(q, {{"1", {{"a", 1.0f}}}});
  EXPECT_EQ(m.queries, 2);  // query 3 has no relevant document
  EXPECT_NEAR(m.ndcg10, 0.5, 1e-12);
}

TEST(TrecEvalTest, LoadsEveryQrelsAndTopicFormat) {
  testing::TempDir dir;
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir.path() + "/" + name) << text;
    return dir.path() + "/" + name;
  };
  auto trec = LoadQrels(write("trec", "1 0 d1 2\n1 0 d2 0\n"));
  ASSERT_TRUE(trec.ok());
  EXPECT_EQ((*trec)["1"]["d1"], 2);
  auto three = LoadQrels(write("three", "1 184 2\r\n1 29 -1\r\n"));
  ASSERT_TRUE(three.ok());
  EXPECT_EQ((*three)["1"]["29"], -1);
  auto cisi = LoadQrels(write("cisi", "     1     28\t0\t0.000000\n"));
  ASSERT_TRUE(cisi.ok());
  EXPECT_EQ((*cisi)["1"]["28"], 1);
  auto npl = LoadQrels(write("npl", "1\n 12 13\n 14\n   /\n2\n 5\n   /\n"));
  ASSERT_TRUE(npl.ok());
  EXPECT_EQ((*npl)["1"].size(), 3u);
  EXPECT_EQ((*npl)["2"].count("5"), 1u);
  EXPECT_FALSE(LoadQrels(write("bad", "what is this\n")).ok());
  EXPECT_EQ(LoadQrels(dir.path() + "/missing").status().code(), absl::StatusCode::kNotFound);

  auto tsv = LoadTopics(write("q.tsv", "7\tfirst query\n9\tsecond\n"));
  ASSERT_TRUE(tsv.ok());
  EXPECT_EQ((*tsv)[1].id, "9");
  auto colon = LoadTopics(write("q.txt", "1:hello world\n"));
  ASSERT_TRUE(colon.ok());
  EXPECT_EQ((*colon)[0].text, "hello world");
  auto smart = LoadTopics(write("q.smart", ".I 001\n.W\nline one\nline two\n.I 004\n.W\nthird\n"),
                          TopicIds::kOrdinal);
  ASSERT_TRUE(smart.ok());
  ASSERT_EQ(smart->size(), 2u);
  EXPECT_EQ((*smart)[1].id, "2");
  EXPECT_EQ((*smart)[0].text, "line one line two");
  auto nplq = LoadTopics(write("q.npl", "1\nFIRST QUERY\n/\n2\nSECOND\n/\n"));
  ASSERT_TRUE(nplq.ok());
  EXPECT_EQ((*nplq)[1].text, "SECOND");
}

}  // namespace
}  // namespace tandem::workload
