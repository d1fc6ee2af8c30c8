#include "base/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "gtest/gtest.h"

namespace tandem::base {
namespace {

constexpr size_t kMiB = size_t{1} << 20;

TEST(HugePagesTest, FindsTheMappingThatHoldsAnAddress) {
  // 8 MiB of fresh memory without huge pages: found, and none of it in huge pages.
  const size_t bytes = 8 * kMiB;
  void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(p, MAP_FAILED);
#ifdef MADV_NOHUGEPAGE
  ::madvise(p, bytes, MADV_NOHUGEPAGE);
#endif
  std::memset(p, 1, bytes);
  std::optional<uint64_t> huge = HugePageBytes(p);
  ASSERT_TRUE(huge.has_value());
  EXPECT_EQ(*huge, 0u);
  // An address inside it, not only its start.
  EXPECT_EQ(HugePageBytes(static_cast<char*>(p) + bytes - 1), huge);
  ASSERT_EQ(::munmap(p, bytes), 0);
  // Gone: no mapping holds it any more (the range is not reused in between by this thread).
  EXPECT_FALSE(HugePageBytes(p).has_value());
}

TEST(HugePagesTest, CountsHugePagesWhereTheKernelGivesThem) {
  const std::string mode = TransparentHugePagesMode();
  if (mode != "always" && mode != "madvise") GTEST_SKIP() << "THP is " << mode;
  // 2 MiB-aligned memory advised MADV_HUGEPAGE and written: at most all of it in huge pages, and
  // a whole number of them. (The kernel may still decline, when memory is fragmented.)
  const size_t bytes = 8 * kMiB;
  void* raw =
      ::mmap(nullptr, bytes + 2 * kMiB, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(raw, MAP_FAILED);
  auto* p = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(raw) + 2 * kMiB - 1) &
                                    ~uintptr_t{2 * kMiB - 1});
  ::madvise(p, bytes, MADV_HUGEPAGE);
  std::memset(p, 1, bytes);
  std::optional<uint64_t> huge = HugePageBytes(p);
  ASSERT_TRUE(huge.has_value());
  EXPECT_LE(*huge, bytes);
  EXPECT_EQ(*huge % (2 * kMiB), 0u);
  ::munmap(raw, bytes + 2 * kMiB);
}

TEST(HugePagesTest, ModeIsOneOfTheKernelsWords) {
  const std::string mode = TransparentHugePagesMode();
  EXPECT_TRUE(mode == "always" || mode == "madvise" || mode == "never" || mode == "unavailable")
      << mode;
}

}  // namespace
}  // namespace tandem::base
