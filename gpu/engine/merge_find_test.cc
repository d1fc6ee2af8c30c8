// The recursive Parallel Merge Find (gpu/query_ops.h MergeFind, section 7) against std::lower_bound
// on random sorted lists: every level count 0..4, list-length ratios from 1:1 to 1:1000, lengths
// at and around the splitter strides (32, 1024, 32768), empty and one-element lists, elements past
// either end. Skips without a device.
#include <algorithm>
#include <cstdint>
#include <random>
#include <set>
#include <vector>

#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gpu/device/device_test_util.h"
#include "gpu/engine/query_ops.h"
#include "gtest/gtest.h"

namespace tandem::gpu {
namespace {

// `n` distinct sorted values in [lo, hi).
std::vector<uint32_t> SortedDistinct(uint32_t n, uint32_t lo, uint32_t hi, std::mt19937& rng) {
  std::set<uint32_t> values;
  while (values.size() < n) values.insert(lo + rng() % (hi - lo));
  return {values.begin(), values.end()};
}

class MergeFindTest : public ArenaTest<16u << 20> {
 protected:
  // Runs MergeFind at every level count and compares with the host.
  void Check(const std::vector<uint32_t>& a, const std::vector<uint32_t>& b) {
    const uint32_t m = a.size(), n = b.size();
    auto d_a = DeviceBuffer<uint32_t>::Allocate(std::max(m, 1u));
    auto d_b = DeviceBuffer<uint32_t>::Allocate(std::max(n, 1u));
    auto d_lb = DeviceBuffer<uint32_t>::Allocate(std::max(m, 1u));
    auto d_found = DeviceBuffer<uint32_t>::Allocate(std::max(m, 1u));
    ASSERT_TRUE(d_a.ok() && d_b.ok() && d_lb.ok() && d_found.ok());
    if (m > 0) {
      ASSERT_TRUE(d_a->CopyFromHost(a.data(), m, stream_.get()).ok());
    }
    if (n > 0) {
      ASSERT_TRUE(d_b->CopyFromHost(b.data(), n, stream_.get()).ok());
    }
    std::vector<uint32_t> lb(m), found(m);
    for (int levels = 0; levels <= kMaxMergeFindLevels; ++levels) {
      ScratchArena arena(arena_memory_.data(), kArenaBytes);
      ASSERT_TRUE(MergeFind(d_a->data(), m, d_b->data(), n, levels, d_lb->data(), d_found->data(),
                            arena, stream_.get())
                      .ok());
      if (m == 0) continue;
      ASSERT_TRUE(d_lb->CopyToHost(lb.data(), m, stream_.get()).ok());
      ASSERT_TRUE(d_found->CopyToHost(found.data(), m, stream_.get()).ok());
      ASSERT_EQ(cudaStreamSynchronize(stream_.get()), cudaSuccess);
      for (uint32_t i = 0; i < m; ++i) {
        const uint32_t expected = std::lower_bound(b.begin(), b.end(), a[i]) - b.begin();
        ASSERT_EQ(lb[i], expected) << "m " << m << " n " << n << " levels " << levels << " i " << i;
        ASSERT_EQ(found[i], expected < n && b[expected] == a[i] ? 1u : 0u)
            << "m " << m << " n " << n << " levels " << levels << " i " << i;
      }
    }
  }
};

TEST_F(MergeFindTest, MatchesLowerBoundForEveryLevelAndRatio) {
  std::mt19937 rng(3);
  for (uint32_t m : {1u, 31u, 32u, 33u, 1023u, 1024u, 1025u, 32769u, 100000u}) {
    for (uint32_t ratio : {1u, 4u, 50u, 1000u}) {
      const uint32_t n = std::min<uint64_t>(uint64_t{m} * ratio, 2'000'000);
      const uint32_t universe = 4 * std::max(m, n) + 100;
      Check(SortedDistinct(m, 0, universe, rng), SortedDistinct(n, 0, universe, rng));
    }
  }
}

TEST_F(MergeFindTest, ShorterSecondListAndDisjointRanges) {
  std::mt19937 rng(4);
  Check(SortedDistinct(50000, 0, 200000, rng), SortedDistinct(700, 0, 200000, rng));
  Check(SortedDistinct(5000, 0, 10000, rng), SortedDistinct(5000, 20000, 30000, rng));  // all after
  Check(SortedDistinct(5000, 20000, 30000, rng), SortedDistinct(5000, 0, 10000, rng));  // none
  // a ⊂ b: everything found.
  std::vector<uint32_t> b = SortedDistinct(40000, 0, 80000, rng);
  std::vector<uint32_t> a;
  for (size_t i = 0; i < b.size(); i += 3) a.push_back(b[i]);
  Check(a, b);
}

TEST_F(MergeFindTest, EmptyListsAndBadLevels) {
  std::mt19937 rng(5);
  Check({}, SortedDistinct(100, 0, 1000, rng));
  Check(SortedDistinct(100, 0, 1000, rng), {});
  ScratchArena arena(arena_memory_.data(), kArenaBytes);
  auto d = DeviceBuffer<uint32_t>::Allocate(4);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(MergeFind(d->data(), 1, d->data(), 1, kMaxMergeFindLevels + 1, d->data(), d->data(),
                      arena, stream_.get())
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      MergeFind(d->data(), 1, d->data(), 1, -1, d->data(), d->data(), arena, stream_.get()).code(),
      absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem::gpu
