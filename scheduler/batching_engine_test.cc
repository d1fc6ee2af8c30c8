#include "scheduler/batching_engine.h"

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/synchronization/mutex.h"
#include "gtest/gtest.h"
#include "index/prepared_query.h"
#include "tests/test_collection.h"

namespace tandem::scheduler {
namespace {

// An engine whose queries say their batch work ("work:N"; "alone": none) and whose answer is one
// hit, the query's k: each caller can tell its own answer. Search of a query with k == held_k waits
// until Release(); SearchBatch records each batch's size and fails when told to.
class FakeBatchEngine final : public index::Engine {
 public:
  absl::string_view name() const override { return "gpu"; }
  const index::Index& index() const override { return testing::SmallIndex(); }
  using index::Engine::Search;
  using index::Engine::SearchBatch;

  absl::StatusOr<index::SearchResult> Search(const index::PreparedQuery& prepared,
                                             const index::SearchContext& context) const override {
    const index::Query& query = prepared.query();
    if (absl::Status s = context.Check(); !s.ok()) return s;
    {
      absl::MutexLock lock(&mu_);
      ++searches_;
      if (query.k == held_k_) {
        holding_ = true;
        mu_.Await(absl::Condition(&released_));
      }
    }
    return Answer(query);
  }

  std::vector<absl::StatusOr<index::SearchResult>> SearchBatch(
      const std::vector<const index::PreparedQuery*>& queries,
      const std::vector<index::SearchContext>& contexts) const override {
    absl::MutexLock lock(&mu_);
    batch_sizes_.push_back(queries.size());
    std::vector<absl::StatusOr<index::SearchResult>> out;
    for (size_t i = 0; i < queries.size(); ++i) {
      if (fail_batches_) {
        out.push_back(absl::InternalError("device fault"));
      } else if (absl::Status s = contexts.at(i).Check(); !s.ok()) {
        out.push_back(s);
      } else {
        out.push_back(Answer(queries[i]->query()));
      }
    }
    return out;
  }

  // The BatchWorkFn of this engine's queries.
  static std::optional<uint64_t> Work(const index::PreparedQuery& prepared) {
    const index::Query& query = prepared.query();
    uint64_t work = 0;
    if (!query.terms.empty() &&
        absl::SimpleAtoi(absl::StripPrefix(query.terms[0].term, "work:"), &work)) {
      return work;
    }
    return std::nullopt;
  }

  void Hold(uint32_t k) {
    absl::MutexLock lock(&mu_);
    held_k_ = k;
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }
  void FailBatches() {
    absl::MutexLock lock(&mu_);
    fail_batches_ = true;
  }
  bool WaitUntilHolding() {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&holding_), absl::Seconds(10));
  }
  std::vector<size_t> batch_sizes() const {
    absl::MutexLock lock(&mu_);
    return batch_sizes_;
  }
  int searches() const {
    absl::MutexLock lock(&mu_);
    return searches_;
  }

 private:
  static index::SearchResult Answer(const index::Query& query) {
    index::SearchResult r;
    r.hits.push_back({query.k, 1.0f});
    return r;
  }

  mutable absl::Mutex mu_;
  mutable std::vector<size_t> batch_sizes_ ABSL_GUARDED_BY(mu_);
  mutable int searches_ ABSL_GUARDED_BY(mu_) = 0;
  mutable bool holding_ ABSL_GUARDED_BY(mu_) = false;
  uint32_t held_k_ ABSL_GUARDED_BY(mu_) = 0;
  mutable bool released_ ABSL_GUARDED_BY(mu_) = false;
  bool fail_batches_ ABSL_GUARDED_BY(mu_) = false;
};

index::Query Q(uint32_t id, const std::string& term) {
  index::Query q;
  q.terms.push_back({term, 1.0f});
  q.k = id;
  return q;
}

std::unique_ptr<BatchingEngine> Make(const index::Engine& engine, const BatchingOptions& options) {
  auto made = BatchingEngine::Create(engine, FakeBatchEngine::Work, options);
  EXPECT_TRUE(made.ok()) << made.status();
  return made.ok() ? *std::move(made) : nullptr;
}

// A call on its own thread, with its answer.
struct Call {
  absl::StatusOr<index::SearchResult> result = absl::UnknownError("not answered");
  std::atomic<bool> answered{false};
  std::thread thread;
  void Start(const BatchingEngine& engine, index::Query query) {
    thread = std::thread([this, &engine, query] {
      result = engine.Search(query, {});
      answered = true;
    });
  }
  uint32_t Docid() {
    thread.join();
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() && result->hits.size() == 1 ? result->hits[0].docid : 0;
  }
};

TEST(BatchingEngineTest, RejectsBadOptions) {
  FakeBatchEngine engine;
  EXPECT_EQ(BatchingEngine::Create(engine, FakeBatchEngine::Work, {.threshold = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BatchingEngine::Create(engine, FakeBatchEngine::Work, {.max_wait = -absl::Microseconds(1)})
          .status()
          .code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchingEngine::Create(engine, FakeBatchEngine::Work, {.runners = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      BatchingEngine::Create(engine, FakeBatchEngine::Work, {.max_queries = 0}).status().code(),
      absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BatchingEngine::Create(engine, nullptr, {}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Nothing runs: the query goes at once, on the per-query path, however long it could wait.
TEST(BatchingEngineTest, AQueryAtLowLoadRunsAtOnceOnItsOwn) {
  FakeBatchEngine engine;
  auto batching = Make(engine, {.threshold = 1000, .max_wait = absl::Hours(1), .runners = 2});
  const absl::Time start = absl::Now();
  auto r = batching->Search(Q(7, "work:10"), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->hits.at(0).docid, 7u);
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  EXPECT_EQ(engine.searches(), 1);
  EXPECT_TRUE(engine.batch_sizes().empty());
  EXPECT_EQ(batching->stats().batches, 1u);
  EXPECT_EQ(batching->name(), "gpu");
}

// While a batch runs, queries wait until their work reaches the threshold, then go as one batch.
TEST(BatchingEngineTest, QueriesWaitingWhileABatchRunsGoTogetherAtTheThreshold) {
  FakeBatchEngine engine;
  engine.Hold(1);
  auto batching = Make(engine, {.threshold = 300, .max_wait = absl::Hours(1), .runners = 2});
  Call first, b, c, d;
  first.Start(*batching, Q(1, "work:100"));
  ASSERT_TRUE(engine.WaitUntilHolding());
  b.Start(*batching, Q(2, "work:100"));
  c.Start(*batching, Q(3, "work:100"));
  absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(b.answered);  // 200 postings: below the threshold
  EXPECT_FALSE(c.answered);
  d.Start(*batching, Q(4, "work:100"));
  EXPECT_EQ(d.Docid(), 4u);
  EXPECT_EQ(b.Docid(), 2u);
  EXPECT_EQ(c.Docid(), 3u);
  EXPECT_EQ(engine.batch_sizes(), std::vector<size_t>{3});
  EXPECT_FALSE(first.answered);
  engine.Release();
  EXPECT_EQ(first.Docid(), 1u);
  const BatchingStats stats = batching->stats();
  EXPECT_EQ(stats.batches, 2u);
  EXPECT_EQ(stats.batched_queries, 4u);
}

// Below the threshold, the oldest waits max_wait, no longer.
TEST(BatchingEngineTest, MaxWaitSendsABatchBelowTheThreshold) {
  FakeBatchEngine engine;
  engine.Hold(1);
  auto batching =
      Make(engine, {.threshold = 1'000'000, .max_wait = absl::Milliseconds(30), .runners = 2});
  Call first, b, c;
  first.Start(*batching, Q(1, "work:5"));
  ASSERT_TRUE(engine.WaitUntilHolding());
  const absl::Time start = absl::Now();
  b.Start(*batching, Q(2, "work:5"));
  c.Start(*batching, Q(3, "work:5"));
  EXPECT_EQ(b.Docid(), 2u);
  EXPECT_EQ(c.Docid(), 3u);
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(25));
  engine.Release();
  EXPECT_EQ(first.Docid(), 1u);
}

// A batch takes the oldest queries up to the threshold; the rest form the next one.
TEST(BatchingEngineTest, ABatchStopsAtTheThresholdAndAtMaxQueries) {
  FakeBatchEngine engine;
  engine.Hold(1);
  auto batching = Make(
      engine, {.threshold = 1'000'000, .max_wait = absl::Hours(1), .runners = 2, .max_queries = 2});
  Call first, b, c;
  first.Start(*batching, Q(1, "work:5"));
  ASSERT_TRUE(engine.WaitUntilHolding());
  b.Start(*batching, Q(2, "work:5"));
  c.Start(*batching, Q(3, "work:5"));  // max_queries reached
  EXPECT_EQ(b.Docid(), 2u);
  EXPECT_EQ(c.Docid(), 3u);
  EXPECT_EQ(engine.batch_sizes(), std::vector<size_t>{2});
  engine.Release();
  EXPECT_EQ(first.Docid(), 1u);
}

TEST(BatchingEngineTest, QueriesWithoutBatchWorkRunAlone) {
  FakeBatchEngine engine;
  engine.Hold(1);
  auto batching = Make(engine, {.threshold = 1000, .max_wait = absl::Hours(1), .runners = 1});
  Call first;
  first.Start(*batching, Q(1, "work:5"));  // the only runner is busy
  ASSERT_TRUE(engine.WaitUntilHolding());
  auto r = batching->Search(Q(9, "alone"), {});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->hits.at(0).docid, 9u);
  EXPECT_EQ(batching->stats().alone, 1u);
  engine.Release();
  EXPECT_EQ(first.Docid(), 1u);
}

// A batch that fails fails each of its queries with the engine's status (the executor then answers
// them on the CPU).
TEST(BatchingEngineTest, ABatchFailureReachesEachOfItsCallers) {
  FakeBatchEngine engine;
  engine.Hold(1);
  engine.FailBatches();
  auto batching = Make(engine, {.threshold = 10, .max_wait = absl::Hours(1), .runners = 2});
  Call first;
  first.Start(*batching, Q(1, "work:1"));
  ASSERT_TRUE(engine.WaitUntilHolding());
  absl::StatusOr<index::SearchResult> a, b;
  std::thread t1([&] { a = batching->Search(Q(2, "work:5"), {}); });
  std::thread t2([&] { b = batching->Search(Q(3, "work:5"), {}); });
  t1.join();
  t2.join();
  EXPECT_EQ(engine.batch_sizes(), std::vector<size_t>{2});
  EXPECT_EQ(a.status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInternal);
  engine.Release();
  EXPECT_EQ(first.Docid(), 1u);
}

// Each query of a batch keeps its own context: one whose deadline passed while it waited is
// answered DEADLINE_EXCEEDED, its batch mates normally.
TEST(BatchingEngineTest, EachQueryOfABatchKeepsItsOwnDeadline) {
  FakeBatchEngine engine;
  engine.Hold(1);
  auto batching = Make(engine, {.threshold = 10, .max_wait = absl::Hours(1), .runners = 2});
  Call first;
  first.Start(*batching, Q(1, "work:1"));
  ASSERT_TRUE(engine.WaitUntilHolding());
  absl::StatusOr<index::SearchResult> live, expired;
  std::thread t1([&] { live = batching->Search(Q(2, "work:5"), {}); });
  std::thread t2([&] {
    expired = batching->Search(Q(3, "work:5"), {.deadline = absl::Now() - absl::Seconds(1)});
  });
  t1.join();
  t2.join();
  EXPECT_EQ(engine.batch_sizes(), std::vector<size_t>{2});
  ASSERT_TRUE(live.ok()) << live.status();
  EXPECT_EQ(live->hits.at(0).docid, 2u);
  EXPECT_EQ(expired.status().code(), absl::StatusCode::kDeadlineExceeded);
  engine.Release();
  EXPECT_EQ(first.Docid(), 1u);
}

// Many callers at once: every one gets its own answer, and the batches add up to the calls.
TEST(BatchingEngineTest, ManyCallersEachGetTheirOwnAnswer) {
  FakeBatchEngine engine;
  auto batching =
      Make(engine, {.threshold = 500, .max_wait = absl::Microseconds(200), .runners = 3});
  constexpr int kThreads = 32, kPerThread = 50;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        const uint32_t id = static_cast<uint32_t>(t * kPerThread + i + 1);
        auto r = batching->Search(Q(id, absl::StrCat("work:", id % 97)), {});
        if (!r.ok() || r->hits.size() != 1 || r->hits[0].docid != id) ++wrong;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(wrong, 0);
  const BatchingStats stats = batching->stats();
  EXPECT_EQ(stats.batched_queries, uint64_t{kThreads} * kPerThread);
  uint64_t in_batches = 0;
  for (size_t n : engine.batch_sizes()) in_batches += n;
  EXPECT_EQ(in_batches + (stats.batches - engine.batch_sizes().size()),
            uint64_t{kThreads} * kPerThread);
}

}  // namespace
}  // namespace tandem::scheduler
