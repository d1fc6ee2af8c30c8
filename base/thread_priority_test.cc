#include "base/thread_priority.h"

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::base {
namespace {

using ::testing::HasSubstr;

// Each case runs in a thread of its own: a lowered priority cannot be raised back unprivileged.
template <typename F>
void InThread(F f) {
  std::thread t(f);
  t.join();
}

TEST(ThreadPriorityTest, LowersOnlyTheCallingThread) {
  const absl::StatusOr<int> main_before = ThreadNice();
  ASSERT_TRUE(main_before.ok()) << main_before.status();
  if (*main_before > 16) GTEST_SKIP() << "the test runs at nice " << *main_before;
  InThread([&] {
    const absl::StatusOr<int> before = ThreadNice();
    ASSERT_TRUE(before.ok());
    ASSERT_TRUE(LowerThreadPriority(3).ok());
    const absl::StatusOr<int> after = ThreadNice();
    ASSERT_TRUE(after.ok());
    EXPECT_EQ(*after, *before + 3);
  });
  EXPECT_EQ(*ThreadNice(), *main_before);
}

TEST(ThreadPriorityTest, CapsAtNineteen) {
  InThread([] {
    ASSERT_TRUE(LowerThreadPriority(39).ok());
    EXPECT_EQ(*ThreadNice(), 19);
    ASSERT_TRUE(LowerThreadPriority(5).ok());  // already the lowest: stays there
    EXPECT_EQ(*ThreadNice(), 19);
  });
}

TEST(ThreadPriorityTest, ZeroLevelsChangesNothing) {
  InThread([] {
    const int before = *ThreadNice();
    ASSERT_TRUE(LowerThreadPriority(0).ok());
    EXPECT_EQ(*ThreadNice(), before);
  });
}

TEST(ThreadPriorityTest, RejectsLevelsOutOfRange) {
  InThread([] {
    const int before = *ThreadNice();
    absl::Status status = LowerThreadPriority(-1);
    EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(status.message(), HasSubstr("0 to 39"));
    EXPECT_EQ(LowerThreadPriority(40).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(*ThreadNice(), before);
  });
}

TEST(ThreadPriorityTest, ParsesIdleAndNiceLevels) {
  absl::StatusOr<ThreadPriority> idle = ParseThreadPriority("idle");
  ASSERT_TRUE(idle.ok());
  EXPECT_TRUE(idle->idle);
  EXPECT_EQ(ThreadPriorityName(*idle), "idle");
  absl::StatusOr<ThreadPriority> five = ParseThreadPriority("5");
  ASSERT_TRUE(five.ok());
  EXPECT_FALSE(five->idle);
  EXPECT_EQ(five->nice, 5);
  EXPECT_EQ(ThreadPriorityName(*five), "nice +5");
  EXPECT_TRUE(ParseThreadPriority("0").ok());
  EXPECT_TRUE(ParseThreadPriority("19").ok());
  for (const char* bad : {"20", "-1", "", "low", "5x"}) {
    absl::StatusOr<ThreadPriority> p = ParseThreadPriority(bad);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(p.status().message(), HasSubstr("idle or a number of nice levels 0 to 19"));
  }
}

TEST(ThreadPriorityTest, IdleSchedulesTheCallingThreadOnlyUnderSchedIdle) {
  ASSERT_FALSE(ThreadIsIdle());
  InThread([] {
    ASSERT_TRUE(LowerThreadPriority(ThreadPriority{.idle = true}).ok());
    EXPECT_TRUE(ThreadIsIdle());
  });
  EXPECT_FALSE(ThreadIsIdle());
}

TEST(ThreadPriorityTest, NicePriorityLowersByItsLevels) {
  InThread([] {
    const int before = *ThreadNice();
    if (before > 16) GTEST_SKIP() << "the test runs at nice " << before;
    ASSERT_TRUE(LowerThreadPriority(ThreadPriority{.nice = 2}).ok());
    EXPECT_EQ(*ThreadNice(), before + 2);
    EXPECT_FALSE(ThreadIsIdle());
    EXPECT_EQ(LowerThreadPriority(ThreadPriority{.nice = 25}).code(),
              absl::StatusCode::kInvalidArgument);
  });
}

}  // namespace
}  // namespace tandem::base
