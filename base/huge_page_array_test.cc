#include "base/huge_page_array.h"

#include <cstddef>
#include <cstdint>
#include <utility>

#include "gtest/gtest.h"

namespace tandem {
namespace {

TEST(HugePageArrayTest, EmptyHoldsNothing) {
  HugePageArray<float> a;
  EXPECT_EQ(a.size(), 0u);
  EXPECT_EQ(a.data(), nullptr);
  HugePageArray<float> b(0);
  EXPECT_EQ(b.size(), 0u);
}

TEST(HugePageArrayTest, SmallAndLargeHoldEveryElement) {
  // Below 2 MiB (ordinary alignment), exactly 2 MiB, and beyond it with a partial last page.
  for (size_t n :
       {size_t{1}, size_t{1000}, HugePageArray<uint32_t>::kHugePageBytes / 4, size_t{3} << 20}) {
    HugePageArray<uint32_t> a(n);
    ASSERT_EQ(a.size(), n);
    ASSERT_NE(a.data(), nullptr);
    const size_t align = n * 4 >= HugePageArray<uint32_t>::kHugePageBytes
                             ? HugePageArray<uint32_t>::kHugePageBytes
                             : alignof(std::max_align_t);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(a.data()) % align, 0u) << n;
    for (size_t i = 0; i < n; ++i) a[i] = static_cast<uint32_t>(i * 2654435761u);
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], static_cast<uint32_t>(i * 2654435761u)) << i;
  }
}

TEST(HugePageArrayTest, MovesOwnership) {
  HugePageArray<float> a(10);
  a[9] = 1.5f;
  const float* data = a.data();
  HugePageArray<float> b = std::move(a);
  EXPECT_EQ(b.data(), data);
  EXPECT_EQ(b[9], 1.5f);
  EXPECT_EQ(a.size(), 0u);  // NOLINT(bugprone-use-after-move): moved-from is empty
  EXPECT_EQ(a.data(), nullptr);
  a = HugePageArray<float>(3);
  EXPECT_EQ(a.size(), 3u);
}

}  // namespace
}  // namespace tandem
