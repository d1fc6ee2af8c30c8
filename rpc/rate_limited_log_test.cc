#include "rpc/rate_limited_log.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::rpc {
namespace {

using ::testing::ElementsAre;

TEST(RateLimitedLogTest, PassesOneLinePerIntervalAndCountsTheRest) {
  std::vector<std::string> lines;
  absl::Time now = absl::FromUnixSeconds(1000);
  RateLimitedLog log(
      absl::Minutes(1), [&lines](absl::string_view line) { lines.emplace_back(line); },
      [&now] { return now; });
  log.Log("a");
  log.Log("b");
  log.Log("c");
  now += absl::Seconds(59);
  log.Log("d");
  now += absl::Seconds(1);
  log.Log("e");
  log.Log("f");
  now += absl::Minutes(5);
  log.Log("g");
  EXPECT_THAT(lines, ElementsAre("a", "e (3 similar lines dropped before this one)",
                                 "g (1 similar lines dropped before this one)"));
  EXPECT_EQ(log.dropped_total(), 4u);
}

TEST(RateLimitedLogTest, ANullSinkWritesToStandardError) {
  RateLimitedLog log(absl::Seconds(1), nullptr);
  testing::internal::CaptureStderr();
  log.Log("tandem-server: hello");
  log.Log("tandem-server: dropped");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "tandem-server: hello\n");
}

}  // namespace
}  // namespace tandem::rpc
