// Tests of the build progress line: phase, percent, ETA from the phase's own rate, and what is left
// out when the total is unknown or the report is off.
#include "index_builder/progress.h"

#include <chrono>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::index_builder {
namespace {

using std::chrono::seconds;
using ::testing::HasSubstr;
using ::testing::Not;

TEST(ProgressTest, PercentAndEtaFromThePhasesOwnRate) {
  Progress progress(/*enabled=*/true, /*terminal=*/false, seconds(5));
  const auto start = Progress::Clock::now();
  // 25% of the bytes in 30 s of reading: 90 s more.
  const std::string line =
      progress.Line("reading", 250, 1000, "1,234 documents", start + seconds(30));
  EXPECT_THAT(line, HasSubstr("reading"));
  EXPECT_THAT(line, HasSubstr(" 25.0%"));
  EXPECT_THAT(line, HasSubstr("ETA 1m 30s"));
  EXPECT_THAT(line, HasSubstr("1,234 documents"));
  // A new phase starts its own clock: half done 10 s after it began, 10 s left.
  progress.Line("writing", 0, 100, "", start + seconds(40));
  EXPECT_THAT(progress.Line("writing", 50, 100, "", start + seconds(50)), HasSubstr("ETA 10s"));
}

TEST(ProgressTest, NoPercentOrEtaWithoutATotal) {
  Progress progress(true, false, seconds(5));
  const std::string line =
      progress.Line("reading", 500, 0, "12 documents", Progress::Clock::now() + seconds(3));
  EXPECT_THAT(line, Not(HasSubstr("%")));
  EXPECT_THAT(line, Not(HasSubstr("ETA")));
  EXPECT_THAT(line, HasSubstr("12 documents"));
}

TEST(ProgressTest, FormatsDurations) {
  EXPECT_EQ(FormatDuration(42), "42s");
  EXPECT_EQ(FormatDuration(72), "1m 12s");
  EXPECT_EQ(FormatDuration(3 * 3600 + 5 * 60 + 7), "3h 05m");
  EXPECT_EQ(FormatDuration(-1), "?");
}

TEST(ProgressTest, DisabledIsNeverDue) {
  Progress off(false, false, seconds(0));
  EXPECT_FALSE(off.Due());
  Progress on(true, false, std::chrono::milliseconds(0));
  EXPECT_TRUE(on.Due());
}

}  // namespace
}  // namespace tandem::index_builder
