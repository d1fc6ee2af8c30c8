// The live index searched on the GPU (LiveEngine::Where::kDevice): random adds, replaces, deletes,
// refreshes, merges and reopens, every segment (or only the larger ones, the rest on the CPU)
// with a GPU engine that has the batch path; after each refresh every query, alone and in one
// batch, with and without a filter, answers as the CPU engine over a fresh build of the live
// documents: the same documents in the same order with bit-equal scores. Skips without a device.
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/temp_dir.h"
#include "filter/filter.h"
#include "gpu/device/device.h"
#include "gpu/engine/gpu_engine.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "live/live_engine.h"
#include "live/live_index.h"
#include "live/live_test_util.h"

namespace tandem::live {
namespace {

using testing::BuildDocuments;
using testing::Document;
using testing::RandomDocument;
using testing::RandomQuery;
using testing::Ranked;
using testing::RankedIds;

const std::vector<index_builder::AttributeSpec> kAttributes = {
    {"label", index_builder::AttributeType::kKeyword}};

Document WithLabel(std::mt19937& rng, Document d) {
  d.attributes = {{"label", rng() % 3 == 0 ? "spam" : "ham"}};
  return d;
}

// GPU engines with the batch path for the segments, counted.
DeviceEngineFactory GpuEngines(int& created) {
  return [&created](const index::Index& segment) -> absl::StatusOr<std::unique_ptr<index::Engine>> {
    gpu::GpuEngineOptions g{.cache_bytes = 64u << 20, .num_contexts = 2};
    g.batch = {.enabled = true, .contexts = 1, .scratch_bytes = 64u << 20, .host_bytes = 8u << 20};
    absl::StatusOr<std::unique_ptr<gpu::GpuEngine>> engine = gpu::GpuEngine::Create(segment, g);
    if (!engine.ok()) return engine.status();
    ++created;
    return std::unique_ptr<index::Engine>(*std::move(engine));
  };
}

struct Where {
  const char* name;
  uint32_t device_min_docs;  // 0: every segment on the GPU
};

class LiveGpuTest : public ::testing::TestWithParam<Where> {
 protected:
  void SetUp() override {
    absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice();
    if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().message();
  }
};

class LiveGpuLargeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<gpu::DeviceInfo> device = gpu::ProbeDevice();
    if (!device.ok()) GTEST_SKIP() << "no CUDA device: " << device.status().message();
  }
};

TEST_P(LiveGpuTest, EveryRefreshAnswersAsAFreshBuildOnTheGpu) {
  std::mt19937 rng(7);
  base::TempDir tmp;
  const std::string dir = tmp.path() + "/live";
  testing::LiveModel model;
  std::vector<Document> initial;
  for (int i = 0; i < 300; ++i) {
    initial.push_back(WithLabel(rng, RandomDocument(rng, absl::StrCat("d", i))));
  }
  ASSERT_TRUE(BuildDocuments(initial, dir, "pfor", kAttributes).ok());
  for (const Document& d : initial) model.Put(d);

  int engines_created = 0;
  LiveIndexOptions options;
  options.refresh_interval = absl::ZeroDuration();
  options.background_merges = false;
  options.merge_policy.floor_documents = 10;
  options.merge_policy.per_level = 3;
  options.merge_bytes_per_second = 0;
  options.device.min_docs = GetParam().device_min_docs;
  options.device.create = GpuEngines(engines_created);
  absl::StatusOr<std::unique_ptr<LiveIndex>> opened = LiveIndex::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<LiveIndex> live = *std::move(opened);
  absl::StatusOr<std::unique_ptr<index::Index>> base = index::Index::Open(dir);
  ASSERT_TRUE(base.ok()) << base.status();
  auto gpu = std::make_unique<LiveEngine>(live, **base, LiveEngine::Where::kDevice);

  absl::StatusOr<filter::FilterNode> spam = filter::ParseFilter("label = spam");
  ASSERT_TRUE(spam.ok());
  int next_id = 300, checked = 0, on_device = 0;
  for (int step = 0; step < 30; ++step) {
    std::vector<Operation> ops;
    for (int n = 1 + static_cast<int>(rng() % 40); n > 0; --n) {
      const int what = static_cast<int>(rng() % 10);
      const std::string old_id = absl::StrCat("d", rng() % next_id);
      if (what < 4) {
        ops.push_back(
            Operation::Index(WithLabel(rng, RandomDocument(rng, absl::StrCat("d", next_id++)))));
        model.Put(ops.back().document);
      } else if (what < 7) {
        ops.push_back(Operation::Index(WithLabel(rng, RandomDocument(rng, old_id))));
        model.Put(ops.back().document);
      } else {
        ops.push_back(Operation::Delete(old_id));
        model.Remove(old_id);
      }
    }
    ASSERT_TRUE(live->Write(ops).ok());
    ASSERT_TRUE(live->Refresh().ok());
    if (step % 5 == 2) {
      ASSERT_TRUE(live->MaybeMerge().ok());
    } else if (step % 7 == 6) {
      ASSERT_TRUE(live->ForceMerge(1 + rng() % 2).ok());
    }
    std::shared_ptr<const Snapshot> snapshot = live->snapshot();
    for (const SegmentView& v : snapshot->segments()) {
      ASSERT_TRUE(v.segment->device_error().ok()) << v.segment->device_error();
      on_device += v.segment->device_engine() != nullptr;
    }

    const std::string fresh_dir = absl::StrCat(tmp.path(), "/fresh", step);
    ASSERT_TRUE(BuildDocuments(model.Live(), fresh_dir, "pfor", kAttributes).ok());
    absl::StatusOr<std::shared_ptr<Segment>> fresh = Segment::Open(fresh_dir, "fresh", {});
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    absl::StatusOr<filter::Bitmap> fresh_spam =
        filter::EvaluateFilter(*spam, *(*fresh)->index().attributes());
    ASSERT_TRUE(fresh_spam.ok()) << fresh_spam.status();

    std::vector<index::Query> queries, fresh_queries;
    for (int q = 0; q < 24; ++q) {
      index::Query query = RandomQuery(rng);
      index::Query on_fresh = query;
      if (q % 4 == 3) {
        query.filter_expression = std::make_shared<const filter::FilterNode>(*spam);
        on_fresh.filter = std::make_shared<const filter::Bitmap>(*fresh_spam);
      }
      queries.push_back(std::move(query));
      fresh_queries.push_back(std::move(on_fresh));
    }
    std::vector<index::PreparedQuery> prepared;
    for (const index::Query& q : queries) {
      absl::StatusOr<index::PreparedQuery> p = index::PreparedQuery::Prepare(**base, q);
      ASSERT_TRUE(p.ok()) << p.status();
      prepared.push_back(*std::move(p));
    }
    std::vector<const index::PreparedQuery*> pointers;
    for (const index::PreparedQuery& p : prepared) pointers.push_back(&p);
    std::vector<absl::StatusOr<index::SearchResult>> batch = gpu->SearchBatch(pointers, {{}});
    ASSERT_EQ(batch.size(), queries.size());
    for (size_t q = 0; q < queries.size(); ++q) {
      absl::StatusOr<index::SearchResult> want = (*fresh)->engine().Search(fresh_queries[q], {});
      ASSERT_TRUE(want.ok()) << want.status();
      const Ranked expected = RankedIds(*want, (*fresh)->index());
      absl::StatusOr<index::SearchResult> alone = gpu->Search(prepared[q], {});
      ASSERT_TRUE(alone.ok()) << alone.status();
      ASSERT_TRUE(batch[q].ok()) << batch[q].status();
      ASSERT_EQ(RankedIds(*alone, **base), expected)
          << "step " << step << " query " << q << " alone";
      ASSERT_EQ(RankedIds(*batch[q], **base), expected)
          << "step " << step << " query " << q << " in a batch";
      ++checked;
    }
  }
  EXPECT_EQ(checked, 30 * 24);
  EXPECT_GT(on_device, 0);
  EXPECT_GT(engines_created, 1);
}

// A larger index whose built segment takes thousands of deletes over many refreshes while
// background merges run: the GPU's batches (deletes as a bitmap in the batch kernels, norms of
// the live average length, counts of live documents carried from snapshot to snapshot) against
// the CPU engine on the same snapshot, then against a fresh build.
TEST_F(LiveGpuLargeTest, ABuiltSegmentWithThousandsOfDeletesAnswersAsTheCpu) {
  std::mt19937 rng(11);
  base::TempDir tmp;
  const std::string dir = tmp.path() + "/live";
  const testing::TextShape shape{.max_words = 60, .p = 0.02, .vocabulary = 400};
  testing::LiveModel model;
  std::vector<Document> initial;
  for (int i = 0; i < 20000; ++i) {
    initial.push_back(RandomDocument(rng, absl::StrCat("d", i), shape));
    model.Put(initial.back());
  }
  ASSERT_TRUE(BuildDocuments(initial, dir).ok());
  int engines_created = 0;
  LiveIndexOptions options;
  options.refresh_interval = absl::ZeroDuration();
  options.merge_bytes_per_second = 0;  // background merges on, unpaced
  options.device.min_docs = 5000;      // ".", and merged segments as large, on the GPU
  options.device.create = GpuEngines(engines_created);
  absl::StatusOr<std::unique_ptr<LiveIndex>> opened = LiveIndex::Open(dir, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::shared_ptr<LiveIndex> live = *std::move(opened);
  absl::StatusOr<std::unique_ptr<index::Index>> base = index::Index::Open(dir);
  ASSERT_TRUE(base.ok()) << base.status();
  const LiveEngine gpu(live, **base, LiveEngine::Where::kDevice);
  const LiveEngine cpu(live, **base);

  std::vector<index::PreparedQuery> queries;
  for (int q = 0; q < 300; ++q) {
    index::Query query;
    for (int t = 1 + static_cast<int>(rng() % 3); t > 0; --t) {
      query.terms.push_back({absl::StrCat("w", rng() % 120), 1.0f});
    }
    query.mode = q % 2 == 0 ? index::QueryMode::kAnd : index::QueryMode::kOr;
    query.k = 10;
    absl::StatusOr<index::PreparedQuery> p = index::PreparedQuery::Prepare(**base, query);
    ASSERT_TRUE(p.ok()) << p.status();
    queries.push_back(*std::move(p));
  }
  std::vector<const index::PreparedQuery*> pointers;
  for (const index::PreparedQuery& p : queries) pointers.push_back(&p);
  int next_id = 20000;
  for (int step = 0; step < 12; ++step) {
    std::vector<Operation> ops;
    for (int n = 0; n < 400; ++n) {
      const std::string id =
          n % 2 == 0 ? absl::StrCat("d", rng() % 20000) : absl::StrCat("d", next_id++);
      ops.push_back(Operation::Index(RandomDocument(rng, id, shape)));
      model.Put(ops.back().document);
    }
    ASSERT_TRUE(live->Write(ops).ok());
    ASSERT_TRUE(live->Refresh().ok());
    // One snapshot for both engines' answers; a merge may publish another meanwhile, so the
    // answers are compared by external id.
    std::vector<absl::StatusOr<index::SearchResult>> batch = gpu.SearchBatch(pointers, {{}});
    for (size_t q = 0; q < queries.size(); ++q) {
      absl::StatusOr<index::SearchResult> want = cpu.Search(queries[q], {});
      ASSERT_TRUE(want.ok() && batch[q].ok()) << want.status() << batch[q].status();
      ASSERT_EQ(RankedIds(*batch[q], **base), RankedIds(*want, **base))
          << "step " << step << " query " << q;
    }
  }
  ASSERT_TRUE(live->ForceMerge(2).ok());
  const std::string fresh_dir = tmp.path() + "/fresh";
  ASSERT_TRUE(BuildDocuments(model.Live(), fresh_dir).ok());
  absl::StatusOr<std::shared_ptr<Segment>> fresh = Segment::Open(fresh_dir, "fresh", {});
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  std::vector<absl::StatusOr<index::SearchResult>> batch = gpu.SearchBatch(pointers, {{}});
  for (size_t q = 0; q < queries.size(); ++q) {
    absl::StatusOr<index::SearchResult> want = (*fresh)->engine().Search(queries[q].query(), {});
    ASSERT_TRUE(want.ok() && batch[q].ok());
    ASSERT_EQ(RankedIds(*batch[q], **base), RankedIds(*want, (*fresh)->index())) << "query " << q;
  }
  EXPECT_GE(engines_created, 2);
}

INSTANTIATE_TEST_SUITE_P(Segments, LiveGpuTest,
                         ::testing::Values(Where{"all", 0}, Where{"larger", 150}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem::live
