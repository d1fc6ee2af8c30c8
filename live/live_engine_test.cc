// LiveEngine and the device engines of segments (DeviceEngines), with a stand-in device: a CPU
// engine that counts its calls and its instances. Which segments get one, that the device engine
// searches them and the CPU the rest, that a merged-away segment releases its engine, that a
// device that fails leaves the segment to the CPU, and that batches answer as single queries.
#include "live/live_engine.h"

#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/temp_dir.h"
#include "filter/bitmap.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "live/live_index.h"
#include "live/live_test_util.h"

namespace tandem::live {
namespace {

using testing::BuildDocuments;
using testing::Document;
using testing::RandomDocument;

// The stand-in device: a CPU engine over the segment, counting.
class CountingEngine : public index::Engine {
 public:
  CountingEngine(std::unique_ptr<cpu::DaatEngine> inner, std::atomic<int>& alive,
                 std::atomic<int>& calls)
      : inner_(std::move(inner)), alive_(alive), calls_(calls) {
    ++alive_;
  }
  ~CountingEngine() override { --alive_; }
  absl::string_view name() const override { return "gpu"; }
  const index::Index& index() const override { return inner_->index(); }
  using index::Engine::Search;
  using index::Engine::SearchBatch;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& query,
                                             const index::SearchContext& context) const override {
    ++calls_;
    return inner_->Search(query, context);
  }
  std::vector<absl::StatusOr<index::SearchResult>> SearchBatch(
      const std::vector<const index::PreparedQuery*>& queries,
      const std::vector<index::SearchContext>& contexts) const override {
    ++calls_;
    return inner_->SearchBatch(queries, contexts);
  }

 private:
  std::unique_ptr<cpu::DaatEngine> inner_;
  std::atomic<int>& alive_;
  std::atomic<int>& calls_;
};

class LiveEngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() + "/live";
    for (int i = 0; i < 100; ++i) docs_.push_back(RandomDocument(rng_, absl::StrCat("d", i)));
    ASSERT_TRUE(BuildDocuments(docs_, dir_).ok());
    absl::StatusOr<std::unique_ptr<index::Index>> base = index::Index::Open(dir_);
    ASSERT_TRUE(base.ok()) << base.status();
    base_ = *std::move(base);
  }

  LiveIndexOptions Options(uint32_t min_docs, bool fail = false) {
    LiveIndexOptions options;
    options.refresh_interval = absl::ZeroDuration();
    options.background_merges = false;
    options.device.min_docs = min_docs;
    options.device.create =
        [this,
         fail](const index::Index& segment) -> absl::StatusOr<std::unique_ptr<index::Engine>> {
      if (fail) return absl::ResourceExhaustedError("out of device memory");
      absl::StatusOr<std::unique_ptr<cpu::DaatEngine>> inner = cpu::DaatEngine::Create(segment, {});
      if (!inner.ok()) return inner.status();
      return std::unique_ptr<index::Engine>(
          std::make_unique<CountingEngine>(*std::move(inner), alive_, calls_));
    };
    return options;
  }

  // Ten new documents and a replace of d0, refreshed into a segment of eleven.
  void WriteSome(LiveIndex& live) {
    std::vector<Operation> ops;
    for (int i = 0; i < 10; ++i) {
      ops.push_back(Operation::Index(RandomDocument(rng_, absl::StrCat("n", next_++))));
    }
    ops.push_back(Operation::Index(RandomDocument(rng_, "d0")));
    ASSERT_TRUE(live.Write(ops).ok());
    ASSERT_TRUE(live.Refresh().ok());
  }

  std::vector<index::PreparedQuery> Queries() {
    std::vector<index::PreparedQuery> queries;
    for (int q = 0; q < 12; ++q) {
      index::Query query;
      query.terms = {{absl::StrCat("w", q % 6), 1.0f}, {absl::StrCat("w", q % 4 + 1), 1.0f}};
      query.mode = static_cast<index::QueryMode>(q % 3);
      query.k = 5;
      absl::StatusOr<index::PreparedQuery> prepared = index::PreparedQuery::Prepare(*base_, query);
      EXPECT_TRUE(prepared.ok()) << prepared.status();
      queries.push_back(*std::move(prepared));
    }
    return queries;
  }

  // Every query answers on the device engine as on the CPU engine, alone and in one batch.
  void ExpectSameAnswers(const LiveEngine& device, const LiveEngine& cpu) {
    std::vector<index::PreparedQuery> queries = Queries();
    std::vector<const index::PreparedQuery*> pointers;
    for (const index::PreparedQuery& q : queries) pointers.push_back(&q);
    std::vector<absl::StatusOr<index::SearchResult>> batch = device.SearchBatch(pointers, {{}});
    ASSERT_EQ(batch.size(), queries.size());
    for (size_t i = 0; i < queries.size(); ++i) {
      absl::StatusOr<index::SearchResult> want = cpu.Search(queries[i], {});
      absl::StatusOr<index::SearchResult> got = device.Search(queries[i], {});
      ASSERT_TRUE(want.ok() && got.ok() && batch[i].ok()) << i;
      EXPECT_FALSE(want->hits.empty()) << i;
      EXPECT_EQ(testing::RankedIds(*got, *base_), testing::RankedIds(*want, *base_)) << i;
      EXPECT_EQ(testing::RankedIds(*batch[i], *base_), testing::RankedIds(*want, *base_)) << i;
    }
  }

  std::mt19937 rng_{5};
  base::TempDir tmp_;
  std::string dir_;
  std::vector<Document> docs_;
  std::unique_ptr<index::Index> base_;
  std::atomic<int> alive_{0};
  std::atomic<int> calls_{0};
  int next_ = 0;
};

TEST_F(LiveEngineTest, LargeSegmentsAreSearchedOnTheDeviceAndSmallOnesOnTheCpu) {
  absl::StatusOr<std::unique_ptr<LiveIndex>> opened = LiveIndex::Open(dir_, Options(50));
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<LiveIndex> live = *std::move(opened);
  LiveEngine device(live, *base_, LiveEngine::Where::kDevice);
  LiveEngine cpu(live, *base_);
  EXPECT_EQ(device.name(), "gpu");
  EXPECT_EQ(cpu.name(), "cpu");
  EXPECT_EQ(alive_, 1);  // ".": 100 documents
  WriteSome(*live);
  std::shared_ptr<const Snapshot> snapshot = live->snapshot();
  ASSERT_EQ(snapshot->segments().size(), 2u);
  EXPECT_NE(snapshot->segments()[0].segment->device_engine(), nullptr);
  EXPECT_EQ(snapshot->segments()[1].segment->device_engine(), nullptr);  // 11 documents
  EXPECT_EQ(alive_, 1);

  calls_ = 0;
  ExpectSameAnswers(device, cpu);
  EXPECT_GT(calls_, 0);
  const int device_calls = calls_;
  std::vector<index::PreparedQuery> queries = Queries();
  ASSERT_TRUE(cpu.Search(queries[0], {}).ok());
  EXPECT_EQ(calls_, device_calls) << "the CPU engine never uses the device";

  // The merged segment (110 live documents) gets an engine; the merged-away ones release theirs
  // once no snapshot holds them.
  ASSERT_TRUE(live->ForceMerge(1).ok());
  ExpectSameAnswers(device, cpu);
  snapshot.reset();
  ASSERT_EQ(live->snapshot()->segments().size(), 1u);
  EXPECT_NE(live->snapshot()->segments()[0].segment->device_engine(), nullptr);
  EXPECT_EQ(alive_, 1);
}

TEST_F(LiveEngineTest, ADeviceThatFailsLeavesTheSegmentToTheCpu) {
  absl::StatusOr<std::unique_ptr<LiveIndex>> opened =
      LiveIndex::Open(dir_, Options(0, /*fail=*/true));
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<LiveIndex> live = *std::move(opened);
  WriteSome(*live);
  for (const SegmentView& v : live->snapshot()->segments()) {
    EXPECT_EQ(v.segment->device_engine(), nullptr);
    EXPECT_TRUE(absl::IsResourceExhausted(v.segment->device_error())) << v.segment->device_error();
  }
  LiveEngine device(live, *base_, LiveEngine::Where::kDevice);
  LiveEngine cpu(live, *base_);
  ExpectSameAnswers(device, cpu);
  EXPECT_EQ(alive_, 0);
}

TEST_F(LiveEngineTest, AsBuiltQueriesGoToTheOpenedIndexsDeviceEngine) {
  // The node's own device engine for ".", given as `opened` with the index it was made over.
  std::shared_ptr<const index::Index> shared(base_.get(), [](const index::Index*) {});
  absl::StatusOr<std::unique_ptr<cpu::DaatEngine>> inner = cpu::DaatEngine::Create(*base_, {});
  ASSERT_TRUE(inner.ok());
  CountingEngine node_engine(*std::move(inner), alive_, calls_);
  LiveIndexOptions options = Options(1u << 30);
  options.opened = shared;
  options.device.opened = &node_engine;
  absl::StatusOr<std::unique_ptr<LiveIndex>> opened = LiveIndex::Open(dir_, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<LiveIndex> live = *std::move(opened);
  LiveEngine device(live, *base_, LiveEngine::Where::kDevice);
  LiveEngine cpu(live, *base_);
  calls_ = 0;
  ExpectSameAnswers(device, cpu);
  EXPECT_GT(calls_, 0);
  EXPECT_EQ(live->snapshot()->segments()[0].segment->device_engine(), &node_engine);
  WriteSome(*live);
  ExpectSameAnswers(device, cpu);  // "." keeps the node's engine, the new segment the CPU
  EXPECT_EQ(live->snapshot()->segments()[0].segment->device_engine(), &node_engine);
}

TEST_F(LiveEngineTest, BadBatchesAreRefusedQueryByQuery) {
  absl::StatusOr<std::unique_ptr<LiveIndex>> opened = LiveIndex::Open(dir_, Options(0));
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<LiveIndex> live = *std::move(opened);
  WriteSome(*live);
  LiveEngine device(live, *base_, LiveEngine::Where::kDevice);
  std::vector<index::PreparedQuery> queries = Queries();
  std::vector<const index::PreparedQuery*> pointers = {&queries[0], &queries[1], &queries[2]};
  for (const auto& r : device.SearchBatch(pointers, {{}, {}})) {
    EXPECT_TRUE(absl::IsInvalidArgument(r.status())) << r.status();
  }
  // A query prepared against another index, and a bare filter bitmap on a written index, fail
  // alone; the others are answered.
  base::TempDir other_dir;
  ASSERT_TRUE(BuildDocuments(docs_, other_dir.path() + "/other").ok());
  absl::StatusOr<std::unique_ptr<index::Index>> other =
      index::Index::Open(other_dir.path() + "/other");
  ASSERT_TRUE(other.ok());
  absl::StatusOr<index::PreparedQuery> foreign =
      index::PreparedQuery::Prepare(**other, queries[0].query());
  ASSERT_TRUE(foreign.ok());
  index::Query bare = queries[1].query();
  const std::vector<uint32_t> rows = {0, 1, 2};
  absl::StatusOr<filter::Bitmap> all =
      filter::FromRows(filter::BitmapCodec::kWah, base_->num_docs(), rows);
  ASSERT_TRUE(all.ok());
  bare.filter = std::make_shared<const filter::Bitmap>(*std::move(all));
  absl::StatusOr<index::PreparedQuery> bitmap = index::PreparedQuery::Prepare(*base_, bare);
  ASSERT_TRUE(bitmap.ok()) << bitmap.status();
  std::vector<absl::StatusOr<index::SearchResult>> answers =
      device.SearchBatch({&*foreign, &*bitmap, &queries[2]}, {{}});
  EXPECT_TRUE(absl::IsInvalidArgument(answers[0].status())) << answers[0].status();
  EXPECT_TRUE(absl::IsFailedPrecondition(answers[1].status())) << answers[1].status();
  EXPECT_TRUE(answers[2].ok()) << answers[2].status();
}

}  // namespace
}  // namespace tandem::live
