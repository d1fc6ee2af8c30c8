// Tests of the spilled-run format: a run written and read back, the k-way merge of several runs
// (terms in order, docIDs of different runs interleaved), the marks and the merge of term ranges
// against the whole merge, and the errors: a file that cannot be created, a truncated file, and a
// missing file.
#include "index_builder/spill_run.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

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
  base::TempDir dir;
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
  base::TempDir dir;
  const std::string path = dir.path() + "/run.bin";
  ASSERT_TRUE(WriteRun({}, path).ok());
  EXPECT_EQ(std::filesystem::file_size(path), 0u);
  RunReader reader(path);
  EXPECT_FALSE(reader.Next());
  EXPECT_TRUE(reader.status().ok());
}

TEST(SpillRunTest, MergesRunsTermByTermWithDocidsInOrder) {
  base::TempDir dir;
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

// Runs of random terms (shared prefixes, bytes above 0x7f, a term in every run, "") large enough
// to hold many marks, and an empty run.
std::vector<SpilledRun> WriteRandomRuns(const std::string& dir, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<SpilledRun> runs;
  for (int r = 0; r < 5; ++r) {
    MemoryRun run;
    const int terms = r == 3 ? 0 : 2000 + static_cast<int>(rng() % 3000);
    for (int t = 0; t < terms; ++t) {
      std::string term(1 + rng() % 12, 'a');
      for (char& c : term)
        c = static_cast<char>(rng() % 3 == 0 ? 0x80 + rng() % 64 : 'a' + rng() % 6);
      RunPostings& p = run[term];
      p.clear();
      for (uint32_t n = 1 + rng() % 20, d = r; n > 0; --n, d += 5 * (1 + rng() % 1000)) {
        p.push_back(d);
        p.push_back(1 + rng() % 9);
      }
    }
    if (terms > 0) run["the"] = {static_cast<uint32_t>(r), 3};
    if (r == 1) run[""] = {1, 1};
    absl::StatusOr<SpilledRun> spilled = WriteRun(run, dir + "/run-" + std::to_string(r) + ".bin");
    EXPECT_TRUE(spilled.ok()) << spilled.status();
    runs.push_back(*std::move(spilled));
  }
  return runs;
}

TEST(SpillRunTest, MarksPointAtTermStarts) {
  base::TempDir dir;
  for (const SpilledRun& run : WriteRandomRuns(dir.path(), 1)) {
    EXPECT_EQ(run.bytes, std::filesystem::file_size(run.path));
    if (run.bytes == 0) {
      EXPECT_TRUE(run.marks.empty());
      continue;
    }
    ASSERT_GT(run.marks.size(), 2u);
    EXPECT_EQ(run.marks[0].offset, 0u);
    for (size_t i = 0; i < run.marks.size(); ++i) {
      if (i > 0) {
        EXPECT_GE(run.marks[i].offset, run.marks[i - 1].offset + kRunMarkBytes);
        EXPECT_LT(run.marks[i - 1].term, run.marks[i].term);
      }
      RunReader reader(run.path, run.marks[i].offset);
      ASSERT_TRUE(reader.Next()) << reader.status();
      EXPECT_EQ(reader.term(), run.marks[i].term);
    }
  }
}

TEST(SpillRunTest, TermRangesMergeToTheWholeMerge) {
  base::TempDir dir;
  const std::vector<SpilledRun> runs = WriteRandomRuns(dir.path(), 2);
  std::vector<std::string> paths;
  for (const SpilledRun& r : runs) paths.push_back(r.path);
  RunMerger whole(paths);
  const Merged expected = MergeAll(whole);
  ASSERT_TRUE(whole.status().ok()) << whole.status();
  ASSERT_GT(expected.size(), 5000u);
  for (const uint64_t target :
       {uint64_t{1}, uint64_t{20000}, uint64_t{100000}, uint64_t{1} << 40}) {
    const std::vector<TermRange> ranges = SplitTermRanges(runs, target);
    ASSERT_FALSE(ranges.empty());
    EXPECT_EQ(ranges.front().first, "");
    EXPECT_FALSE(ranges.back().end.has_value());
    if (target == 1) {
      EXPECT_GT(ranges.size(), 20u);
    }
    if (target == uint64_t{1} << 40) {
      EXPECT_EQ(ranges.size(), 1u);
    }
    Merged got;
    for (size_t i = 0; i < ranges.size(); ++i) {
      if (i + 1 < ranges.size()) {
        ASSERT_TRUE(ranges[i].end.has_value());
        EXPECT_EQ(*ranges[i].end, ranges[i + 1].first);
        EXPECT_LT(ranges[i].first, ranges[i + 1].first);
      }
      RunMerger merger(runs, ranges[i]);
      Merged part = MergeAll(merger);
      EXPECT_TRUE(merger.status().ok()) << merger.status();
      got.insert(got.end(), part.begin(), part.end());
    }
    EXPECT_EQ(got, expected) << "target " << target << ", " << ranges.size() << " ranges";
  }
}

// Ranges need not start or end at a run's term or mark.
TEST(SpillRunTest, RangeBetweenTermsHoldsOnlyItsTerms) {
  base::TempDir dir;
  const std::vector<std::string> paths = {dir.path() + "/a.bin", dir.path() + "/b.bin"};
  absl::StatusOr<SpilledRun> a =
      WriteRun({{"ant", {0, 1}}, {"cat", {2, 1}}, {"emu", {4, 1}}}, paths[0]);
  absl::StatusOr<SpilledRun> b =
      WriteRun({{"bee", {1, 1}}, {"cat", {3, 2}}, {"fox", {5, 1}}}, paths[1]);
  ASSERT_TRUE(a.ok() && b.ok());
  const std::vector<SpilledRun> runs = {*a, *b};
  RunMerger middle(runs, {"b", "d"});
  EXPECT_THAT(MergeAll(middle), ElementsAre(Pair("bee", ElementsAre(Pair(1, 1))),
                                            Pair("cat", ElementsAre(Pair(2, 1), Pair(3, 2)))));
  RunMerger tail(runs, {"cat", std::nullopt});
  EXPECT_EQ(MergeAll(tail).size(), 3u);  // cat, emu, fox
  RunMerger none(runs, {"g", std::nullopt});
  EXPECT_FALSE(none.Next());
  EXPECT_TRUE(none.status().ok());
}

// A run file cut at a term's end reads as a clean end: the range merge compares its size with
// what was written.
TEST(SpillRunTest, RangeMergeFindsARunCutAtATermsEnd) {
  base::TempDir dir;
  const std::string path = dir.path() + "/run.bin";
  absl::StatusOr<SpilledRun> run = WriteRun({{"a", {0, 1}}, {"b", {0, 1}}}, path);
  ASSERT_TRUE(run.ok());
  ASSERT_EQ(run->bytes, 10u);  // each term is 5 bytes
  std::filesystem::resize_file(path, 5);
  RunMerger merger({*run}, TermRange{});
  EXPECT_FALSE(merger.Next());
  EXPECT_EQ(merger.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(merger.status().message(), HasSubstr("holds 5 bytes, but 10 were written"));
  std::filesystem::remove(path);
  RunMerger missing({*run}, TermRange{});
  EXPECT_FALSE(missing.Next());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kDataLoss);
}

TEST(SpillRunTest, NoRunsMergeToNothing) {
  RunMerger merger({});
  EXPECT_FALSE(merger.Next());
  EXPECT_TRUE(merger.status().ok());
}

TEST(SpillRunTest, FileThatCannotBeCreatedIsInternal) {
  base::TempDir dir;
  const std::string path = dir.path() + "/no/such/dir/run.bin";
  const absl::Status s = WriteRun({{"a", {0, 1}}}, path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_EQ(s.message(), "cannot create spill file '" + path + "'");
}

TEST(SpillRunTest, TruncatedFileIsDataLoss) {
  base::TempDir dir;
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
  base::TempDir dir;
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
  base::TempDir dir;
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
