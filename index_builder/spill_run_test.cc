// Tests of the spilled-run format: a run written and read back, the k-way merge of several runs
// (terms in order, docIDs of different runs interleaved), and the errors: a file that cannot be
// created, a truncated file, and a missing file.
#include "index_builder/spill_run.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tools/temp_dir.h"

namespace tandem::index_builder {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

using Merged = std::vector<std::pair<std::string, std::vector<std::pair<uint32_t, uint32_t>>>>;

Merged MergeAll(RunMerger& merger) {
  Merged merged;
  while (merger.Next()) merged.emplace_back(merger.term(), merger.postings());
  return merged;
}

TEST(SpillRunTest, WritesTermsInOrderAndReadsThemBack) {
  tools::TempDir dir;
  const std::string path = dir.path() + "/run.bin";
  // Docids past 2^21 take a four-byte varint gap; "" is a term like any other.
  const MemoryRun run = {{"zeta", {3, 1, 4000000, 7}}, {"alpha", {0, 2}}, {"", {5, 300}}};
  ASSERT_TRUE(WriteRun(run, path).ok());
  EXPECT_EQ(run.size(), 3u);

  RunReader reader(path);
  std::vector<std::pair<std::string, RunPostings>> got;
  while (reader.Next()) got.emplace_back(reader.term(), reader.postings());
  EXPECT_TRUE(reader.status().ok()) << reader.status();
  EXPECT_THAT(got, ElementsAre(Pair("", ElementsAre(5, 300)), Pair("alpha", ElementsAre(0, 2)),
                               Pair("zeta", ElementsAre(3, 1, 4000000, 7))));
  EXPECT_FALSE(reader.Next());  // stays at the end
}

TEST(SpillRunTest, EmptyRunIsAnEmptyFile) {
  tools::TempDir dir;
  const std::string path = dir.path() + "/run.bin";
  ASSERT_TRUE(WriteRun({}, path).ok());
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
  RunReader reader(path);
  EXPECT_FALSE(reader.Next());
  EXPECT_TRUE(reader.status().ok());
}

TEST(SpillRunTest, MergesRunsTermByTermWithDocidsInOrder) {
  tools::TempDir dir;
  const std::vector<std::string> paths = {dir.path() + "/a.bin", dir.path() + "/b.bin",
                                          dir.path() + "/c.bin"};
  ASSERT_TRUE(WriteRun({{"cat", {0, 1, 7, 2}}, {"dog", {1, 1}}}, paths[0]).ok());
  ASSERT_TRUE(WriteRun({{"cat", {3, 5}}, {"ant", {4, 1}}}, paths[1]).ok());
  ASSERT_TRUE(WriteRun({}, paths[2]).ok());
  RunMerger merger(paths);
  EXPECT_THAT(MergeAll(merger),
              ElementsAre(Pair("ant", ElementsAre(Pair(4, 1))),
                          Pair("cat", ElementsAre(Pair(0, 1), Pair(3, 5), Pair(7, 2))),
                          Pair("dog", ElementsAre(Pair(1, 1)))));
  EXPECT_TRUE(merger.status().ok()) << merger.status();
  EXPECT_FALSE(merger.Next());
}

TEST(SpillRunTest, NoRunsMergeToNothing) {
  RunMerger merger({});
  EXPECT_FALSE(merger.Next());
  EXPECT_TRUE(merger.status().ok());
}

TEST(SpillRunTest, FileThatCannotBeCreatedIsInternal) {
  tools::TempDir dir;
  const std::string path = dir.path() + "/no/such/dir/run.bin";
  const absl::Status s = WriteRun({{"a", {0, 1}}}, path);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "cannot create spill file '" + path + "'");
}

TEST(SpillRunTest, TruncatedFileIsDataLoss) {
  tools::TempDir dir;
  const std::string path = dir.path() + "/run.bin";
  ASSERT_TRUE(WriteRun({{"alpha", {1, 1, 2, 1}}, {"beta", {9, 3}}}, path).ok());
  const uintmax_t size = std::filesystem::file_size(path);
  // Cut inside the second term's postings, then inside the first term's bytes.
  for (const uintmax_t keep : {size - 1, uintmax_t{3}}) {
    std::filesystem::resize_file(path, keep);
    RunReader reader(path);
    while (reader.Next()) {
    }
    EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss) << keep;
    EXPECT_THAT(reader.status().message(), HasSubstr("spill file '" + path + "' is truncated"));
  }
}

TEST(SpillRunTest, MergerStopsAtTheFirstDamagedRun) {
  tools::TempDir dir;
  const std::string good = dir.path() + "/good.bin", bad = dir.path() + "/bad.bin";
  ASSERT_TRUE(WriteRun({{"a", {0, 1}}, {"b", {0, 1}}}, good).ok());
  ASSERT_TRUE(WriteRun({{"a", {1, 1}}, {"b", {1, 1}}}, bad).ok());
  // The damaged run's first term reads; its second does not.
  std::filesystem::resize_file(bad, std::filesystem::file_size(bad) - 1);
  RunMerger merger({good, bad});
  EXPECT_FALSE(merger.Next());  // the damage shows while "a" is merged
  EXPECT_EQ(merger.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_FALSE(merger.Next());

  // Damage in a run's first term shows at the first Next.
  std::filesystem::resize_file(bad, 2);
  RunMerger at_open({good, bad});
  EXPECT_FALSE(at_open.Next());
  EXPECT_EQ(at_open.status().code(), absl::StatusCode::kDataLoss);
}

// A run the inverter wrote and can no longer open (removed, unreadable) would lose its postings:
// an error, never an empty run.
TEST(SpillRunTest, MissingFileIsAnError) {
  tools::TempDir dir;
  RunReader reader(dir.path() + "/missing.bin");
  EXPECT_FALSE(reader.Next());
  EXPECT_EQ(reader.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE(reader.status().message().find("missing.bin"), std::string::npos);
  RunMerger merger({dir.path() + "/missing.bin"});
  EXPECT_FALSE(merger.Next());
  EXPECT_EQ(merger.status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tandem::index_builder
