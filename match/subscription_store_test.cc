#include "match/subscription_store.h"

#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "match/brute_force_matcher.h"
#include "match/predicate_parser.h"
#include "match/subscription_file.h"
#include "match/subscription_registry.h"

namespace tandem::match {
namespace {

using ::testing::HasSubstr;

Predicate P(absl::string_view text) {
  return *NormalizePredicate(*ParsePredicate(text), nullptr, Limits{});
}

absl::StatusOr<std::unique_ptr<SubscriptionRegistry>> OpenRegistry(const RegistryOptions& options) {
  return SubscriptionRegistry::Open(options, std::make_unique<BruteForceMatcher>(), nullptr);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string Frame(const std::vector<SubscriptionChange>& changes) {
  std::string bytes;
  for (const SubscriptionChange& c : changes) EncodeChange(c, &bytes);
  return FrameLogBatch(bytes);
}

SubscriptionChange Add(SubscriptionId id, const std::string& interface, const std::string& text) {
  return SubscriptionChange{.record = {id, interface, P(text)}};
}
SubscriptionChange Remove(SubscriptionId id) {
  return SubscriptionChange{.remove = true, .record = {.id = id}};
}

std::vector<SubscriptionId> Ids(const std::vector<SubscriptionRecord>& records) {
  std::vector<SubscriptionId> ids;
  for (const SubscriptionRecord& r : records) ids.push_back(r.id);
  return ids;
}

class SubscriptionStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    options_.path = dir_.path() + "/subs";
    options_.compact_log_bytes = int64_t{1} << 40;  // no compaction unless a test asks
  }
  std::string log_path() const { return options_.path + ".log"; }

  // Three subscriptions, each its own frame, in a log beside a snapshot that holds none of them.
  void ThreeFrames() {
    auto registry = OpenRegistry(options_);
    ASSERT_TRUE(registry.ok()) << registry.status();
    for (int i = 1; i <= 3; ++i) {
      ASSERT_TRUE((*registry)->Subscribe("a", P(absl::StrCat("x = ", i))).ok());
    }
    ASSERT_EQ((*registry)->store_stats().log_writes, 3u);
  }

  base::TempDir dir_;
  RegistryOptions options_;
};

TEST_F(SubscriptionStoreTest, DamageInsideTheLogStopsTheNodeNamingIt) {
  ThreeFrames();
  std::string bytes = ReadAll(log_path());
  bytes[16 + 12 + 2] ^= 0x40;  // inside the first frame's changes, with two frames after it
  WriteAll(log_path(), bytes);
  absl::StatusOr<std::unique_ptr<SubscriptionRegistry>> r = OpenRegistry(options_);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_THAT(r.status().message(),
              HasSubstr(log_path() + ": the change log is damaged at byte 16"));

  WriteAll(log_path(), "TANDSLOX" + bytes.substr(8));
  EXPECT_TRUE(absl::IsDataLoss(OpenRegistry(options_).status()));
  bytes[16 + 12 + 2] ^= 0x40;
  bytes[8] = 9;  // a log version this build does not know
  WriteAll(log_path(), bytes);
  r = OpenRegistry(options_);
  EXPECT_TRUE(absl::IsFailedPrecondition(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr("change log version 9"));
}

TEST_F(SubscriptionStoreTest, ATornFinalFrameIsDroppedAndTheRestKept) {
  ThreeFrames();
  const std::string good = ReadAll(log_path());
  const std::string fourth = Frame({Add(4, "b", "y = 4"), Add(5, "b", "y = 5")});
  const std::string cut = fourth.substr(0, fourth.size() - 3);
  std::string bad_sum = fourth;
  bad_sum.back() ^= 1;
  for (const std::string& tail :
       {cut, fourth.substr(0, 7), bad_sum, std::string(40, '\0'), fourth + std::string(9, '\0')}) {
    WriteAll(log_path(), good + tail);
    SubscriptionStore reader(SubscriptionStoreOptions{.path = options_.path});
    absl::StatusOr<SubscriptionSnapshot> loaded = reader.Load();
    ASSERT_TRUE(loaded.ok()) << loaded.status();
    if (tail.size() == fourth.size() + 9) {  // a whole frame, then zeros the file system left
      EXPECT_THAT(Ids(loaded->records), ::testing::ElementsAre(1, 2, 3, 4, 5));
      continue;
    }
    EXPECT_THAT(Ids(loaded->records), ::testing::ElementsAre(1, 2, 3));
  }
  // The registry starts over it, and rewrites both files: the torn bytes are gone.
  WriteAll(log_path(), good + cut);
  {
    auto registry = OpenRegistry(options_);
    ASSERT_TRUE(registry.ok()) << registry.status();
    EXPECT_EQ((*registry)->List("").size(), 3u);
    EXPECT_EQ(*(*registry)->Subscribe("c", P("z = 1")), 4u);
  }
  absl::StatusOr<SubscriptionLogContents> log = ReadSubscriptionLog(log_path());
  ASSERT_TRUE(log.ok()) << log.status();
  EXPECT_EQ(log->torn, "");
  EXPECT_EQ(log->changes.size(), 1u);
}

TEST_F(SubscriptionStoreTest, ReplayOverASnapshotThatHoldsSomeOfTheLogIsExact) {
  // A crash between a compaction's renames: the new snapshot (after changes 1-4) with the old
  // log of every change. Each id's last change decides, and ids are never reused.
  SubscriptionSnapshot snapshot;
  snapshot.records.push_back(SubscriptionRecord{2, "b", P("x = 2")});
  snapshot.records.push_back(SubscriptionRecord{4, "a", P("x = 4")});
  snapshot.next_id = 5;
  ASSERT_TRUE(WriteSubscriptionFile(options_.path, snapshot).ok());
  WriteAll(log_path(),
           LogHeader() + Frame({Add(1, "a", "x = 1"), Add(2, "b", "x = 2")}) +
               Frame({Remove(1), Add(3, "a", "x = 3")}) + Frame({Remove(3), Add(4, "a", "x = 4")}) +
               Frame({Add(6, "c", "x = 6"), Remove(2), Add(7, "c", "x = 7")}) + Frame({Remove(7)}));
  auto registry = OpenRegistry(options_);
  ASSERT_TRUE(registry.ok()) << registry.status();
  EXPECT_THAT(Ids((*registry)->List("")), ::testing::ElementsAre(4, 6));
  EXPECT_EQ(*(*registry)->Subscribe("d", P("x = 8")), 8u);
}

TEST_F(SubscriptionStoreTest, ASnapshotWithoutALogIsReadAsBefore) {
  SubscriptionSnapshot snapshot;
  snapshot.records.push_back(SubscriptionRecord{3, "a", P("x = 3")});
  snapshot.next_id = 9;
  ASSERT_TRUE(WriteSubscriptionFile(options_.path, snapshot).ok());
  {
    auto registry = OpenRegistry(options_);
    ASSERT_TRUE(registry.ok()) << registry.status();
    EXPECT_THAT(Ids((*registry)->List("")), ::testing::ElementsAre(3));
    EXPECT_EQ(*(*registry)->Subscribe("a", P("x = 1")), 9u);
  }
  EXPECT_TRUE(std::filesystem::exists(log_path()));
  auto registry = OpenRegistry(options_);
  EXPECT_THAT(Ids((*registry)->List("")), ::testing::ElementsAre(3, 9));
}

TEST_F(SubscriptionStoreTest, CompactionInTheBackgroundKeepsEveryAcknowledgedChange) {
  options_.compact_log_bytes = 1;  // compact whenever the log outgrows the snapshot
  std::set<SubscriptionId> expected;
  std::mutex expected_mu;
  {
    auto registry = OpenRegistry(options_);
    ASSERT_TRUE(registry.ok()) << registry.status();
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 150; ++i) {
          absl::StatusOr<SubscriptionId> id =
              (*registry)->Subscribe(absl::StrCat("t", t), P(absl::StrCat("x = ", i)));
          ASSERT_TRUE(id.ok()) << id.status();
          bool keep = i % 3 != 0;
          if (!keep) ASSERT_TRUE((*registry)->Unsubscribe(*id).ok());
          std::lock_guard<std::mutex> lock(expected_mu);
          if (keep) expected.insert(*id);
        }
      });
    }
    for (std::thread& t : threads) t.join();
    const SubscriptionStoreStats stats = (*registry)->store_stats();
    EXPECT_GT(stats.compactions, 2u);
    EXPECT_EQ((*registry)->List("").size(), expected.size());
  }
  // The log stays near the snapshot's size rather than growing with every change.
  struct stat log, snap;
  ASSERT_EQ(stat(log_path().c_str(), &log), 0);
  ASSERT_EQ(stat(options_.path.c_str(), &snap), 0);
  EXPECT_LE(log.st_size, 2 * snap.st_size + 4096);
  auto registry = OpenRegistry(options_);
  ASSERT_TRUE(registry.ok()) << registry.status();
  const std::vector<SubscriptionId> ids = Ids((*registry)->List(""));
  EXPECT_EQ(std::set<SubscriptionId>(ids.begin(), ids.end()), expected);
}

}  // namespace
}  // namespace tandem::match
