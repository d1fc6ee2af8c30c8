#include "base/thread_affinity.h"

#include <sched.h>

#include <thread>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::base {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ThreadAffinityTest, ParsesListsAndRanges) {
  EXPECT_THAT(*ParseCpuList("3"), ElementsAre(3));
  EXPECT_THAT(*ParseCpuList("0-3,8,10-11"), ElementsAre(0, 1, 2, 3, 8, 10, 11));
  EXPECT_THAT(*ParseCpuList(" 8, 2-3 ,2 "), ElementsAre(2, 3, 8));  // sorted, repeats merged
  EXPECT_THAT(*ParseCpuList("5-5"), ElementsAre(5));
}

TEST(ThreadAffinityTest, RejectsMalformedLists) {
  for (const char* bad : {"", " ", "1,,2", "a", "1-", "-3", "3-1", "1-2-3", "0x1", "99999"}) {
    SCOPED_TRACE(bad);
    const absl::StatusOr<std::vector<int>> cpus = ParseCpuList(bad);
    ASSERT_FALSE(cpus.ok());
    EXPECT_EQ(cpus.status().code(), absl::StatusCode::kInvalidArgument);
  }
  EXPECT_THAT(ParseCpuList("3-1").status().message(), HasSubstr("'3-1'"));
  EXPECT_THAT(ParseCpuList("3-1").status().message(), HasSubstr("backwards"));
  EXPECT_THAT(ParseCpuList("0,x").status().message(), HasSubstr("'x'"));
  EXPECT_THAT(ParseCpuList("1,,2").status().message(), HasSubstr("empty item"));
}

TEST(ThreadAffinityTest, FormatsTheShortestList) {
  EXPECT_EQ(FormatCpuList({}), "");
  EXPECT_EQ(FormatCpuList({4}), "4");
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(FormatCpuList(*ParseCpuList("7,1-2,3")), "1-3,7");
}

TEST(ThreadAffinityTest, PinsOnlyTheCallingThread) {
  const absl::StatusOr<std::vector<int>> before = ThreadCpus();
  ASSERT_TRUE(before.ok()) << before.status();
  ASSERT_FALSE(before->empty());
  const std::vector<int> one = {before->back()};
  std::thread t([&] {
    ASSERT_TRUE(PinThreadToCpus(one).ok());
    EXPECT_EQ(*ThreadCpus(), one);
  });
  t.join();
  EXPECT_EQ(*ThreadCpus(), *before);
}

TEST(ThreadAffinityTest, ChecksCpusAgainstTheAllowedSet) {
  const absl::StatusOr<std::vector<int>> allowed = ThreadCpus();
  ASSERT_TRUE(allowed.ok()) << allowed.status();
  EXPECT_TRUE(CheckCpusAllowed(*allowed).ok());
  EXPECT_TRUE(CheckCpusAllowed({allowed->front()}).ok());
  const absl::Status empty = CheckCpusAllowed({});
  EXPECT_EQ(empty.code(), absl::StatusCode::kInvalidArgument);
  const int outside = CPU_SETSIZE - 1;  // no machine here has 1024 CPUs
  ASSERT_NE(allowed->back(), outside);
  const absl::Status refused = CheckCpusAllowed({allowed->front(), outside});
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refused.message(), HasSubstr("CPU 1023 is not one this process may run on"));
  EXPECT_THAT(refused.message(), HasSubstr(FormatCpuList(*allowed)));
}

TEST(ThreadAffinityTest, PinRejectsEmptyAndOutOfRangeSets) {
  std::thread t([] {
    EXPECT_EQ(PinThreadToCpus({}).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(PinThreadToCpus({-1}).code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(PinThreadToCpus({CPU_SETSIZE}).code(), absl::StatusCode::kInvalidArgument);
  });
  t.join();
}

TEST(ThreadAffinityTest, CpuListFlagParsesAndPrintsTheKernelsNotation) {
  CpuList list;
  std::string error;
  ASSERT_TRUE(AbslParseFlag("8,0-3", &list, &error)) << error;
  EXPECT_EQ(list.cpus, (std::vector<int>{0, 1, 2, 3, 8}));
  EXPECT_EQ(AbslUnparseFlag(list), "0-3,8");
  ASSERT_TRUE(AbslParseFlag("", &list, &error));
  EXPECT_TRUE(list.cpus.empty());
  EXPECT_FALSE(AbslParseFlag("3-1", &list, &error));
  EXPECT_NE(error.find("'3-1'"), std::string::npos) << error;
}

}  // namespace
}  // namespace tandem::base
