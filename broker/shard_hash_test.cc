#include "broker/shard_hash.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace tandem::broker {
namespace {

// The published FNV-1a 64 test vectors: a change to the hash (which would send written ids to
// other shards than the ones holding them) fails here.
TEST(ShardHash, Fnv1a64GivesThePublishedValues) {
  EXPECT_EQ(Fnv1a64(""), 0xcbf29ce484222325ULL);
  EXPECT_EQ(Fnv1a64("a"), 0xaf63dc4c8601ec8cULL);
  EXPECT_EQ(Fnv1a64("foobar"), 0x85944171f73967e8ULL);
  // Bytes, not chars: a byte above 0x7f is not sign-extended.
  EXPECT_EQ(Fnv1a64("\xff"), (0xcbf29ce484222325ULL ^ 0xffULL) * 0x100000001b3ULL);
}

TEST(ShardHash, ShardsAreFixedForKnownIds) {
  EXPECT_EQ(ShardOfId("a", 1), 0u);
  EXPECT_EQ(ShardOfId("anything", 0), 0u);  // no shard count: shard 0, never a division by 0
  EXPECT_EQ(ShardOfId("a", 2), 0xaf63dc4c8601ec8cULL % 2);
  EXPECT_EQ(ShardOfId("foobar", 3), 0x85944171f73967e8ULL % 3);
  EXPECT_EQ(ShardOfId("a", 2), 0u);
  EXPECT_EQ(ShardOfId("foobar", 3), 0u);
  EXPECT_EQ(ShardOfId("foobar", 7), 6u);
}

TEST(ShardHash, SpreadsIdsOverShards) {
  std::vector<int> count(4, 0);
  for (int i = 0; i < 4000; ++i) ++count[ShardOfId("d" + std::to_string(i), 4)];
  for (int c : count) {
    EXPECT_GT(c, 800);
    EXPECT_LT(c, 1200);
  }
}

}  // namespace
}  // namespace tandem::broker
