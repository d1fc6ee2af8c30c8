#include "filter/filter_cache.h"

#include <malloc.h>

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/memory_breaker.h"
#include "base/sanitizers.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::filter {
namespace {

using ::testing::HasSubstr;

constexpr uint32_t kDocs = 20'000;

// One keyword field, "tag": document d has the value "vNNNNN" of d.
std::unique_ptr<AttributeIndex> Tags() {
  std::vector<uint32_t> value_of_doc(kDocs);
  AttributeField tag;
  tag.name = "tag";
  for (uint32_t d = 0; d < kDocs; ++d) {
    value_of_doc[d] = d;
    tag.values.push_back(absl::StrFormat("v%05u", d));
  }
  tag.columns = *BuildBitmaps(BitmapCodec::kPlwah, kDocs, value_of_doc);
  std::vector<AttributeField> fields;
  fields.push_back(std::move(tag));
  return *AttributeIndex::Create(kDocs, BitmapCodec::kPlwah, std::move(fields));
}

// "tag IN (...)" of `values` values drawn by `rng`: distinct filters, as a client that never
// repeats one sends them.
FilterNode InFilter(std::mt19937& rng, int values) {
  std::uniform_int_distribution<uint32_t> doc(0, kDocs - 1);
  std::string text = "tag IN (";
  for (int i = 0; i < values; ++i) absl::StrAppendFormat(&text, "%sv%05u", i ? ", " : "", doc(rng));
  return *ParseFilter(text + ")");
}

uint64_t HeapInUse() {
  const struct mallinfo2 info = mallinfo2();
  return info.uordblks + info.hblkhd;
}

TEST(FilterCacheTest, AnIndexWithoutAttributesRefusesEveryFilter) {
  FilterCache cache(nullptr);
  auto docs = cache.Evaluate(*ParseFilter("tag = v00001"));
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(docs.status().message(), HasSubstr("stores no attributes"));
}

TEST(FilterCacheTest, AFullBreakerKeepsFiltersOutButStillAnswers) {
  const auto attributes = Tags();
  base::MemoryBreaker breaker(1);
  base::MemoryBreaker::Account& account = breaker.AddAccount("filter_cache");
  FilterCache cache(attributes.get(), nullptr, {.breaker = &account});
  for (int round = 0; round < 2; ++round) {
    auto docs = cache.Evaluate(*ParseFilter("tag IN (v00001, v00007)"));
    ASSERT_TRUE(docs.ok()) << docs.status();
    EXPECT_EQ((*docs)->Rows(), (std::vector<uint32_t>{1, 7}));
  }
  const FilterCacheStats stats = cache.stats();
  EXPECT_EQ(stats.entries, 0u);
  EXPECT_EQ(stats.bytes, 0u);
  EXPECT_EQ(stats.misses, 2u);
  EXPECT_EQ(stats.hits, 0u);
  EXPECT_EQ(breaker.used(), 0u);
}

TEST(FilterCacheTest, TheBreakerFullOfOthersBytesMakesTheCacheEvictItsOwn) {
  const auto attributes = Tags();
  std::mt19937 rng(1);
  base::MemoryBreaker breaker(uint64_t{1} << 20);
  base::MemoryBreaker::Account& account = breaker.AddAccount("filter_cache");
  base::MemoryBreaker::Account& responses = breaker.AddAccount("responses");
  FilterCache cache(attributes.get(), nullptr, {.breaker = &account});
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(cache.Evaluate(InFilter(rng, 100)).ok());
  const FilterCacheStats full = cache.stats();
  EXPECT_GT(full.entries, 20u);
  EXPECT_LE(breaker.used(), breaker.limit());
  EXPECT_EQ(account.used(), full.bytes);
  // Queries take what the breaker has left: new filters are cached in place of the least recently
  // used ones, and the breaker never passes its limit.
  ASSERT_TRUE(responses.TryReserve(breaker.limit() - breaker.used()));
  const FilterNode newest = InFilter(rng, 100);
  ASSERT_TRUE(cache.Evaluate(newest).ok());
  const FilterCacheStats after = cache.stats();
  EXPECT_LE(after.entries, full.entries);
  EXPECT_LE(after.bytes, full.bytes);
  EXPECT_EQ(account.used(), after.bytes);
  EXPECT_EQ(breaker.used(), breaker.limit() - (full.bytes - after.bytes));
  ASSERT_TRUE(cache.Evaluate(newest).ok());
  EXPECT_EQ(cache.stats().hits, 1u) << "the newest filter was cached";
  // A query that needs the room gets it from the cache, least recently used entries first.
  ASSERT_TRUE(responses.ReserveReclaiming(after.bytes / 2));
  EXPECT_LT(cache.stats().bytes, after.bytes);
  EXPECT_EQ(account.used(), cache.stats().bytes);
  EXPECT_LE(breaker.used(), breaker.limit());
  ASSERT_TRUE(cache.Evaluate(newest).ok());
  EXPECT_EQ(cache.stats().hits, 2u) << "the most recently used entry stayed";
}

TEST(FilterCacheTest, BudgetEvictsLeastRecentlyUsedFirst) {
  const auto attributes = Tags();
  std::mt19937 rng(2);
  const FilterNode first = InFilter(rng, 500);
  std::vector<FilterNode> others;
  for (int i = 0; i < 50; ++i) others.push_back(InFilter(rng, 500));
  FilterCache cache(attributes.get(), nullptr, {.budget_bytes = 64 << 10});
  ASSERT_TRUE(cache.Evaluate(first).ok());
  for (const FilterNode& other : others) {
    ASSERT_TRUE(cache.Evaluate(other).ok());
    ASSERT_TRUE(cache.Evaluate(first).ok());  // kept fresh
  }
  const FilterCacheStats stats = cache.stats();
  EXPECT_LE(stats.bytes, uint64_t{64} << 10);
  EXPECT_LT(stats.entries, 20u);
  EXPECT_EQ(stats.hits, 50u) << "the filter used between every other stays cached";
}

// The bytes counted cover what the entries hold: the heap grows by no more than the cache says
// it holds, for large keys (1,000-value IN filters) and for small ones.
TEST(FilterCacheTest, CountedBytesCoverTheHeapTheEntriesHold) {
  if (base::kAddressSanitizer) GTEST_SKIP() << "ASan's allocator pads and quarantines";
  const auto attributes = Tags();
  for (const int values : {1000, 2}) {
    SCOPED_TRACE(values);
    std::mt19937 rng(values);
    std::vector<FilterNode> filters;
    for (int i = 0; i < (values > 100 ? 300 : 5000); ++i) filters.push_back(InFilter(rng, values));
    auto cache = std::make_unique<FilterCache>(
        attributes.get(), nullptr, FilterCacheOptions{.budget_bytes = uint64_t{1} << 30});
    malloc_trim(0);
    const uint64_t before = HeapInUse();
    for (const FilterNode& filter : filters) ASSERT_TRUE(cache->Evaluate(filter).ok());
    malloc_trim(0);
    const uint64_t grown = HeapInUse() - before;
    const FilterCacheStats stats = cache->stats();
    EXPECT_EQ(stats.misses, filters.size());
    EXPECT_GE(stats.bytes, grown) << "counted " << stats.bytes << ", heap grew " << grown;
    EXPECT_LE(stats.bytes, grown * 3 / 2) << "counted " << stats.bytes << ", heap grew " << grown;
    cache.reset();
  }
}

}  // namespace
}  // namespace tandem::filter
