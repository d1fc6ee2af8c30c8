#include "server/engine_factory.h"

#include <initializer_list>
#include <iterator>
#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "filter/filter.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

TEST(EngineFactoryTest, CpuAlwaysPresentAndGpuOptional) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex({{"a", "b"}, {"b"}}, dir.path() + "/i", "pfor").ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok()) << index.status();
  auto off = CreateEngines(**index, {.gpu = GpuMode::kOff});
  ASSERT_TRUE(off.ok());
  EXPECT_EQ(off->cpu->name(), "cpu");
  EXPECT_EQ(off->gpu, nullptr);
  auto automatic = CreateEngines(**index, {.gpu = GpuMode::kAuto});
  ASSERT_TRUE(automatic.ok());
  EXPECT_NE(automatic->cpu, nullptr);
  EXPECT_FALSE(automatic->summary.empty());
  if (automatic->gpu == nullptr) {
    // Without a usable GPU engine, requiring one fails with a reason.
    auto required = CreateEngines(**index, {.gpu = GpuMode::kRequired});
    EXPECT_EQ(required.status().code(), absl::StatusCode::kFailedPrecondition);
    EXPECT_FALSE(automatic->gpu_caches.warm);
    return;
  }
  // With one, its device caches are reachable for a node that loads a new index: warmed lists
  // are resident, the hottest first, and the cache grows but never shrinks.
  const EngineSet::GpuCaches& caches = automatic->gpu_caches;
  ASSERT_TRUE(caches.hottest_terms && caches.warm && caches.capacity_bytes && caches.grow);
  EXPECT_TRUE(caches.hottest_terms(10).empty());
  absl::StatusOr<uint64_t> warmed = caches.warm({"b", "a", "absent"}, absl::Seconds(60));
  ASSERT_TRUE(warmed.ok()) << warmed.status();
  EXPECT_EQ(*warmed, 2u);
  EXPECT_EQ(caches.hottest_terms(10), (std::vector<std::string>{"b", "a"}));
  const uint64_t capacity = caches.capacity_bytes();
  EXPECT_GT(capacity, 0u);
  ASSERT_TRUE(caches.grow(capacity / 2).ok());
  EXPECT_EQ(caches.capacity_bytes(), capacity);
  auto within = CreateEngines(
      **index,
      {.gpu = GpuMode::kAuto, .gpu_cache_bytes = uint64_t{1} << 50, .gpu_cache_within_free = true});
  ASSERT_TRUE(within.ok()) << within.status();
  ASSERT_NE(within->gpu, nullptr) << within->summary;  // a cache held to what is free
  EXPECT_LT(within->gpu_caches.capacity_bytes(), uint64_t{1} << 50);
}

// The node's filter evaluator gives EvaluateFilter's bitmaps and errors whichever processor runs
// a filter: the GPU for every filter (min words 0), for none, or the CPU alone.
TEST(EngineFactoryTest, FiltersOnEitherProcessor) {
  testing::TempDir dir;
  constexpr uint32_t kDocs = 20000;
  std::mt19937_64 rng(5);
  std::vector<uint32_t> part(kDocs);
  for (uint32_t& p : part) p = static_cast<uint32_t>(rng() % 40);
  filter::AttributeField field;
  field.name = "part";
  for (int v = 0; v < 40; ++v) field.values.push_back(absl::StrCat("p", 10 + v));
  field.columns = *filter::BuildBitmaps(filter::BitmapCodec::kPlwah, kDocs, part);
  std::vector<filter::AttributeField> fields;
  fields.push_back(std::move(field));
  auto attributes =
      filter::AttributeIndex::Create(kDocs, filter::BitmapCodec::kPlwah, std::move(fields));
  ASSERT_TRUE(attributes.ok()) << attributes.status();
  ASSERT_TRUE(testing::BuildIndex(std::vector<std::vector<std::string>>(kDocs, {"a"}),
                                  dir.path() + "/i", "pfor", *std::move(attributes))
                  .ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok()) << index.status();
  for (const uint64_t min_words : {uint64_t{0}, uint64_t{1} << 40}) {
    for (const GpuMode mode : {GpuMode::kAuto, GpuMode::kOff}) {
      auto set = CreateEngines(**index, {.gpu = mode, .gpu_filter_min_words = min_words});
      ASSERT_TRUE(set.ok()) << set.status();
      ASSERT_TRUE(set->filters);
      if (set->gpu != nullptr) {
        EXPECT_THAT(set->summary, ::testing::HasSubstr("evaluated on the GPU")) << set->summary;
      }
      for (int i = 0; i < 30; ++i) {
        std::vector<std::string> values;
        for (int v = 0, n = 1 + int(rng() % 20); v < n; ++v) {
          values.push_back(absl::StrCat("p", 10 + rng() % 40));
        }
        const filter::FilterNode filter =
            i % 3 == 0 ? filter::FilterNode::Not(filter::FilterNode::In("part", values))
                       : filter::FilterNode::In("part", values);
        auto expected = filter::EvaluateFilter(filter, *(*index)->attributes());
        auto got = set->filters(filter);
        ASSERT_TRUE(got.ok()) << got.status();
        EXPECT_TRUE(got->words() == expected->words()) << filter::FilterToText(filter);
      }
      const filter::FilterNode unknown = filter::FilterNode::Term("part", "nope");
      EXPECT_EQ(set->filters(unknown).status(),
                filter::EvaluateFilter(unknown, *(*index)->attributes()).status());
    }
  }
  // Without attributes there is nothing to filter on.
  ASSERT_TRUE(testing::BuildIndex({{"a"}}, dir.path() + "/plain", "pfor").ok());
  auto plain = index::Index::Open(dir.path() + "/plain");
  ASSERT_TRUE(plain.ok());
  auto set = CreateEngines(**plain, {.gpu = GpuMode::kAuto});
  ASSERT_TRUE(set.ok());
  EXPECT_FALSE(set->filters);
}

// Each of `values` (two or more) reads back as itself from its flag text; `bad` is refused with
// `want_error`.
template <typename Value>
void ExpectFlagText(std::initializer_list<Value> values, const std::string& bad,
                    const std::string& want_error) {
  std::string error;
  for (Value value : values) {
    // Starts from another value, so that a parse that sets nothing fails.
    Value parsed = value == *values.begin() ? *std::next(values.begin()) : *values.begin();
    EXPECT_TRUE(AbslParseFlag(AbslUnparseFlag(value), &parsed, &error)) << error;
    EXPECT_EQ(parsed, value);
  }
  Value parsed;
  EXPECT_FALSE(AbslParseFlag(bad, &parsed, &error));
  EXPECT_EQ(error, want_error);
}

TEST(EngineFactoryTest, GpuWaitNamesAndContexts) {
  ExpectFlagText({GpuWait::kAuto, GpuWait::kSpin, GpuWait::kYield, GpuWait::kBlocking}, "sleep",
                 "must be auto, spin, yield or blocking, got 'sleep'");
  ExpectFlagText({GpuMode::kAuto, GpuMode::kOff, GpuMode::kRequired}, "maybe",
                 "must be auto, off or required, got 'maybe'");

  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex({{"a", "b"}, {"b"}}, dir.path() + "/i", "pfor").ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok()) << index.status();
  EXPECT_EQ(CreateEngines(**index, {.gpu = GpuMode::kAuto, .gpu_contexts = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  // The batch options are checked whether or not a GPU engine is created; off, they are not used.
  EngineOptions bad_batch{.gpu = GpuMode::kAuto};
  bad_batch.gpu_batching.threshold = 0;
  EXPECT_EQ(CreateEngines(**index, bad_batch).status().code(), absl::StatusCode::kInvalidArgument);
  bad_batch.gpu_batch = false;
  EXPECT_TRUE(CreateEngines(**index, bad_batch).ok());
  // Compressed search forms: a GPU engine, when there is one, is created with them.
  EngineOptions compressed{.gpu = GpuMode::kAuto};
  compressed.gpu_batch_compressed = true;
  auto with_compressed = CreateEngines(**index, compressed);
  ASSERT_TRUE(with_compressed.ok()) << with_compressed.status();
  EXPECT_NE(with_compressed->cpu, nullptr);
  // Blocking waits and eight contexts: a GPU engine, when there is one, still answers.
  auto engines = CreateEngines(
      **index, {.gpu = GpuMode::kAuto, .gpu_contexts = 8, .gpu_wait = GpuWait::kBlocking});
  ASSERT_TRUE(engines.ok()) << engines.status();
  if (engines->gpu != nullptr) {
    index::Query query;
    query.terms = {{.term = "b"}};
    query.mode = index::QueryMode::kOr;
    query.k = 10;
    auto result = engines->gpu->Search(query, {});
    ASSERT_TRUE(result.ok()) << result.status();
    EXPECT_EQ(result->hits.size(), 2u);
  }
}

}  // namespace
}  // namespace tandem::server

namespace tandem::server {
namespace {

TEST(EngineFactoryTest, GpuDevicesFlag) {
  GpuDevices devices;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("0,1,3", &devices, &error)) << error;
  EXPECT_FALSE(devices.all);
  EXPECT_EQ(devices.devices, (std::vector<int>{0, 1, 3}));
  EXPECT_EQ(AbslUnparseFlag(devices), "0,1,3");
  EXPECT_EQ(ResolveGpuDevices(devices), (std::vector<int>{0, 1, 3}));
  ASSERT_TRUE(AbslParseFlag("all", &devices, &error));
  EXPECT_TRUE(devices.all);
  EXPECT_EQ(AbslUnparseFlag(devices), "all");
  EXPECT_GE(ResolveGpuDevices(devices).size(), 1u);  // every visible device, or device 0
  ASSERT_TRUE(AbslParseFlag("", &devices, &error));
  EXPECT_EQ(ResolveGpuDevices(devices), std::vector<int>{0});
  EXPECT_FALSE(AbslParseFlag("0,x", &devices, &error));
  EXPECT_NE(error.find("'x'"), std::string::npos) << error;
  EXPECT_FALSE(AbslParseFlag("-1", &devices, &error));
  EXPECT_FALSE(AbslParseFlag("1,1", &devices, &error));
  EXPECT_EQ(error, "device 1 is listed twice");
}

TEST(EngineFactoryTest, AMissingGpuIsNamed) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex({{"a", "b"}, {"b"}}, dir.path() + "/i", "pfor").ok());
  auto index = index::Index::Open(dir.path() + "/i");
  ASSERT_TRUE(index.ok()) << index.status();
  // Device 999 exists on no machine: required fails naming it (or, in a build without CUDA,
  // saying so); auto serves on the CPU and says why.
  EngineOptions options{.gpu = GpuMode::kRequired, .gpu_devices = {.devices = {999}}};
  absl::StatusOr<EngineSet> required = CreateEngines(**index, options);
  ASSERT_EQ(required.status().code(), absl::StatusCode::kFailedPrecondition);
  if (BuiltWithGpu()) {
    EXPECT_NE(required.status().message().find("CUDA device"), std::string::npos)
        << required.status().message();
  }
  options.gpu = GpuMode::kAuto;
  absl::StatusOr<EngineSet> automatic = CreateEngines(**index, options);
  ASSERT_TRUE(automatic.ok());
  EXPECT_EQ(automatic->gpu, nullptr);
  EXPECT_EQ(automatic->gpu_count, 0);
  EXPECT_TRUE(automatic->gpu_batching.empty());
}

}  // namespace
}  // namespace tandem::server
