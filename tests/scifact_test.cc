// BM25 quality on BEIR SciFact against Anserini's published figure (nDCG@10 0.6789, R@100 0.9253,
// "flat" index, k1 = 0.9, b = 0.4), and CPU engine = reference scorer on real text. Skips when
// ../shared/data is absent.
#include <map>

#include "cpu/daat_engine.h"
#include "cpu/reference_engine.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index_builder/document_reader.h"
#include "index_builder/inverter.h"
#include "tests/data_dir.h"
#include "tests/test_collection.h"
#include "workload/trec_eval.h"

namespace tandem {
namespace {

class SciFactTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    corpus_ = testing::DataFile("beir-scifact/corpus.jsonl");
    if (corpus_.empty()) return;
    tmp_ = new testing::TempDir();
    auto reader = index_builder::OpenDocumentReader("beir", corpus_, {});
    ASSERT_TRUE(reader.ok()) << reader.status();
    index_builder::InverterOptions options;
    options.threads = 2;
    auto summary = index_builder::BuildIndex(**reader, tmp_->path() + "/scifact", {}, options);
    ASSERT_TRUE(summary.ok()) << summary.status();
    auto idx = index::Index::Open(tmp_->path() + "/scifact");
    ASSERT_TRUE(idx.ok()) << idx.status();
    index_ = idx->release();
  }
  static void TearDownTestSuite() {
    delete index_;
    delete tmp_;
  }
  void SetUp() override {
    if (corpus_.empty()) GTEST_SKIP() << "BEIR SciFact not found under " << testing::DataDir();
    ASSERT_NE(index_, nullptr);
  }

  static index::Query Analyzed(const std::string& text, index::QueryMode mode, uint32_t k) {
    index::Query q;
    q.mode = mode;
    q.k = k;
    std::vector<std::string> terms;
    index_->analyzer().Analyze(text, &terms);
    for (auto& t : terms) q.terms.push_back({t, 1.0f});
    return q;
  }

  static inline std::string corpus_;
  static inline testing::TempDir* tmp_ = nullptr;
  static inline index::Index* index_ = nullptr;
};

TEST_F(SciFactTest, Bm25MatchesAnserini) {
  EXPECT_EQ(index_->num_docs(), 5183u);
  auto topics = workload::LoadTopics(testing::DataFile("beir-scifact/queries.test.tsv"));
  auto qrels = workload::LoadQrels(testing::DataFile("beir-scifact/qrels.test.trec"));
  ASSERT_TRUE(topics.ok() && qrels.ok());
  auto engine = *cpu::DaatEngine::Create(*index_);
  std::map<std::string, std::vector<workload::RankedDoc>> runs;
  for (const auto& t : *topics) {
    auto r = engine->Search(Analyzed(t.text, index::QueryMode::kOr, 1000), {});
    ASSERT_TRUE(r.ok()) << r.status();
    for (const auto& h : r->hits)
      runs[t.id].push_back({std::string(index_->external_id(h.docid)), h.score});
  }
  workload::Measures m = workload::EvaluateAll(*qrels, runs);
  EXPECT_EQ(m.queries, 300);
  EXPECT_GE(m.ndcg10, 0.670);
  EXPECT_NEAR(m.ndcg10, 0.6789, 0.01);
  EXPECT_NEAR(m.recall100, 0.9253, 0.01);
}

TEST_F(SciFactTest, CpuEngineEqualsReferenceOnRealQueries) {
  auto topics = workload::LoadTopics(testing::DataFile("beir-scifact/queries.test.tsv"));
  ASSERT_TRUE(topics.ok());
  auto engine = *cpu::DaatEngine::Create(*index_);
  cpu::ReferenceEngine reference(*index_);
  for (size_t i = 0; i < topics->size(); i += 5) {
    for (auto mode : {index::QueryMode::kAnd, index::QueryMode::kOr, index::QueryMode::kAndOr}) {
      for (uint32_t k : {1u, 10u, 1000u}) {
        index::Query q = Analyzed((*topics)[i].text, mode, k);
        auto got = engine->Search(q, {});
        auto want = reference.Search(q, {});
        ASSERT_TRUE(got.ok() && want.ok());
        ASSERT_EQ(got->hits, want->hits)
            << "topic " << (*topics)[i].id << " mode " << index::QueryModeName(mode) << " k " << k;
      }
    }
  }
}

}  // namespace
}  // namespace tandem
