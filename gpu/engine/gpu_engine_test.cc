// The GPU engine against its oracle, cpu::DaatEngine (as Faiss's GPU tests compare against the CPU
// index): the same queries over the same index must give the same hits in the same order with the
// same scores, for both GPU codecs, every mode, several k, absent and repeated terms, weights,
// non-default BM25, a cache too small to hold the query's lists, and concurrent callers. Skips
// without a CUDA device.
#include "gpu/engine/gpu_engine.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "cpu/daat_engine.h"
#include "gpu/engine/engine_test_util.h"
#include "gpu/layouts/stored_layouts.h"
#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/file_format.h"
#include "index/index.h"
#include "index/prepared_query.h"
#include "index_builder/document_reader.h"
#include "index_builder/inverter.h"
#include "tests/data_dir.h"
#include "tests/test_collection.h"

namespace tandem::gpu {
namespace {

using index::Query;
using index::QueryMode;

// Same documents in the same order, scores within 1e-5 relative; counts scores that are not
// bit-equal (expected: none, the device repeats the host's float operations).
void ExpectSameHits(const index::SearchResult& cpu, const index::SearchResult& gpu,
                    const std::string& what, int* inexact) {
  ASSERT_EQ(cpu.hits.size(), gpu.hits.size()) << what;
  for (size_t i = 0; i < cpu.hits.size(); ++i) {
    ASSERT_EQ(cpu.hits[i].docid, gpu.hits[i].docid) << what << " rank " << i;
    const float a = cpu.hits[i].score, b = gpu.hits[i].score;
    ASSERT_LE(std::fabs(a - b), 1e-5f * std::fabs(a)) << what << " rank " << i;
    if (a != b) ++*inexact;
  }
  EXPECT_EQ(cpu.stats.executed_mode, gpu.stats.executed_mode) << what;
}

// Random queries (RandomQuery) in the default mode and k.
std::vector<Query> RandomQueries(uint32_t vocabulary, int count, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<Query> queries;
  for (int i = 0; i < count; ++i) queries.push_back(RandomQuery(vocabulary, i, rng));
  return queries;
}

class GpuEngineTest : public OracleTest<std::string> {
 protected:
  void SetUp() override {
    BuildCollection({.num_docs = 3000, .vocabulary = 400, .codec = GetParam()});
  }

  std::unique_ptr<GpuEngine> MakeGpu(const GpuEngineOptions& options) {
    auto gpu = GpuEngine::Create(*index_, options);
    EXPECT_TRUE(gpu.ok()) << gpu.status();
    return gpu.ok() ? *std::move(gpu) : nullptr;
  }

  // Every query in every mode and k through both engines.
  void CompareAll(const index::Engine& gpu, const std::vector<Query>& queries,
                  const index::Bm25Params& bm25) {
    int inexact = 0, compared = 0;
    for (const Query& base : queries) {
      ForEveryModeAndK(base, [&](Query q) {
        q.bm25 = bm25;
        auto c = cpu_->Search(q, {});
        auto g = gpu.Search(q, {});
        ASSERT_TRUE(c.ok()) << c.status();
        ASSERT_TRUE(g.ok()) << g.status();
        const std::string what = "query " + std::to_string(compared) + " mode " +
                                 std::string(index::QueryModeName(q.mode)) + " k " +
                                 std::to_string(q.k);
        ExpectSameHits(*c, *g, what, &inexact);
        ++compared;
      });
    }
    EXPECT_EQ(inexact, 0) << "scores not bit-equal to the CPU engine's";
  }

  // Searches from `threads` threads at once, thread t taking queries t, t + stride, t + 2 stride,
  // ..., query i in mode kModes[i % 3] with k hits; expects each answer to be the CPU engine's.
  void ExpectConcurrentLikeCpu(const GpuEngine& gpu, const std::vector<Query>& queries, int threads,
                               size_t stride, uint32_t k) {
    std::vector<std::thread> running;
    std::vector<int> failures(threads, 0);
    for (int t = 0; t < threads; ++t) {
      running.emplace_back([&, t] {
        for (size_t i = t; i < queries.size(); i += stride) {
          Query q = queries[i];
          q.mode = kModes[i % 3];
          q.k = k;
          auto c = cpu_->Search(q, {});
          auto g = gpu.Search(q, {});
          if (!c.ok() || !g.ok() || c->hits != g->hits) ++failures[t];
        }
      });
    }
    for (std::thread& th : running) th.join();
    for (int t = 0; t < threads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
  }
};

TEST_P(GpuEngineTest, MatchesCpuEngine) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 2});
  ASSERT_NE(gpu, nullptr);
  CompareAll(*gpu, RandomQueries(vocabulary_, 60, 7), index::Bm25Params{});
  const GpuCacheStats stats = gpu->cache_stats();
  EXPECT_GT(stats.hits, 0u);
  EXPECT_GT(stats.misses, 0u);
  EXPECT_EQ(stats.evictions, 0u);
}

// Filtered queries (filters of every density, in both bitmap codecs, expanded on the device) give
// the CPU engine's hits and scores, on the per-query path and through SearchBatch, with either
// top-k method.
TEST_P(GpuEngineTest, FilteredQueriesMatchCpuEngine) {
  const uint32_t n = index_->num_docs();
  std::mt19937_64 rng(17);
  std::vector<std::shared_ptr<const filter::Bitmap>> filters;
  for (double density : {0.0, 0.01, 0.1, 0.5, 0.97, 1.0}) {
    std::vector<uint32_t> rows;
    for (uint32_t d = 0; d < n; ++d) {
      if (double(rng() % 10000) < density * 10000) rows.push_back(d);
    }
    const auto codec =
        filters.size() % 2 == 0 ? filter::BitmapCodec::kPlwah : filter::BitmapCodec::kWah;
    filters.push_back(std::make_shared<filter::Bitmap>(*filter::FromRows(codec, n, rows)));
  }
  std::vector<uint32_t> runs;
  for (uint32_t d = 0; d < n; ++d) {
    if ((d / 500) % 2 == 1 || d % 97 == 0) runs.push_back(d);
  }
  filters.push_back(
      std::make_shared<filter::Bitmap>(*filter::FromRows(filter::BitmapCodec::kPlwah, n, runs)));
  const std::vector<Query> queries = RandomQueries(vocabulary_, 20, 29);
  for (TopKMethod method : {TopKMethod::kRadixSort, TopKMethod::kMultiLevelHeap}) {
    GpuEngineOptions options{.cache_bytes = 256u << 20, .num_contexts = 2};
    options.tuning.top_k = method;
    std::unique_ptr<GpuEngine> gpu = MakeGpu(options);
    ASSERT_NE(gpu, nullptr);
    int inexact = 0;
    for (size_t f = 0; f < filters.size(); ++f) {
      std::vector<Query> batch;
      for (size_t i = 0; i < queries.size(); ++i) {
        for (QueryMode mode : kModes) {
          for (uint32_t k : {1u, 10u, 1000u}) {
            Query q = queries[i];
            q.mode = mode;
            q.k = k;
            q.filter = filters[f];
            auto c = cpu_->Search(q, {});
            auto g = gpu->Search(q, {});
            ASSERT_TRUE(c.ok()) << c.status();
            ASSERT_TRUE(g.ok()) << g.status();
            ExpectSameHits(*c, *g,
                           "filter " + std::to_string(f) + " query " + std::to_string(i) + " k " +
                               std::to_string(k) + " " + std::string(index::QueryModeName(mode)),
                           &inexact);
            batch.push_back(q);
          }
        }
      }
      const auto answers = gpu->SearchBatch(batch, {index::SearchContext{}});
      ASSERT_EQ(answers.size(), batch.size());
      for (size_t i = 0; i < batch.size(); ++i) {
        ASSERT_TRUE(answers[i].ok()) << answers[i].status();
        ExpectSameHits(*cpu_->Search(batch[i], {}), *answers[i],
                       "batch filter " + std::to_string(f) + " query " + std::to_string(i),
                       &inexact);
      }
    }
    EXPECT_EQ(inexact, 0);
  }
  Query q = queries[0];
  q.filter = std::make_shared<filter::Bitmap>(filter::AllRows(filter::BitmapCodec::kWah, n + 1));
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  EXPECT_EQ(gpu->Search(q, {}).status().code(), absl::StatusCode::kInvalidArgument);
}

// The default (kAuto) picks the heap for small k and the sort for large k; each method alone must
// also answer every k.
TEST_P(GpuEngineTest, EachTopKMethodMatchesCpuEngine) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20,
                                            .num_contexts = 1,
                                            .tuning = {.top_k = TopKMethod::kMultiLevelHeap}});
  ASSERT_NE(gpu, nullptr);
  CompareAll(*gpu, RandomQueries(vocabulary_, 30, 23), index::Bm25Params{});
  ASSERT_TRUE(gpu->SetTuning({.top_k = TopKMethod::kRadixSort}).ok());
  CompareAll(*gpu, RandomQueries(vocabulary_, 30, 29), index::Bm25Params{});
}

// The recursive merge-find of section 7 with 0 to 4 levels of splitters finds the same survivors
// as the located-block search (set at run time with SetTuning).
TEST_P(GpuEngineTest, MergeFindIntersectionAtEveryLevelMatches) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  ASSERT_NE(gpu, nullptr);
  for (int levels = 0; levels <= 4; ++levels) {
    ASSERT_TRUE(gpu->SetTuning({.intersect_levels = levels}).ok());
    CompareAll(*gpu, RandomQueries(vocabulary_, 15, 31 + levels), index::Bm25Params{});
  }
  EXPECT_EQ(gpu->SetTuning({.intersect_levels = 5}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(gpu->SetTuning({.intersect_levels = -2}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(GpuEngine::Create(*index_, {.tuning = {.intersect_levels = 9}}).ok());
}

// Stage profiling sums device time per stage only while it is on, and does not change answers.
TEST_P(GpuEngineTest, StageProfileCountsProfiledQueries) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  ASSERT_NE(gpu, nullptr);
  CompareAll(*gpu, RandomQueries(vocabulary_, 3, 41), index::Bm25Params{});
  EXPECT_EQ(gpu->stage_times().queries, 0u);
  ASSERT_TRUE(gpu->SetTuning({.profile_stages = true}).ok());
  CompareAll(*gpu, RandomQueries(vocabulary_, 4, 43), index::Bm25Params{});
  const GpuStageTimes times = gpu->stage_times();
  EXPECT_EQ(times.queries, 4u * 3 * 3);  // queries x modes x k
  double total = 0;
  for (double ms : times.ms) {
    EXPECT_GE(ms, 0.0);
    total += ms;
  }
  EXPECT_GT(total, 0.0);
  EXPECT_GT(times.ms[static_cast<int>(GpuStage::kDecode)], 0.0);
  EXPECT_GT(times.ms[static_cast<int>(GpuStage::kTopK)], 0.0);
  gpu->ResetStageTimes();
  EXPECT_EQ(gpu->stage_times().queries, 0u);
  EXPECT_STREQ(GpuStageName(GpuStage::kIntersect), "intersect");
}

// The cost model's cache feature: 0 before a query's lists are loaded, 1 after.
TEST_P(GpuEngineTest, ResidentFractionFollowsTheCache) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  ASSERT_NE(gpu, nullptr);
  auto prepare = [&](std::vector<index::QueryTerm> terms) {
    Query q;
    q.terms = std::move(terms);
    return *index::PreparedQuery::Prepare(*index_, q);
  };
  const index::PreparedQuery q = prepare({{"t0", 1.0f}, {"t1", 1.0f}, {"absent-term", 1.0f}});
  EXPECT_EQ(gpu->ResidentFraction(q), 0.0);
  ASSERT_TRUE(gpu->Search(prepare({{"t0", 1.0f}}), {}).ok());
  const double partial = gpu->ResidentFraction(q);
  EXPECT_GT(partial, 0.0);
  EXPECT_LT(partial, 1.0);
  ASSERT_TRUE(gpu->Search(q, {}).ok());
  EXPECT_EQ(gpu->ResidentFraction(q), 1.0);
  EXPECT_EQ(gpu->ResidentFraction(prepare({{"absent-term", 1.0f}})), 1.0);
}

TEST_P(GpuEngineTest, MatchesCpuEngineWithOtherBm25Parameters) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  ASSERT_NE(gpu, nullptr);
  CompareAll(*gpu, RandomQueries(vocabulary_, 25, 11), index::Bm25Params{.k1 = 1.2f, .b = 0.75f});
  CompareAll(*gpu, RandomQueries(vocabulary_, 10, 12), index::Bm25Params{.k1 = 0.0f, .b = 1.0f});
}

TEST_P(GpuEngineTest, TinyCacheEvictsAndStillMatches) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 16u << 10, .num_contexts = 1});
  ASSERT_NE(gpu, nullptr);
  CompareAll(*gpu, RandomQueries(vocabulary_, 20, 13), index::Bm25Params{});
  const GpuCacheStats stats = gpu->cache_stats();
  EXPECT_GT(stats.evictions, 0u);
  EXPECT_LE(stats.bytes_resident, stats.capacity_bytes);
}

TEST_P(GpuEngineTest, PreloadServesFromCache) {
  std::unique_ptr<GpuEngine> gpu =
      MakeGpu({.cache_bytes = 256u << 20, .preload = true, .num_contexts = 1});
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->cache_stats().lists_resident, index_->num_terms());
  const uint64_t misses = gpu->cache_stats().misses;
  CompareAll(*gpu, RandomQueries(vocabulary_, 5, 17), index::Bm25Params{});
  EXPECT_EQ(gpu->cache_stats().misses, misses);
}

// What a node loading a new index does with the old engine's cache: the hottest terms come most
// recently used first, warming a second engine loads them without evicting (a warmed query then
// misses nothing and matches the CPU engine), and the cache grows but never shrinks.
TEST_P(GpuEngineTest, WarmsFromAnotherEnginesHottestListsAndGrows) {
  std::unique_ptr<GpuEngine> old_engine = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  ASSERT_NE(old_engine, nullptr);
  EXPECT_TRUE(old_engine->HottestTerms(10).empty());
  for (const char* term : {"t3", "t1", "t2"}) {
    Query q;
    q.terms = {{term, 1.0f}};
    ASSERT_TRUE(old_engine->Search(q, {}).ok());
  }
  EXPECT_EQ(old_engine->HottestTerms(10), (std::vector<std::string>{"t2", "t1", "t3"}));
  EXPECT_EQ(old_engine->HottestTerms(2), (std::vector<std::string>{"t2", "t1"}));

  std::unique_ptr<GpuEngine> fresh = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  ASSERT_NE(fresh, nullptr);
  std::vector<std::string> hottest = old_engine->HottestTerms(10);
  hottest.push_back("absent-term");  // a term the new index lacks is skipped
  absl::StatusOr<uint64_t> warmed = fresh->Warm(hottest, std::chrono::seconds(60));
  ASSERT_TRUE(warmed.ok()) << warmed.status();
  EXPECT_EQ(*warmed, 3u);
  EXPECT_EQ(fresh->cache_stats().lists_resident, 3u);
  EXPECT_EQ(*fresh->Warm(hottest, std::chrono::seconds(60)), 0u);  // already resident
  // The warmed cache keeps the old one's order: its hottest list is the most recent.
  EXPECT_EQ(fresh->HottestTerms(10), (std::vector<std::string>{"t2", "t1", "t3"}));
  const uint64_t misses = fresh->cache_stats().misses;
  Query q;
  q.terms = {{"t1", 1.0f}, {"t2", 1.0f}, {"t3", 1.0f}};
  auto c = cpu_->Search(q, {});
  auto g = fresh->Search(q, {});
  ASSERT_TRUE(c.ok() && g.ok());
  int inexact = 0;
  ExpectSameHits(*c, *g, "warmed query", &inexact);
  EXPECT_EQ(inexact, 0);
  EXPECT_EQ(fresh->cache_stats().misses, misses);

  // A cache too small for every list warms what fits and stops, evicting nothing.
  std::unique_ptr<GpuEngine> tiny = MakeGpu({.cache_bytes = 1, .num_contexts = 1});
  ASSERT_NE(tiny, nullptr);
  EXPECT_EQ(*tiny->Warm(hottest, std::chrono::seconds(60)), 0u);
  EXPECT_EQ(tiny->cache_stats().evictions, 0u);
  ASSERT_TRUE(tiny->GrowCache(64u << 20).ok());
  EXPECT_EQ(tiny->cache_stats().capacity_bytes, 64u << 20);
  ASSERT_TRUE(tiny->GrowCache(1).ok());
  EXPECT_EQ(tiny->cache_stats().capacity_bytes, 64u << 20);
  EXPECT_EQ(*tiny->Warm(hottest, std::chrono::seconds(60)), 3u);
  // No budget, no warming.
  std::unique_ptr<GpuEngine> late = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
  ASSERT_NE(late, nullptr);
  EXPECT_EQ(*late->Warm(hottest, std::chrono::seconds(0)), 0u);
}

// Lists copied from gpu_layouts.bin answer like transcoded ones, per query and in batches (whose
// search forms are built from them); a damaged file fails Create, and without the option it is
// not read.
TEST_P(GpuEngineTest, StoredLayoutsAnswerLikeTranscodedLists) {
  const std::string path = dir_->path() + "/idx/" + kStoredLayoutsFile;
  ASSERT_TRUE(WriteGpuLayouts(*index_, {}, path, 2).ok());
  {
    GpuEngineOptions options{.cache_bytes = 256u << 20, .num_contexts = 2};
    options.batch = {.enabled = true, .contexts = 1, .scratch_bytes = 128u << 20};
    std::unique_ptr<GpuEngine> gpu = MakeGpu(options);
    ASSERT_NE(gpu, nullptr);
    EXPECT_TRUE(gpu->cache_stats().stored_layouts);
    CompareAll(*gpu, RandomQueries(vocabulary_, 30, 19), index::Bm25Params{});
    std::vector<Query> batch = RandomQueries(vocabulary_, 40, 23);
    for (size_t i = 0; i < batch.size(); ++i) batch[i].mode = kModes[i % 3];
    const auto got = gpu->SearchBatch(batch, {index::SearchContext{}});
    ASSERT_EQ(got.size(), batch.size());
    int inexact = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      ASSERT_TRUE(got[i].ok()) << got[i].status();
      ExpectSameHits(*cpu_->Search(batch[i], {}), *got[i], "batch query " + std::to_string(i),
                     &inexact);
    }
    EXPECT_EQ(inexact, 0);
  }
  // A list whose images decode to docIDs beyond the collection, in a file framed anew (a valid
  // checksum, as a buggy writer or a hostile file would have it): its queries get DATA_LOSS, the
  // rest are answered, nothing reads out of bounds.
  if (DefaultGpuCodec(index_->codec()) == GpuCodec::kPFor) {
    auto file = index::MappedFile::Open(path, index::FileKind::kGpuLayouts);
    ASSERT_TRUE(file.ok()) << file.status();
    std::string payload(file->payload());
    auto read64 = [&](uint64_t at) {
      uint64_t v;
      std::memcpy(&v, payload.data() + at, 8);
      return v;
    };
    const uint64_t table = read64(payload.size() - 16);
    auto padded = [](uint64_t bytes) { return (bytes + 15) / 16 * 16; };
    // The term whose slots are widest among those of a few blocks: all-ones slots overshoot.
    uint64_t victim = 0;
    uint32_t widest = 0;
    for (uint64_t t = 0; t < index_->num_terms(); ++t) {
      PForDesc d;
      std::memcpy(&d, payload.data() + read64(table + 16 * t), sizeof(d));
      if (d.num_postings >= 8 && d.bit_width > widest) {
        widest = d.bit_width;
        victim = t;
      }
    }
    ASSERT_GE(widest, 4u);
    const uint64_t entry = read64(table + 16 * victim);
    PForDesc d;
    std::memcpy(&d, payload.data() + entry, sizeof(d));
    const uint64_t words = entry + padded(sizeof(PForDesc)) + padded(sizeof(FreqDesc));
    std::memset(payload.data() + words + 4 * d.slots, 0xff,
                4 * PackedWords(d.num_postings, widest));
    *file = index::MappedFile();
    auto writer = index::FileWriter::Create(path, index::FileKind::kGpuLayouts);
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->Append(payload).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
    std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1});
    ASSERT_NE(gpu, nullptr);
    Query bad;
    bad.terms = {{std::string(index_->term_at(victim).term), 1.0f}};
    const auto refused = gpu->Search(bad, {});
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kDataLoss) << refused.status();
    Query good;  // another list of the same file
    good.terms = {{std::string(index_->term_at(victim == 0 ? 1 : 0).term), 1.0f}};
    const auto answered = gpu->Search(good, {});
    ASSERT_TRUE(answered.ok()) << answered.status();
    int inexact = 0;
    ExpectSameHits(*cpu_->Search(good, {}), *answered, "another term", &inexact);
  }
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  bytes[bytes.size() / 2] ^= 1;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  EXPECT_EQ(GpuEngine::Create(*index_, {.cache_bytes = 256u << 20}).status().code(),
            absl::StatusCode::kDataLoss);
  std::unique_ptr<GpuEngine> ignoring =
      MakeGpu({.cache_bytes = 256u << 20, .stored_layouts = false});
  ASSERT_NE(ignoring, nullptr);
  EXPECT_FALSE(ignoring->cache_stats().stored_layouts);
  CompareAll(*ignoring, RandomQueries(vocabulary_, 5, 29), index::Bm25Params{});
}

TEST_P(GpuEngineTest, ConcurrentQueriesMatch) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu({.cache_bytes = 64u << 10, .num_contexts = 3});
  ASSERT_NE(gpu, nullptr);
  ExpectConcurrentLikeCpu(*gpu, RandomQueries(vocabulary_, 40, 19), 6, 2, 100);
}

// Blocking waits (the device switches to blocking sync, so every wait sleeps until the device
// signals): the answers are the CPU engine's, also with queries from several threads at once.
TEST_P(GpuEngineTest, BlockingSyncWaitsMatch) {
  std::unique_ptr<GpuEngine> gpu = MakeGpu(
      {.cache_bytes = 256u << 20, .num_contexts = 2, .host_wait = GpuHostWait::kBlockingSync});
  ASSERT_NE(gpu, nullptr);
  CompareAll(*gpu, RandomQueries(vocabulary_, 10, 23), index::Bm25Params{});
  ExpectConcurrentLikeCpu(*gpu, RandomQueries(vocabulary_, 24, 29), 3, 3, 10);
}

TEST_P(GpuEngineTest, ErrorsAreStatuses) {
  std::unique_ptr<GpuEngine> gpu =
      MakeGpu({.cache_bytes = 256u << 20, .num_contexts = 1, .scratch_bytes = 4096});
  ASSERT_NE(gpu, nullptr);
  Query q;
  q.terms = {{"t0", 1.0f}, {"t1", 1.0f}};
  q.mode = QueryMode::kOr;
  auto r = gpu->Search(q, {});
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  q.k = 0;
  EXPECT_EQ(gpu->Search(q, {}).status().code(), absl::StatusCode::kInvalidArgument);
  q.k = 10;
  index::SearchContext expired;
  expired.deadline = absl::InfinitePast();
  EXPECT_EQ(gpu->Search(q, expired).status().code(), absl::StatusCode::kDeadlineExceeded);
  Query none;
  none.terms = {{"absent-term", 1.0f}};
  auto empty = gpu->Search(none, {});
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->hits.empty());
}

INSTANTIATE_TEST_SUITE_P(Codecs, GpuEngineTest, ::testing::ValuesIn(index::BlockCodecNames()));

// Real text: BEIR SciFact through both engines (skips when ../shared/data is absent).
TEST(GpuEngineSciFactTest, MatchesCpuEngine) {
  const std::string corpus = testing::DataFile("beir-scifact/corpus.jsonl");
  if (corpus.empty()) GTEST_SKIP() << "BEIR SciFact not found under " << testing::DataDir();
  absl::StatusOr<DeviceInfo> device = ProbeDevice();
  if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().message();
  testing::TempDir tmp;
  auto reader = index_builder::OpenDocumentReader("beir", corpus, {});
  ASSERT_TRUE(reader.ok()) << reader.status();
  index_builder::InverterOptions options;
  options.threads = 2;
  ASSERT_TRUE(index_builder::BuildIndex(**reader, tmp.path() + "/scifact", {}, options).ok());
  auto idx = index::Index::Open(tmp.path() + "/scifact");
  ASSERT_TRUE(idx.ok()) << idx.status();
  auto cpu = cpu::DaatEngine::Create(**idx);
  auto gpu = GpuEngine::Create(**idx, {.cache_bytes = 1u << 30});
  ASSERT_TRUE(cpu.ok());
  ASSERT_TRUE(gpu.ok()) << gpu.status();
  const char* texts[] = {"0-dimensional biomaterials show inductive properties",
                         "ALDH1 expression is associated with poorer prognosis for breast cancer",
                         "vitamin D deficiency risk of cardiovascular disease",
                         "the protein kinase regulates cell growth and apoptosis in tumors"};
  int inexact = 0;
  for (const char* text : texts) {
    for (QueryMode mode : kModes) {
      for (uint32_t k : {10u, 1000u}) {
        Query q;
        q.mode = mode;
        q.k = k;
        std::vector<std::string> terms;
        (*idx)->analyzer().Analyze(text, &terms);
        for (const std::string& t : terms) q.terms.push_back({t, 1.0f});
        auto c = (*cpu)->Search(q, {});
        auto g = (*gpu)->Search(q, {});
        ASSERT_TRUE(c.ok() && g.ok());
        ExpectSameHits(*c, *g, text, &inexact);
      }
    }
  }
  EXPECT_EQ(inexact, 0);
}

}  // namespace
}  // namespace tandem::gpu
