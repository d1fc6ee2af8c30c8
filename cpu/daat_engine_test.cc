#include "cpu/daat_engine.h"

#include <atomic>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cpu/cursor.h"
#include "cpu/reference_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::cpu {
namespace {

using index::Query;
using index::QueryMode;
using index::SearchContext;

// Same documents in the same order, scores equal (both engines add the same floats in the same
// order).
void ExpectSameHits(const index::SearchResult& got, const index::SearchResult& want,
                    const std::string& what) {
  ASSERT_EQ(got.hits.size(), want.hits.size()) << what;
  for (size_t i = 0; i < got.hits.size(); ++i) {
    EXPECT_EQ(got.hits[i].docid, want.hits[i].docid) << what << " rank " << i;
    EXPECT_FLOAT_EQ(got.hits[i].score, want.hits[i].score) << what << " rank " << i;
  }
  EXPECT_EQ(got.stats.executed_mode, want.stats.executed_mode) << what;
}

class DaatEngineTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    testing::CollectionSpec spec;
    spec.codec = GetParam();
    spec.num_docs = 3000;
    docs_ = testing::RandomDocuments(spec);
    ASSERT_TRUE(testing::BuildIndex(docs_, dir_.path() + "/idx", spec.codec).ok());
    auto index = index::Index::Open(dir_.path() + "/idx", {.verify_lists = true});
    ASSERT_TRUE(index.ok()) << index.status();
    index_ = *std::move(index);
    engine_ = *DaatEngine::Create(*index_);
    reference_ = std::make_unique<cpu::ReferenceEngine>(*index_);
  }

  Query MakeQuery(std::vector<std::string> terms, QueryMode mode, uint32_t k) {
    Query q;
    for (auto& t : terms) q.terms.push_back({t, 1.0f});
    q.mode = mode;
    q.k = k;
    return q;
  }

  void Compare(const Query& q, const std::string& what) {
    auto got = engine_->Search(q, SearchContext{});
    auto want = reference_->Search(q, SearchContext{});
    ASSERT_TRUE(got.ok()) << got.status();
    ASSERT_TRUE(want.ok()) << want.status();
    ExpectSameHits(*got, *want, what);
  }

  testing::TempDir dir_;
  std::vector<std::vector<std::string>> docs_;
  std::unique_ptr<index::Index> index_;
  std::unique_ptr<DaatEngine> engine_;
  std::unique_ptr<cpu::ReferenceEngine> reference_;
};

TEST_P(DaatEngineTest, RandomQueriesMatchReference) {
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<int> nterms(1, 5);
  // Skewed towards frequent terms so AND has results; some absent terms ("zz...").
  std::uniform_int_distribution<int> term(0, 120);
  for (int i = 0; i < 60; ++i) {
    std::vector<std::string> terms;
    const int n = nterms(rng);
    for (int j = 0; j < n; ++j) terms.push_back(absl::StrCat("t", term(rng) * term(rng) / 60));
    for (QueryMode mode : {QueryMode::kAnd, QueryMode::kOr, QueryMode::kAndOr}) {
      for (uint32_t k : {1u, 10u, 1000u}) {
        Compare(MakeQuery(terms, mode, k),
                absl::StrCat("query ", i, " mode ", index::QueryModeName(mode), " k ", k));
      }
    }
  }
}

TEST_P(DaatEngineTest, EdgeQueries) {
  for (QueryMode mode : {QueryMode::kAnd, QueryMode::kOr, QueryMode::kAndOr}) {
    for (uint32_t k : {1u, 10u, 1000u}) {
      const std::string m = absl::StrCat(index::QueryModeName(mode), " k ", k);
      Compare(MakeQuery({"t0"}, mode, k), "one frequent term " + m);
      Compare(MakeQuery({"t250"}, mode, k), "one rare term " + m);
      Compare(MakeQuery({"t1", "absent"}, mode, k), "absent term " + m);
      Compare(MakeQuery({"absent"}, mode, k), "only absent " + m);
      Compare(MakeQuery({"t3", "t3", "t5"}, mode, k), "repeated term " + m);
      Compare(MakeQuery({}, mode, k), "no terms " + m);
    }
  }
}

TEST_P(DaatEngineTest, RepeatedTermWeighsDouble) {
  Query once = MakeQuery({"t4"}, QueryMode::kOr, 5);
  Query twice = MakeQuery({"t4", "t4"}, QueryMode::kOr, 5);
  auto a = engine_->Search(once, {});
  auto b = engine_->Search(twice, {});
  ASSERT_TRUE(a.ok() && b.ok());
  ASSERT_FALSE(a->hits.empty());
  EXPECT_FLOAT_EQ(b->hits[0].score, 2 * a->hits[0].score);
}

TEST_P(DaatEngineTest, AndOrFallsBackOnlyWhenShort) {
  // t0 AND t1 has many matches: no fallback at k = 1; a rare pair falls back.
  auto r = engine_->Search(MakeQuery({"t0", "t1"}, QueryMode::kAndOr, 1), {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.executed_mode, QueryMode::kAnd);
  r = engine_->Search(MakeQuery({"t250", "t251"}, QueryMode::kAndOr, 10), {});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stats.executed_mode, QueryMode::kOr);
}

TEST_P(DaatEngineTest, NonDefaultBm25Parameters) {
  Query q = MakeQuery({"t2", "t7", "t30"}, QueryMode::kOr, 50);
  q.bm25 = {1.2f, 0.75f};
  Compare(q, "k1=1.2 b=0.75");
  q.bm25 = {0.0f, 0.0f};
  Compare(q, "k1=0 b=0");
}

TEST_P(DaatEngineTest, WeightsScaleScores) {
  Query q = MakeQuery({"t2", "t9"}, QueryMode::kOr, 20);
  q.terms[1].weight = 3.5f;
  Compare(q, "weighted");
}

TEST_P(DaatEngineTest, AndSkipsBlocks) {
  // "common" is in all 20,000 documents (157 blocks), "rare" in three: AND decodes at most the
  // three blocks the rare docIDs fall in, plus the rare list; OR decodes everything.
  std::vector<std::vector<std::string>> docs(20000, std::vector<std::string>{"common"});
  for (uint32_t d : {5u, 9000u, 19999u}) docs[d].push_back("rare");
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex(docs, dir.path() + "/i", GetParam()).ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok());
  auto engine = *DaatEngine::Create(**index);
  auto a = engine->Search(MakeQuery({"common", "rare"}, QueryMode::kAnd, 10), {});
  auto o = engine->Search(MakeQuery({"common", "rare"}, QueryMode::kOr, 10), {});
  ASSERT_TRUE(a.ok() && o.ok());
  ASSERT_EQ(a->hits.size(), 3u);
  EXPECT_EQ(a->stats.blocks_decoded, 1u + 3u);
  // Docs 5 and 9000 sit in full blocks; 19999 in the last block of 20000 - 156 * 128 = 32 postings.
  EXPECT_EQ(a->stats.postings_decoded, 3u + 2u * 128u + 32u);
  EXPECT_EQ(o->stats.postings_decoded, 20003u);
}

TEST_P(DaatEngineTest, InvalidQueries) {
  Query q = MakeQuery({"t1"}, QueryMode::kOr, 0);
  EXPECT_EQ(engine_->Search(q, {}).status().code(), absl::StatusCode::kInvalidArgument);
  q.k = index::kMaxK + 1;
  EXPECT_EQ(engine_->Search(q, {}).status().code(), absl::StatusCode::kInvalidArgument);
  q.k = 10;
  q.bm25.b = 1.5f;
  auto s = engine_->Search(q, {}).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("bm25.b"));
  q.bm25.b = 0.4f;
  q.terms[0].weight = -1.0f;
  EXPECT_EQ(engine_->Search(q, {}).status().code(), absl::StatusCode::kInvalidArgument);
  // Finite but huge weights would sum to inf and rank in docID order.
  q.terms[0].weight = 3.4e38f;
  EXPECT_EQ(engine_->Search(q, {}).status().code(), absl::StatusCode::kInvalidArgument);
  q.terms[0].weight = index::kMaxTermWeight;
  EXPECT_TRUE(engine_->Search(q, {}).ok());
}

TEST_P(DaatEngineTest, DeadlineAndCancellation) {
  Query q = MakeQuery({"t0", "t1", "t2"}, QueryMode::kOr, 10);
  SearchContext past;
  past.deadline = absl::Now() - absl::Seconds(1);
  EXPECT_EQ(engine_->Search(q, past).status().code(), absl::StatusCode::kDeadlineExceeded);
  std::atomic<bool> cancelled{true};
  SearchContext cancel;
  cancel.cancelled = &cancelled;
  EXPECT_EQ(engine_->Search(q, cancel).status().code(), absl::StatusCode::kCancelled);
}

TEST_P(DaatEngineTest, ConcurrentSearchesAgree) {
  Query q = MakeQuery({"t0", "t3", "t8"}, QueryMode::kOr, 100);
  auto want = engine_->Search(q, {});
  ASSERT_TRUE(want.ok());
  std::vector<std::thread> threads;
  std::atomic<int> mismatches{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) {
        auto got = engine_->Search(q, {});
        if (!got.ok() || got->hits != want->hits) ++mismatches;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST_P(DaatEngineTest, CursorNextGeqVisitsEveryPosting) {
  auto info = index_->Lookup("t0");
  ASSERT_TRUE(info.has_value());
  auto list = index_->postings(*info);
  ASSERT_TRUE(list.ok());
  std::vector<uint32_t> all;
  for (Cursor c(*list, index_->codec(), nullptr); c.docid() != Cursor::kEnd; c.next()) {
    all.push_back(c.docid());
  }
  ASSERT_EQ(all.size(), info->df);
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    const uint32_t target = rng() % (index_->num_docs() + 10);
    Cursor c(*list, index_->codec(), nullptr);
    c.next_geq(target);
    auto it = std::lower_bound(all.begin(), all.end(), target);
    EXPECT_EQ(c.docid(), it == all.end() ? Cursor::kEnd : *it) << "target " << target;
  }
}

// MaxScore against the exhaustive union: identical hits and bit-identical scores, for weighted,
// repeated and absent terms, other BM25 parameters, every k, OR and AND+OR; and it must prune.
TEST_P(DaatEngineTest, MaxScoreEqualsExhaustiveOr) {
  auto exhaustive = *DaatEngine::Create(*index_, {.or_algorithm = OrAlgorithm::kExhaustive});
  std::mt19937_64 rng(11);
  std::uniform_int_distribution<int> nterms(1, 7);
  std::uniform_int_distribution<int> term(0, 130);
  std::uniform_real_distribution<float> weight(0.2f, 4.0f);
  uint64_t scored_maxscore = 0, scored_exhaustive = 0;
  for (int i = 0; i < 80; ++i) {
    Query q;
    const int n = nterms(rng);
    for (int j = 0; j < n; ++j) {
      q.terms.push_back(
          {absl::StrCat("t", term(rng) * term(rng) / 60), i % 3 == 0 ? weight(rng) : 1.0f});
    }
    if (i % 4 == 1) q.terms.push_back(q.terms[0]);  // a repeated term
    if (i % 5 == 2) q.terms.push_back({"zz-absent", 1.0f});
    if (i % 7 == 3) q.bm25 = {.k1 = 1.2f, .b = 0.75f};  // not the index's: bounds from idf alone
    for (uint32_t k : {1u, 10u, 100u, 1000u}) {
      for (QueryMode mode : {QueryMode::kOr, QueryMode::kAndOr}) {
        q.k = k;
        q.mode = mode;
        const std::string what =
            absl::StrCat("query ", i, " k=", k, " ", index::QueryModeName(mode));
        auto got = engine_->Search(q, {});
        auto want = exhaustive->Search(q, {});
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_TRUE(want.ok()) << want.status();
        EXPECT_EQ(got->hits, want->hits) << what;
        EXPECT_EQ(got->stats.executed_mode, want->stats.executed_mode) << what;
        if (mode == QueryMode::kOr) {
          scored_maxscore += got->stats.documents_scored;
          scored_exhaustive += want->stats.documents_scored;
        }
      }
    }
  }
  EXPECT_LT(scored_maxscore, scored_exhaustive / 2) << "MaxScore should skip most documents";
}

// Many documents with equal scores: the k-th score is tied, and the lower docIDs must win exactly
// as in the exhaustive union.
TEST_P(DaatEngineTest, MaxScoreKeepsDocIdTieOrder) {
  std::vector<std::vector<std::string>> docs;
  for (int d = 0; d < 3000; ++d) {
    switch (d % 3) {
      case 0:
        docs.push_back({"a", "x"});
        break;
      case 1:
        docs.push_back({"b", "x"});
        break;
      default:
        docs.push_back({"a", "b"});
        break;
    }
  }
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex(docs, dir.path() + "/i", GetParam()).ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok());
  auto maxscore = *DaatEngine::Create(**index);
  auto exhaustive = *DaatEngine::Create(**index, {.or_algorithm = OrAlgorithm::kExhaustive});
  for (uint32_t k : {1u, 7u, 999u, 1000u, 1001u, 2500u}) {
    for (const auto& terms : std::vector<std::vector<std::string>>{{"a", "b"}, {"x", "a"}, {"a"}}) {
      Query q = MakeQuery(terms, QueryMode::kOr, k);
      auto got = maxscore->Search(q, {});
      auto want = exhaustive->Search(q, {});
      ASSERT_TRUE(got.ok() && want.ok());
      EXPECT_EQ(got->hits, want->hits) << "k=" << k << " " << terms[0];
    }
  }
}

TEST(OrAlgorithmTest, Names) {
  EXPECT_EQ(*ParseOrAlgorithm("maxscore"), OrAlgorithm::kMaxScore);
  EXPECT_EQ(*ParseOrAlgorithm("exhaustive"), OrAlgorithm::kExhaustive);
  EXPECT_EQ(OrAlgorithmName(OrAlgorithm::kMaxScore), "maxscore");
  EXPECT_EQ(OrAlgorithmName(OrAlgorithm::kExhaustive), "exhaustive");
  const auto bad = ParseOrAlgorithm("wand");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr("'wand'"));
}

// Every registered codec, named by it ("Codecs/DaatEngineTest.X/seglrc").
INSTANTIATE_TEST_SUITE_P(Codecs, DaatEngineTest, ::testing::ValuesIn(index::BlockCodecNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tandem::cpu
