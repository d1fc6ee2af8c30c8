#include "server/serving_index.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "server/server.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

// An index served by a CPU-only node with one worker.
ServerOptions CpuOptions(const std::string& dir) {
  ServerOptions options;
  options.index_dir = dir;
  options.engines.gpu = GpuMode::kOff;
  options.scheduler.executor.cpu_threads = 1;
  options.scheduler.executor.gpu_threads = 1;
  return options;
}

class ServingIndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = tmp_.path() + "/index";
    ASSERT_TRUE(testing::BuildIndex({{"cat", "dog"}, {"dog"}, {"fish"}}, dir_, "pfor").ok());
  }
  testing::TempDir tmp_;
  std::string dir_;
};

TEST_F(ServingIndexTest, OpenNamesWhatFailed) {
  absl::StatusOr<std::unique_ptr<ServingIndex>> missing =
      ServingIndex::Open(tmp_.path() + "/none", CpuOptions(tmp_.path() + "/none"), 1);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(missing.status().message().find("cannot open index"), std::string::npos);
  absl::StatusOr<std::unique_ptr<ServingIndex>> opened =
      ServingIndex::Open(dir_, CpuOptions(dir_), 7);
  ASSERT_TRUE(opened.ok()) << opened.status();
  EXPECT_EQ((*opened)->generation(), 7u);
  EXPECT_EQ((*opened)->index().num_docs(), 3u);
  EXPECT_EQ((*opened)->engines().gpu, nullptr);
}

// The retirer destroys a handed-over index on its own thread once the last owner lets go, even
// when that owner is a thread of the index's own executor, and reports each release.
TEST_F(ServingIndexTest, RetirerDestroysOffTheLastOwnersThread) {
  prometheus::Registry registry;
  QueryMetrics metrics(registry, {}, {"cpu"});
  std::atomic<int> released{0};
  std::atomic<uint64_t> last_generation{0};
  absl::Notification done;
  {
    IndexLifecycle retirer([&](uint64_t generation, const std::string& dir) {
      EXPECT_EQ(dir, dir_);
      last_generation = generation;
      if (++released == 1) done.Notify();
    });
    absl::StatusOr<std::unique_ptr<ServingIndex>> opened =
        ServingIndex::Open(dir_, CpuOptions(dir_), 2);
    ASSERT_TRUE(opened.ok()) << opened.status();
    ASSERT_TRUE((*opened)->StartExecutor({}, registry, metrics).ok());
    std::shared_ptr<ServingIndex> owned = retirer.Own(*std::move(opened));
    EXPECT_EQ(retirer.pending(), 1u);
    // The last reference is dropped by a job answered on the index's own executor thread.
    scheduler::QueryJob job;
    index::Query dog;
    dog.terms = {{"dog", 1.0f}};
    absl::StatusOr<index::PreparedQuery> query = index::PreparedQuery::Prepare(owned->index(), dog);
    ASSERT_TRUE(query.ok()) << query.status();
    job.tasks.push_back({.query = *std::move(query)});
    job.on_done = [held = owned](size_t, scheduler::QueryOutcome outcome) mutable {
      EXPECT_TRUE(outcome.result.ok());
      held.reset();
    };
    scheduler::QueryExecutor& executor = owned->executor();
    owned.reset();
    ASSERT_TRUE(executor.Submit(std::move(job)).ok());
    ASSERT_TRUE(done.WaitForNotificationWithTimeout(absl::Seconds(30)));
    EXPECT_EQ(released.load(), 1);
    EXPECT_EQ(last_generation.load(), 2u);
    EXPECT_EQ(retirer.pending(), 0u);

    // An index still owned when the retirer stops is destroyed by its last owner.
    absl::StatusOr<std::unique_ptr<ServingIndex>> again =
        ServingIndex::Open(dir_, CpuOptions(dir_), 3);
    ASSERT_TRUE(again.ok());
    std::shared_ptr<ServingIndex> late = retirer.Own(*std::move(again));
    std::thread([late = std::move(late)]() mutable { late.reset(); }).join();
  }
  // Destroyed before the retirer stopped: handed over and reported.
  EXPECT_EQ(released.load(), 2);
  EXPECT_EQ(last_generation.load(), 3u);
}

TEST_F(ServingIndexTest, HostRoomCountsTheNewFilesAgainstWhatIsAvailable) {
  absl::StatusOr<std::unique_ptr<index::Index>> serving = index::Index::Open(dir_);
  ASSERT_TRUE(serving.ok());
  EXPECT_TRUE(CheckHostRoomFor(dir_, **serving).ok());
  // A missing directory is left for Index::Open to report.
  EXPECT_TRUE(CheckHostRoomFor(tmp_.path() + "/none", **serving).ok());
  // A sparse file larger than any machine's memory.
  const std::string big = tmp_.path() + "/big";
  ASSERT_EQ(mkdir(big.c_str(), 0755), 0);
  const int fd = open((big + "/postings.bin").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  const bool sized = ftruncate(fd, off_t{1} << 42) == 0;  // 4 TiB
  close(fd);
  if (!sized) GTEST_SKIP() << "the file system refuses a 4 TiB sparse file";
  const absl::Status room = CheckHostRoomFor(big, **serving);
  EXPECT_EQ(room.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(room.message().find("not enough host memory"), std::string::npos) << room;
}

}  // namespace
}  // namespace tandem::server
