#include "broker/result_cache.h"

#include <string>

#include "gtest/gtest.h"

namespace tandem::broker {
namespace {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

SearchRequest Request(const std::string& text, uint32_t k = 10) {
  SearchRequest r;
  r.set_text(text);
  r.set_k(k);
  return r;
}

SearchResponse Response(float score, const std::string& request_id = "") {
  SearchResponse r;
  r.add_hits()->set_score(score);
  r.set_request_id(request_id);
  return r;
}

const absl::Time kT0 = absl::FromUnixSeconds(1000);

TEST(ResultCache, HitWithinTtlMissAfter) {
  ResultCache cache({.max_entries = 10, .max_bytes = 1 << 20, .ttl = absl::Seconds(5)});
  const std::string key = ResultCache::Key(Request("a b"), 1);
  EXPECT_FALSE(cache.Lookup(key, kT0).has_value());
  cache.Insert(key, Response(2.5f, "id-1"), kT0);
  std::optional<SearchResponse> hit = cache.Lookup(key, kT0 + absl::Seconds(4));
  ASSERT_TRUE(hit.has_value());
  EXPECT_EQ(hit->hits(0).score(), 2.5f);
  EXPECT_EQ(hit->request_id(), "");  // not the first caller's id
  EXPECT_FALSE(cache.Lookup(key, kT0 + absl::Seconds(5)).has_value());
  EXPECT_EQ(cache.entries(), 0u);  // the expired entry went
}

TEST(ResultCache, KeyIgnoresRequestIdAndCompletenessButNotTheQuery) {
  SearchRequest a = Request("a b");
  SearchRequest b = a;
  b.set_request_id("x");
  b.set_require_complete(true);
  EXPECT_EQ(ResultCache::Key(a, 1), ResultCache::Key(b, 1));
  EXPECT_NE(ResultCache::Key(a, 1), ResultCache::Key(a, 2));  // another generation
  EXPECT_NE(ResultCache::Key(a, 1), ResultCache::Key(Request("a b", 11), 1));
  SearchRequest c = a;
  c.set_mode(tandem::v1::QUERY_MODE_AND);
  EXPECT_NE(ResultCache::Key(a, 1), ResultCache::Key(c, 1));
  SearchRequest d = a;
  d.mutable_bm25()->set_k1(1.2f);
  EXPECT_NE(ResultCache::Key(a, 1), ResultCache::Key(d, 1));
}

TEST(ResultCache, EvictsLeastRecentlyUsedBeyondEntries) {
  ResultCache cache({.max_entries = 2, .max_bytes = 1 << 20, .ttl = absl::Seconds(60)});
  cache.Insert("a", Response(1), kT0);
  cache.Insert("b", Response(2), kT0);
  ASSERT_TRUE(cache.Lookup("a", kT0).has_value());  // b is now the least recent
  cache.Insert("c", Response(3), kT0);
  EXPECT_TRUE(cache.Lookup("a", kT0).has_value());
  EXPECT_FALSE(cache.Lookup("b", kT0).has_value());
  EXPECT_TRUE(cache.Lookup("c", kT0).has_value());
  EXPECT_EQ(cache.entries(), 2u);
}

TEST(ResultCache, BoundedInBytes) {
  SearchResponse big;
  for (int i = 0; i < 100; ++i) big.add_hits()->set_external_id(std::string(100, 'x'));
  const size_t one = std::string("k0").size() + big.SerializeAsString().size();
  ResultCache cache({.max_entries = 100, .max_bytes = 3 * one, .ttl = absl::Seconds(60)});
  for (int i = 0; i < 10; ++i) cache.Insert("k" + std::to_string(i), big, kT0);
  EXPECT_EQ(cache.entries(), 3u);
  EXPECT_LE(cache.bytes(), 3 * one);
  EXPECT_TRUE(cache.Lookup("k9", kT0).has_value());
  EXPECT_FALSE(cache.Lookup("k0", kT0).has_value());
  // An answer larger than the whole cache is not stored, and evicts nothing.
  ResultCache small({.max_entries = 100, .max_bytes = one / 2, .ttl = absl::Seconds(60)});
  small.Insert("k", big, kT0);
  EXPECT_EQ(small.entries(), 0u);
}

TEST(ResultCache, ReplacingAnEntryKeepsTheByteCount) {
  ResultCache cache({.max_entries = 10, .max_bytes = 1 << 20, .ttl = absl::Seconds(60)});
  cache.Insert("a", Response(1), kT0);
  const size_t bytes = cache.bytes();
  cache.Insert("a", Response(2), kT0);
  EXPECT_EQ(cache.bytes(), bytes);
  EXPECT_EQ(cache.Lookup("a", kT0)->hits(0).score(), 2.0f);
}

TEST(ResultCache, OffStoresNothing) {
  ResultCache cache({.max_entries = 0});
  EXPECT_FALSE(cache.enabled());
  cache.Insert("a", Response(1), kT0);
  EXPECT_FALSE(cache.Lookup("a", kT0).has_value());
}

TEST(ResultCache, ValidateRefusesANonPositiveTtl) {
  EXPECT_FALSE(ResultCache::Validate({.ttl = absl::ZeroDuration()}).ok());
  EXPECT_TRUE(ResultCache::Validate({.max_entries = 0, .ttl = absl::ZeroDuration()}).ok());
  EXPECT_TRUE(ResultCache::Validate({}).ok());
}

}  // namespace
}  // namespace tandem::broker
