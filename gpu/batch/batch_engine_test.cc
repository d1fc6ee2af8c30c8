// The GPU engine's batch path (GpuEngine::SearchBatch; Ao et al. 2011) against the CPU engine:
// batches of queries of every mode and k, with absent, repeated and weighted terms, empty queries,
// queries the batch path does not take (non-default BM25, k over 1,000, more than 16 terms) and
// invalid ones mixed in, over a collection large enough for several OR ranges, for every search
// range (BS, LR, HS16, HS32, HS256) and both codecs: the same hits in the same order with bit-equal
// scores and the same executed mode. Also batches split to fit a small context, expired contexts,
// and concurrent callers. Skips without a CUDA device.
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "cpu/daat_engine.h"
#include "gpu/batch/batch_format.h"
#include "gpu/engine/engine_test_util.h"
#include "gpu/engine/gpu_engine.h"
#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::gpu {
namespace {

using index::Query;
using index::QueryMode;

// A mixed batch: every mode, k from 1 to 1,000 (and one over the batch limit), absent and repeated
// terms, weights, an empty query, one of 20 terms, one with other BM25 parameters.
std::vector<Query> MixedQueries(uint32_t vocabulary, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  constexpr uint32_t kKs[] = {1, 3, 10, 10, 10, 100, 1000};
  std::vector<Query> queries;
  for (int i = 0; i < count; ++i) {
    Query q = RandomQuery(vocabulary, i, rng);
    q.mode = kModes[rng() % 3];
    q.k = kKs[rng() % 7];
    queries.push_back(std::move(q));
  }
  Query empty;
  empty.mode = QueryMode::kOr;
  queries.push_back(empty);
  Query only_absent;
  only_absent.terms = {{"absent-term", 1.0f}, {"missing", 2.0f}};
  only_absent.mode = QueryMode::kAndOr;
  queries.push_back(only_absent);
  Query many;  // more terms than a batch takes
  for (uint32_t t = 0; t < kMaxBatchTerms + 4; ++t) many.terms.push_back({"t" + std::to_string(t)});
  many.mode = QueryMode::kOr;
  queries.push_back(many);
  Query large_k = queries[0];  // k over the batch limit
  large_k.k = 5000;
  queries.push_back(large_k);
  Query other_bm25 = queries[1];  // not the index's own parameters
  other_bm25.bm25 = {.k1 = 1.2f, .b = 0.75f};
  queries.push_back(other_bm25);
  return queries;
}

// Every index codec, with the search forms' docIDs plain or in SegLRC.
class BatchEngineTest : public OracleTest<std::tuple<std::string, bool>> {
 protected:
  // 20,000 documents: three ranges of the OR's accumulators.
  void SetUp() override {
    BuildCollection({.num_docs = 20000, .vocabulary = 500, .codec = std::get<0>(GetParam())});
  }

  std::unique_ptr<GpuEngine> MakeGpu(SearchRange range, uint64_t host_bytes = 64u << 20,
                                     uint64_t scratch_bytes = 256u << 20) {
    GpuEngineOptions options;
    options.cache_bytes = 512u << 20;
    options.num_contexts = 2;
    options.tuning.batch_range = range;
    options.batch = {.enabled = true,
                     .compressed_forms = std::get<1>(GetParam()),
                     .contexts = 2,
                     .scratch_bytes = scratch_bytes,
                     .host_bytes = host_bytes};
    auto gpu = GpuEngine::Create(*index_, options);
    EXPECT_TRUE(gpu.ok()) << gpu.status();
    return gpu.ok() ? *std::move(gpu) : nullptr;
  }

  // The batch's answers against the CPU engine's, query by query.
  void ExpectLikeCpu(const std::vector<Query>& queries,
                     const std::vector<absl::StatusOr<index::SearchResult>>& got,
                     const std::string& what) {
    ASSERT_EQ(got.size(), queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      const auto want = cpu_->Search(queries[i], {});
      ASSERT_EQ(want.ok(), got[i].ok()) << what << " query " << i << ": " << got[i].status();
      if (!want.ok()) {
        EXPECT_EQ(want.status().code(), got[i].status().code()) << what << " query " << i;
        continue;
      }
      const auto& a = want->hits;
      const auto& b = got[i]->hits;
      ASSERT_EQ(a.size(), b.size()) << what << " query " << i << " k " << queries[i].k;
      for (size_t r = 0; r < a.size(); ++r) {
        ASSERT_EQ(a[r].docid, b[r].docid) << what << " query " << i << " rank " << r;
        ASSERT_EQ(a[r].score, b[r].score) << what << " query " << i << " rank " << r;
      }
      EXPECT_EQ(want->stats.executed_mode, got[i]->stats.executed_mode)
          << what << " query " << i << " mode " << index::QueryModeName(queries[i].mode);
    }
  }
};

TEST_P(BatchEngineTest, EverySearchRangeMatchesTheCpuEngine) {
  const std::vector<Query> queries = MixedQueries(vocabulary_, 120, 7);
  for (int r = 0; r < kNumSearchRanges; ++r) {
    const SearchRange range = static_cast<SearchRange>(r);
    SCOPED_TRACE(SearchRangeName(range));
    std::unique_ptr<GpuEngine> gpu = MakeGpu(range);
    ASSERT_NE(gpu, nullptr);
    EXPECT_TRUE(gpu->batch_path());
    ExpectLikeCpu(queries, gpu->SearchBatch(queries, {index::SearchContext{}}),
                  SearchRangeName(range));
    // A second batch over lists now cached, in another order.
    std::vector<Query> reversed(queries.rbegin(), queries.rend());
    ExpectLikeCpu(reversed, gpu->SearchBatch(reversed, {index::SearchContext{}}), "reversed");
  }
}

TEST_P(BatchEngineTest, EveryModeAndKOfOneQueryAlone) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu(SearchRange::kHash16);
  ASSERT_NE(gpu, nullptr);
  const std::vector<Query> base = MixedQueries(vocabulary_, 30, 11);
  for (const Query& b : base) {
    ForEveryModeAndK(b, [&](const Query& q) {
      ExpectLikeCpu({q}, gpu->SearchBatch({q}, {index::SearchContext{}}), "alone");
    });
  }
}

// OR queries of frequent and rare terms: their AND's k-th score makes the frequent terms
// non-essential (MaxScore), so their OR pass scores the rare terms' documents by search, or, when
// that would cost more, every posting in range accumulators. Either way, the CPU's answers.
TEST_P(BatchEngineTest, OrPrunedByItsAndThresholdMatchesTheCpuEngine) {
  std::mt19937_64 rng(23);
  std::vector<Query> queries;
  for (int i = 0; i < 150; ++i) {
    Query q;
    const int frequent = 1 + static_cast<int>(rng() % 4);
    const int rare = static_cast<int>(rng() % 3);
    for (int j = 0; j < frequent; ++j) q.terms.push_back({"t" + std::to_string(rng() % 10)});
    for (int j = 0; j < rare; ++j) {
      q.terms.push_back({"t" + std::to_string(50 + rng() % (vocabulary_ - 50))});
    }
    if (i % 4 == 1) q.terms[rng() % q.terms.size()].weight = 0.5f + (rng() % 6);
    q.mode = i % 3 == 0 ? QueryMode::kAndOr : QueryMode::kOr;
    q.k = std::vector<uint32_t>{1, 3, 10, 10, 50, 200}[rng() % 6];
    queries.push_back(std::move(q));
  }
  for (SearchRange range : {SearchRange::kHash16, SearchRange::kBinary}) {
    std::unique_ptr<GpuEngine> gpu = MakeGpu(range);
    ASSERT_NE(gpu, nullptr);
    ExpectLikeCpu(queries, gpu->SearchBatch(queries, {index::SearchContext{}}),
                  SearchRangeName(range));
  }
}

TEST_P(BatchEngineTest, SmallContextsSplitTheBatch) {
  // 1 MB of pinned memory and 2 MB of scratch: the OR queries' candidates (three ranges x k keys)
  // and the AND keys fill them after a few queries, so the batch runs as several.
  std::unique_ptr<GpuEngine> gpu = MakeGpu(SearchRange::kHash32, 1u << 20, 2u << 20);
  ASSERT_NE(gpu, nullptr);
  const std::vector<Query> queries = MixedQueries(vocabulary_, 200, 13);
  ExpectLikeCpu(queries, gpu->SearchBatch(queries, {index::SearchContext{}}), "split");
}

TEST_P(BatchEngineTest, ContextsAreCheckedPerQuery) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu(SearchRange::kLinearRegression);
  ASSERT_NE(gpu, nullptr);
  std::vector<Query> queries = MixedQueries(vocabulary_, 4, 17);
  queries.resize(4);
  std::atomic<bool> cancelled{true};
  std::vector<index::SearchContext> contexts(4);
  contexts[1].deadline = absl::Now() - absl::Seconds(1);
  contexts[2].cancelled = &cancelled;
  auto got = gpu->SearchBatch(queries, contexts);
  ASSERT_EQ(got.size(), 4u);
  EXPECT_TRUE(got[0].ok()) << got[0].status();
  EXPECT_EQ(got[1].status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(got[2].status().code(), absl::StatusCode::kCancelled);
  EXPECT_TRUE(got[3].ok()) << got[3].status();
  // One context for all, or one per query; anything else is refused for every query.
  auto wrong = gpu->SearchBatch(queries, std::vector<index::SearchContext>(2));
  for (const auto& r : wrong) EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  // Invalid queries are refused alone.
  std::vector<Query> bad = queries;
  bad[0].k = 0;
  bad[3].terms[0].weight = -1;
  auto mixed = gpu->SearchBatch(bad, {index::SearchContext{}});
  EXPECT_EQ(mixed[0].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(mixed[3].status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(mixed[1].ok());
  EXPECT_TRUE(gpu->SearchBatch(std::vector<Query>{}, {index::SearchContext{}}).empty());
}

TEST_P(BatchEngineTest, ConcurrentBatchesMatch) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu(SearchRange::kHash16);
  ASSERT_NE(gpu, nullptr);
  std::vector<std::thread> threads;
  std::vector<int> failures(4, 0);
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      const std::vector<Query> queries = MixedQueries(vocabulary_, 40, 100 + t);
      for (int round = 0; round < 3; ++round) {
        auto got = gpu->SearchBatch(queries, {index::SearchContext{}});
        for (size_t i = 0; i < queries.size(); ++i) {
          auto want = cpu_->Search(queries[i], {});
          if (want.ok() != got[i].ok() || (want.ok() && want->hits != got[i]->hits)) {
            ++failures[t];
          }
        }
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST_P(BatchEngineTest, WithoutTheBatchPathSearchBatchRunsEachQuery) {
  auto gpu = GpuEngine::Create(*index_, {.cache_bytes = 256u << 20, .num_contexts = 2});
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  EXPECT_FALSE((*gpu)->batch_path());
  const std::vector<Query> queries = MixedQueries(vocabulary_, 20, 19);
  ExpectLikeCpu(queries, (*gpu)->SearchBatch(queries, {index::SearchContext{}}), "no batch path");
  GpuEngineOptions bad;
  bad.batch = {.enabled = true, .contexts = 0};
  EXPECT_EQ(GpuEngine::Create(*index_, bad).status().code(), absl::StatusCode::kInvalidArgument);
}

INSTANTIATE_TEST_SUITE_P(CodecsAndForms, BatchEngineTest,
                         ::testing::Combine(::testing::ValuesIn(index::BlockCodecNames()),
                                            ::testing::Bool()));

}  // namespace
}  // namespace tandem::gpu
