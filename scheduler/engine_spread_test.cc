#include "scheduler/engine_spread.h"

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "tests/test_collection.h"

namespace tandem::scheduler {
namespace {

// An engine over testing::SmallIndex() (or `index`) that answers with its own number as the one
// hit's docID; Search blocks until `release` when one is given.
class NumberedEngine : public index::Engine {
 public:
  NumberedEngine(uint32_t number, std::string name = "gpu", absl::Notification* release = nullptr,
                 const index::Index* index = nullptr)
      : number_(number),
        name_(std::move(name)),
        release_(release),
        index_(index != nullptr ? index : &testing::SmallIndex()) {}
  absl::string_view name() const override { return name_; }
  const index::Index& index() const override { return *index_; }
  using index::Engine::Search;
  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery&,
                                             const index::SearchContext&) const override {
    ++calls;
    if (release_ != nullptr) release_->WaitForNotification();
    index::SearchResult r;
    r.hits.push_back({number_, 1.0f});
    return r;
  }

  mutable std::atomic<int> calls{0};

 private:
  uint32_t number_;
  std::string name_;
  absl::Notification* release_;
  const index::Index* index_;
};

TEST(EngineSpread, RefusesNoEngineNullAndMixedNames) {
  EXPECT_EQ(EngineSpread::Create({}).status().code(), absl::StatusCode::kInvalidArgument);
  std::vector<std::unique_ptr<const index::Engine>> with_null;
  with_null.push_back(nullptr);
  EXPECT_FALSE(EngineSpread::Create(std::move(with_null)).ok());
  std::vector<std::unique_ptr<const index::Engine>> mixed;
  mixed.push_back(std::make_unique<NumberedEngine>(0, "gpu"));
  mixed.push_back(std::make_unique<NumberedEngine>(1, "cpu"));
  absl::StatusOr<std::unique_ptr<EngineSpread>> spread = EngineSpread::Create(std::move(mixed));
  ASSERT_FALSE(spread.ok());
  EXPECT_NE(spread.status().message().find("'cpu'"), std::string::npos);
}

// The engines of a spread serve one index: a query is prepared against it once.
TEST(EngineSpread, RefusesEnginesOverDifferentIndexes) {
  testing::TempDir dir;
  ASSERT_TRUE(testing::BuildIndex({{"a"}}, dir.path() + "/other", "pfor").ok());
  auto other = index::Index::Open(dir.path() + "/other");
  ASSERT_TRUE(other.ok()) << other.status();
  std::vector<std::unique_ptr<const index::Engine>> engines;
  engines.push_back(std::make_unique<NumberedEngine>(0));
  engines.push_back(std::make_unique<NumberedEngine>(1, "gpu", nullptr, other->get()));
  absl::StatusOr<std::unique_ptr<EngineSpread>> spread = EngineSpread::Create(std::move(engines));
  EXPECT_EQ(spread.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(spread.status().message().find("another index"), std::string::npos);
}

TEST(EngineSpread, SequentialQueriesGoToTheFirstIdleEngine) {
  std::vector<std::unique_ptr<const index::Engine>> engines;
  for (uint32_t i = 0; i < 3; ++i) engines.push_back(std::make_unique<NumberedEngine>(i));
  auto spread = *EngineSpread::Create(std::move(engines));
  EXPECT_EQ(spread->name(), "gpu");
  EXPECT_EQ(spread->size(), 3u);
  for (int i = 0; i < 5; ++i) {
    absl::StatusOr<index::SearchResult> r = spread->Search({}, {});
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(r->hits[0].docid, 0u);  // all idle: the lowest index
  }
  EXPECT_EQ(spread->queries_per_engine(), (std::vector<uint64_t>{5, 0, 0}));
}

TEST(EngineSpread, ConcurrentQueriesSpreadOverTheEngines) {
  absl::Notification release;
  std::vector<std::unique_ptr<const index::Engine>> engines;
  std::vector<const NumberedEngine*> raw;
  for (uint32_t i = 0; i < 2; ++i) {
    auto e = std::make_unique<NumberedEngine>(i, "gpu", &release);
    raw.push_back(e.get());
    engines.push_back(std::move(e));
  }
  auto spread = *EngineSpread::Create(std::move(engines));
  // Four queries held inside the engines: two on each.
  std::vector<std::thread> threads;
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&] { ASSERT_TRUE(spread->Search({}, {}).ok()); });
    while (raw[0]->calls + raw[1]->calls < i + 1) std::this_thread::yield();
  }
  EXPECT_EQ(raw[0]->calls.load(), 2);
  EXPECT_EQ(raw[1]->calls.load(), 2);
  // A batch of three goes to one engine and counts three there.
  release.Notify();
  for (std::thread& t : threads) t.join();
  std::vector<index::Query> batch(3);
  std::vector<absl::StatusOr<index::SearchResult>> results = spread->SearchBatch(batch, {{}});
  ASSERT_EQ(results.size(), 3u);
  for (const auto& r : results) EXPECT_EQ(r->hits[0].docid, 0u);
  EXPECT_EQ(spread->queries_per_engine(), (std::vector<uint64_t>{5, 2}));
}

}  // namespace
}  // namespace tandem::scheduler
