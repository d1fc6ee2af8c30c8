#include "cpu/daat_engine.h"

#include <atomic>
#include <functional>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cpu/cursor.h"
#include "cpu/reference_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/index.h"
#include "index/prepared_query.h"
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

// Queries of more terms than the engine keeps per-term scratch for on the stack (8), in every
// mode and with every OR algorithm and both ANDs.
TEST_P(DaatEngineTest, ManyTermQueriesMatchReference) {
  for (int n : {8, 9, 12, 20}) {
    std::vector<std::string> terms;
    for (int j = 0; j < n; ++j) terms.push_back(absl::StrCat("t", j < 3 ? j : 3 * j));
    for (OrAlgorithm algorithm : AllOrAlgorithms()) {
      for (bool block_max_and : {false, true}) {
        auto engine = *DaatEngine::Create(
            *index_, {.or_algorithm = algorithm, .block_max_and = block_max_and});
        for (QueryMode mode : {QueryMode::kAnd, QueryMode::kOr, QueryMode::kAndOr}) {
          for (uint32_t k : {1u, 10u, 1000u}) {
            const Query q = MakeQuery(terms, mode, k);
            auto got = engine->Search(q, SearchContext{});
            auto want = reference_->Search(q, SearchContext{});
            ASSERT_TRUE(got.ok()) << got.status();
            ASSERT_TRUE(want.ok()) << want.status();
            ExpectSameHits(*got, *want,
                           absl::StrCat(n, " terms, ", OrAlgorithmName(algorithm), ", ",
                                        index::QueryModeName(mode), " k ", k));
          }
        }
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
  auto engine = *DaatEngine::Create(**index, {.or_algorithm = OrAlgorithm::kMaxScore});
  auto a = engine->Search(MakeQuery({"common", "rare"}, QueryMode::kAnd, 10), {});
  auto o = engine->Search(MakeQuery({"common", "rare"}, QueryMode::kOr, 10), {});
  ASSERT_TRUE(a.ok() && o.ok());
  ASSERT_EQ(a->hits.size(), 3u);
  EXPECT_EQ(a->stats.blocks_decoded, 1u + 3u);
  // Docs 5 and 9000 sit in full blocks; 19999 in the last block of 20000 - 156 * 128 = 32 postings.
  EXPECT_EQ(a->stats.postings_decoded, 3u + 2u * 128u + 32u);
  EXPECT_EQ(o->stats.postings_decoded, 20003u);
}

TEST_P(DaatEngineTest, ABatchNeedsOneContextOrOnePerQuery) {
  const std::vector<Query> queries = {MakeQuery({"t1"}, QueryMode::kOr, 5),
                                      MakeQuery({"t2"}, QueryMode::kOr, 5)};
  const std::vector<index::SearchContext> three(3);
  for (const auto& answer : engine_->SearchBatch(queries, three)) {
    EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(answer.status().message()), ::testing::HasSubstr("one per query"));
  }
  auto prepared = index::PreparedQuery::Prepare(*index_, queries[0]);
  ASSERT_TRUE(prepared.ok()) << prepared.status();
  const std::vector<const index::PreparedQuery*> twice = {&*prepared, &*prepared};
  for (const auto& answer : engine_->SearchBatch(twice, three)) {
    EXPECT_EQ(answer.status().code(), absl::StatusCode::kInvalidArgument);
  }
  // One context for all, or one per query: every query is answered.
  for (size_t contexts : {1, 2}) {
    const auto answers = engine_->SearchBatch(twice, std::vector<index::SearchContext>(contexts));
    ASSERT_EQ(answers.size(), 2u);
    for (const auto& answer : answers) EXPECT_TRUE(answer.ok()) << answer.status();
  }
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

// One cursor moved by increasing targets, as AND and MaxScore move it: steps of 0 to 20 postings
// land at every position of a block, its last ones included (where next_geq's scan of kScan
// docIDs runs past the block), and longer jumps cross blocks; targets between two docIDs too.
TEST_P(DaatEngineTest, CursorNextGeqFollowsIncreasingTargets) {
  uint32_t most_blocks = 0;
  for (const char* term : {"t0", "t1", "t5", "t40"}) {
    auto info = index_->Lookup(term);
    ASSERT_TRUE(info.has_value()) << term;
    auto list = index_->postings(*info);
    ASSERT_TRUE(list.ok());
    most_blocks = std::max(most_blocks, list->num_blocks());
    std::vector<uint32_t> all;
    for (Cursor c(*list, index_->codec(), nullptr); c.docid() != Cursor::kEnd; c.next()) {
      all.push_back(c.docid());
    }
    for (uint64_t seed = 0; seed < 8; ++seed) {
      std::mt19937 rng(static_cast<uint32_t>(seed));
      Cursor c(*list, index_->codec(), nullptr);
      size_t want = 0;  // index in `all` of the posting the cursor must stand on
      while (want < all.size()) {
        const uint32_t step = seed < 4 ? rng() % 21 : rng() % 400;
        const size_t to = std::min(all.size() - 1, want + step);
        // Half the targets fall just after the previous docID, i.e. between two postings.
        const uint32_t target = (rng() % 2 == 0 || to == 0) ? all[to] : all[to - 1] + 1;
        c.next_geq(target);
        want = static_cast<size_t>(std::lower_bound(all.begin(), all.end(), target) - all.begin());
        ASSERT_EQ(c.docid(), all[want]) << term << " seed " << seed << " target " << target;
        if (rng() % 3 == 0) {
          c.next();
          ++want;
          ASSERT_EQ(c.docid(), want < all.size() ? all[want] : Cursor::kEnd);
        }
      }
      c.next_geq(all.back() + 1);
      EXPECT_EQ(c.docid(), Cursor::kEnd);
      ASSERT_TRUE(c.status().ok());
    }
  }
  EXPECT_GE(most_blocks, 4u);  // jumps over blocks were taken
}

// The algorithms that prune, against the exhaustive union.
const OrAlgorithm kPruning[] = {OrAlgorithm::kMaxScore, OrAlgorithm::kBlockMaxMaxScore,
                                OrAlgorithm::kWand, OrAlgorithm::kBlockMaxWand};

// Random queries: 1-7 terms drawn with a skew towards the frequent ones, weights, repeated and
// absent terms, and other BM25 parameters (whose bounds come from idf alone, without block maxima).
std::vector<Query> RandomQueries(int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int> nterms(1, 7);
  std::uniform_int_distribution<int> term(0, 130);
  std::uniform_real_distribution<float> weight(0.2f, 4.0f);
  std::vector<Query> queries;
  for (int i = 0; i < count; ++i) {
    Query q;
    const int n = nterms(rng);
    for (int j = 0; j < n; ++j) {
      q.terms.push_back(
          {absl::StrCat("t", term(rng) * term(rng) / 60), i % 3 == 0 ? weight(rng) : 1.0f});
    }
    if (i % 4 == 1) q.terms.push_back(q.terms[0]);  // a repeated term
    if (i % 5 == 2) q.terms.push_back({"zz-absent", 1.0f});
    if (i % 7 == 3) q.bm25 = {.k1 = 1.2f, .b = 0.75f};  // not the index's: bounds from idf alone
    queries.push_back(std::move(q));
  }
  return queries;
}

// A query prepared once (merged, validated and looked up, as the node does at admission) answers
// exactly as Search from the plain query: random queries with weights, repeated and absent terms
// and other BM25 parameters, every mode and k. A query prepared against another index is refused
// with a clear error, and an invalid query is refused when it is prepared.
TEST_P(DaatEngineTest, SearchFromAPreparedQuery) {
  for (const Query& base : RandomQueries(40, 23)) {
    for (QueryMode mode : {QueryMode::kAnd, QueryMode::kOr, QueryMode::kAndOr}) {
      for (uint32_t k : {1u, 10u, 1000u}) {
        Query q = base;
        q.mode = mode;
        q.k = k;
        absl::StatusOr<index::PreparedQuery> prepared = index::PreparedQuery::Prepare(*index_, q);
        ASSERT_TRUE(prepared.ok()) << prepared.status();
        auto got = engine_->Search(*prepared, SearchContext{});
        auto want = reference_->Search(q, SearchContext{});
        ASSERT_TRUE(got.ok()) << got.status();
        ASSERT_TRUE(want.ok()) << want.status();
        ExpectSameHits(*got, *want, absl::StrCat(index::QueryModeName(mode), " k ", k));
      }
    }
  }
  Query q = MakeQuery({"t1", "t2"}, QueryMode::kOr, 10);
  ASSERT_TRUE(testing::BuildIndex({{"t1", "t2"}}, dir_.path() + "/other", GetParam()).ok());
  auto other = index::Index::Open(dir_.path() + "/other");
  ASSERT_TRUE(other.ok()) << other.status();
  absl::StatusOr<index::PreparedQuery> foreign = index::PreparedQuery::Prepare(**other, q);
  ASSERT_TRUE(foreign.ok()) << foreign.status();
  auto r = engine_->Search(*foreign, SearchContext{});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(r.status().message()), ::testing::HasSubstr("another index"));
  Query bad = q;
  bad.k = 0;
  EXPECT_EQ(index::PreparedQuery::Prepare(*index_, bad).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(engine_->Search(bad, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// Each pruning algorithm against the exhaustive union: identical hits and bit-identical scores for
// every k, OR and AND+OR; and each must prune. Block-max ranked AND against plain AND likewise.
TEST_P(DaatEngineTest, PruningEqualsExhaustive) {
  auto exhaustive = *DaatEngine::Create(
      *index_, {.or_algorithm = OrAlgorithm::kExhaustive, .block_max_and = false});
  const std::vector<Query> queries = RandomQueries(80, 11);
  for (OrAlgorithm algorithm : kPruning) {
    auto engine = *DaatEngine::Create(*index_, {.or_algorithm = algorithm});
    uint64_t scored = 0, scored_exhaustive = 0;
    for (size_t i = 0; i < queries.size(); ++i) {
      Query q = queries[i];
      for (uint32_t k : {1u, 10u, 100u, 1000u}) {
        for (QueryMode mode : {QueryMode::kOr, QueryMode::kAndOr, QueryMode::kAnd}) {
          q.k = k;
          q.mode = mode;
          const std::string what = absl::StrCat(OrAlgorithmName(algorithm), " query ", i, " k=", k,
                                                " ", index::QueryModeName(mode));
          auto got = engine->Search(q, {});
          auto want = exhaustive->Search(q, {});
          ASSERT_TRUE(got.ok()) << got.status();
          ASSERT_TRUE(want.ok()) << want.status();
          EXPECT_EQ(got->hits, want->hits) << what;
          EXPECT_EQ(got->stats.executed_mode, want->stats.executed_mode) << what;
          if (mode == QueryMode::kOr) {
            scored += got->stats.documents_scored;
            scored_exhaustive += want->stats.documents_scored;
          }
        }
      }
    }
    EXPECT_LT(scored, scored_exhaustive / 2)
        << OrAlgorithmName(algorithm) << " should skip most documents";
  }
}

// Filtered queries: for filters of every density (none, 1%, 10%, 50%, runs, all), every OR
// algorithm, mode and k gives the reference engine's hits, which are the unfiltered ranking's
// allowed documents: the filter never changes a score. A filter over another document count is
// INVALID_ARGUMENT.
TEST_P(DaatEngineTest, FiltersKeepTheTopKOfTheAllowedDocuments) {
  std::mt19937_64 rng(21);
  const uint32_t n = index_->num_docs();
  std::vector<std::shared_ptr<const filter::Bitmap>> filters;
  for (double density : {0.0, 0.01, 0.1, 0.5, 1.0}) {
    std::vector<uint32_t> rows;
    for (uint32_t d = 0; d < n; ++d) {
      if (double(rng() % 10000) < density * 10000) rows.push_back(d);
    }
    filters.push_back(
        std::make_shared<filter::Bitmap>(*filter::FromRows(filter::BitmapCodec::kPlwah, n, rows)));
  }
  std::vector<uint32_t> runs;  // long runs: fills in the bitmap
  for (uint32_t d = 0; d < n; ++d) {
    if ((d / 400) % 3 == 1) runs.push_back(d);
  }
  filters.push_back(
      std::make_shared<filter::Bitmap>(*filter::FromRows(filter::BitmapCodec::kWah, n, runs)));
  const std::vector<Query> queries = RandomQueries(15, 5);
  // The whole unfiltered ranking of each query in OR and in AND.
  std::vector<std::vector<std::vector<index::Hit>>> ranking(queries.size());
  for (size_t i = 0; i < queries.size(); ++i) {
    for (QueryMode mode : {QueryMode::kOr, QueryMode::kAnd}) {
      Query all = queries[i];
      all.mode = mode;
      all.k = index::kMaxK;
      auto hits = reference_->Search(all, {});
      ASSERT_TRUE(hits.ok());
      ranking[i].push_back(hits->hits);
    }
  }
  for (OrAlgorithm algorithm :
       {OrAlgorithm::kExhaustive, OrAlgorithm::kMaxScore, OrAlgorithm::kBlockMaxMaxScore,
        OrAlgorithm::kWand, OrAlgorithm::kBlockMaxWand}) {
    auto engine = *DaatEngine::Create(*index_, {.or_algorithm = algorithm});
    for (size_t f = 0; f < filters.size(); ++f) {
      for (size_t i = 0; i < queries.size(); ++i) {
        for (uint32_t k : {1u, 10u, 1000u}) {
          for (QueryMode mode : {QueryMode::kOr, QueryMode::kAndOr, QueryMode::kAnd}) {
            Query q = queries[i];
            q.k = k;
            q.mode = mode;
            q.filter = filters[f];
            const std::string what =
                absl::StrCat(OrAlgorithmName(algorithm), " filter ", f, " query ", i, " k=", k, " ",
                             index::QueryModeName(mode));
            auto got = engine->Search(q, {});
            auto want = reference_->Search(q, {});
            ASSERT_TRUE(got.ok()) << got.status();
            ASSERT_TRUE(want.ok()) << want.status();
            EXPECT_EQ(got->hits, want->hits) << what;
            if (mode == QueryMode::kAndOr) continue;  // its fallback depends on the filtered count
            // The unfiltered ranking, all of it, restricted to the filter: the same hits.
            std::vector<index::Hit> expected;
            const std::vector<uint32_t> allowed = filters[f]->Rows();
            for (const index::Hit& h : ranking[i][mode == QueryMode::kOr ? 0 : 1]) {
              if (std::binary_search(allowed.begin(), allowed.end(), h.docid) &&
                  expected.size() < k) {
                expected.push_back(h);
              }
            }
            EXPECT_EQ(got->hits, expected) << what;
          }
        }
      }
    }
  }
  Query q = MakeQuery({"t1"}, QueryMode::kOr, 10);
  q.filter = std::make_shared<filter::Bitmap>(filter::AllRows(filter::BitmapCodec::kWah, n + 1));
  EXPECT_THAT(engine_->Search(q, {}).status().message(),
              ::testing::HasSubstr("the filter is over"));
  EXPECT_EQ(reference_->Search(q, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// Block-max ranked AND skips candidates on the skip table alone: on two long lists with k = 1 it
// decodes fewer blocks than plain AND and gives the same hits.
TEST_P(DaatEngineTest, BlockMaxAndSkipsBlocks) {
  // "a" is in every document, "b" in every other; one document per 1,000 repeats "a" and "b"
  // (high scores), so after the first the other blocks cannot reach the k-th score.
  std::vector<std::vector<std::string>> docs;
  for (int d = 0; d < 40000; ++d) {
    std::vector<std::string> doc = {"a", "filler", "filler", "filler"};
    if (d % 2 == 0) doc.push_back("b");
    if (d % 1000 == 500) doc.insert(doc.end(), {"a", "a", "b", "b", "b"});
    docs.push_back(std::move(doc));
  }
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex(docs, dir.path() + "/i", GetParam()).ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok());
  auto block_max = *DaatEngine::Create(**index);
  auto plain = *DaatEngine::Create(**index, {.block_max_and = false});
  for (uint32_t k : {1u, 5u, 40u, 100u}) {
    Query q = MakeQuery({"a", "b"}, QueryMode::kAnd, k);
    auto got = block_max->Search(q, {});
    auto want = plain->Search(q, {});
    ASSERT_TRUE(got.ok() && want.ok());
    EXPECT_EQ(got->hits, want->hits) << "k=" << k;
    if (k <= 5) {  // with 40 high-scoring documents, only the last few blocks skip at k = 40
      EXPECT_GT(got->stats.block_max_skips, 0u) << "k=" << k;
      EXPECT_LT(got->stats.blocks_decoded, want->stats.blocks_decoded / 2) << "k=" << k;
    }
  }
}

// An unsafe bound must change some answer: the tests above would catch a pruning bug that
// underestimates scores.
TEST_P(DaatEngineTest, AnUnsafeBoundChangesTheAnswers) {
  auto exhaustive = *DaatEngine::Create(
      *index_, {.or_algorithm = OrAlgorithm::kExhaustive, .block_max_and = false});
  const std::vector<Query> queries = RandomQueries(80, 11);
  for (OrAlgorithm algorithm : kPruning) {
    auto unsafe =
        *DaatEngine::Create(*index_, {.or_algorithm = algorithm, .bound_scale_for_testing = 0.6f});
    int or_differs = 0, and_differs = 0;
    for (Query q : queries) {
      q.k = 10;
      for (QueryMode mode : {QueryMode::kOr, QueryMode::kAnd}) {
        q.mode = mode;
        auto got = unsafe->Search(q, {});
        auto want = exhaustive->Search(q, {});
        ASSERT_TRUE(got.ok() && want.ok());
        if (got->hits != want->hits) ++(mode == QueryMode::kOr ? or_differs : and_differs);
      }
    }
    EXPECT_GT(or_differs, 0) << OrAlgorithmName(algorithm);
    EXPECT_GT(and_differs, 0) << "block-max AND";
  }
}

// Many documents with equal scores: the k-th score is tied, and the lower docIDs must win exactly
// as in the exhaustive union.
TEST_P(DaatEngineTest, PruningKeepsDocIdTieOrder) {
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
  auto exhaustive = *DaatEngine::Create(
      **index, {.or_algorithm = OrAlgorithm::kExhaustive, .block_max_and = false});
  for (OrAlgorithm algorithm : kPruning) {
    auto engine = *DaatEngine::Create(**index, {.or_algorithm = algorithm});
    for (uint32_t k : {1u, 7u, 999u, 1000u, 1001u, 2500u}) {
      for (const auto& terms :
           std::vector<std::vector<std::string>>{{"a", "b"}, {"x", "a"}, {"a"}, {"a", "b", "x"}}) {
        for (QueryMode mode : {QueryMode::kOr, QueryMode::kAnd}) {
          Query q = MakeQuery(terms, mode, k);
          auto got = engine->Search(q, {});
          auto want = exhaustive->Search(q, {});
          ASSERT_TRUE(got.ok() && want.ok());
          EXPECT_EQ(got->hits, want->hits) << OrAlgorithmName(algorithm) << " k=" << k << " "
                                           << terms[0] << " " << index::QueryModeName(mode);
        }
      }
    }
  }
}

// Cursor::block_max_next_geq moves without decoding and agrees with the skip table.
TEST_P(DaatEngineTest, CursorShallowMovesReadTheSkipTable) {
  std::vector<std::vector<std::string>> docs(5000, std::vector<std::string>{"x"});
  for (int d = 0; d < 5000; d += 3) docs[d].push_back("y");
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex(docs, dir.path() + "/i", GetParam()).ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok());
  auto list = (*index)->postings(*(*index)->Lookup("y"));
  ASSERT_TRUE(list.ok());
  index::QueryStats stats;
  Cursor c(*list, (*index)->codec(), &stats);
  const uint64_t decoded = stats.blocks_decoded;
  uint32_t reach = 0;  // the shallow position never moves back
  for (uint32_t target : {0u, 383u, 384u, 385u, 2000u, 2000u, 1000u, 4998u}) {
    c.block_max_next_geq(target);
    reach = std::max(reach, target);
    uint32_t b = 0;
    while (list->last_docid(b) < reach) ++b;
    EXPECT_EQ(c.block_max_docid(), list->last_docid(b)) << target;
    EXPECT_EQ(c.block_max(), list->block_max(b)) << target;
  }
  EXPECT_EQ(stats.blocks_decoded, decoded);
  c.block_max_next_geq(5000);
  EXPECT_EQ(c.block_max_docid(), Cursor::kEnd);
  EXPECT_EQ(c.block_max(), 0.0f);
  // A real move after shallow ones lands where next_geq always lands.
  Cursor d(*list, (*index)->codec(), &stats);
  d.block_max_next_geq(3000);
  d.next_geq(1500);
  EXPECT_EQ(d.docid(), 1500u);
  d.block_max_next_geq(4000);
  d.next_geq(4001);
  EXPECT_EQ(d.docid(), 4002u);
}

TEST(OrAlgorithmTest, Names) {
  for (OrAlgorithm a : AllOrAlgorithms()) EXPECT_EQ(*ParseOrAlgorithm(OrAlgorithmName(a)), a);
  EXPECT_EQ(AllOrAlgorithms().size(), 5u);
  EXPECT_EQ(*ParseOrAlgorithm("block-max-wand"), OrAlgorithm::kBlockMaxWand);
  EXPECT_EQ(OrAlgorithmName(OrAlgorithm::kMaxScore), "maxscore");
  const auto bad = ParseOrAlgorithm("bmw");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()),
              ::testing::AllOf(::testing::HasSubstr("'bmw'"), ::testing::HasSubstr("wand")));
}

// Every registered codec, named by it ("Codecs/DaatEngineTest.X/seglrc").
INSTANTIATE_TEST_SUITE_P(Codecs, DaatEngineTest, ::testing::ValuesIn(index::BlockCodecNames()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace tandem::cpu
