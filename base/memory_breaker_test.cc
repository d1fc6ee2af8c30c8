#include "base/memory_breaker.h"

#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::base {
namespace {

using ::testing::ElementsAre;
using ::testing::Pair;

TEST(MemoryBreakerTest, RefusesAReservationThatWouldPassTheLimitWhoeverHoldsTheRest) {
  MemoryBreaker breaker(1000);
  MemoryBreaker::Account& cache = breaker.AddAccount("filter_cache");
  MemoryBreaker::Account& responses = breaker.AddAccount("responses");
  EXPECT_FALSE(cache.TryReserve(1001));
  EXPECT_TRUE(cache.TryReserve(700));
  EXPECT_FALSE(responses.TryReserve(301)) << "the cache's bytes count against every holder";
  EXPECT_TRUE(responses.TryReserve(300));
  EXPECT_FALSE(responses.TryReserve(1));
  EXPECT_FALSE(cache.TryReserve(~uint64_t{0})) << "no overflow";
  EXPECT_EQ(breaker.used(), 1000u);
  EXPECT_THAT(breaker.Usage(), ElementsAre(Pair("filter_cache", 700), Pair("responses", 300)));
  cache.Release(700);
  EXPECT_TRUE(responses.TryReserve(700));
  EXPECT_EQ(responses.used(), 1000u);
  EXPECT_EQ(cache.used(), 0u);
}

TEST(MemoryBreakerTest, ReserveReclaimingAsksTheOthersToFreeWhatIsMissingFirst) {
  MemoryBreaker breaker(1000);
  MemoryBreaker::Account& responses = breaker.AddAccount("responses");
  MemoryBreaker::Account& cache = breaker.AddAccount("filter_cache");
  MemoryBreaker::Account& queues = breaker.AddAccount("watch_queues");
  ASSERT_TRUE(cache.TryReserve(600));
  ASSERT_TRUE(queues.TryReserve(300));
  // Without reclaimers, nothing gives way.
  EXPECT_FALSE(responses.ReserveReclaiming(200));
  std::vector<uint64_t> asked;
  const uint64_t id = cache.AddReclaimer([&](uint64_t bytes) {
    asked.push_back(bytes);
    cache.Release(bytes);
  });
  EXPECT_FALSE(responses.ReserveReclaiming(1001)) << "more than the limit: no one is asked";
  EXPECT_TRUE(asked.empty());
  EXPECT_TRUE(responses.ReserveReclaiming(200));
  EXPECT_EQ(asked, std::vector<uint64_t>{100}) << "only the 100 bytes missing";
  EXPECT_EQ(cache.used(), 500u);
  EXPECT_EQ(breaker.used(), 1000u);
  // A reclaimer that cannot free enough: refused.
  cache.RemoveReclaimer(id);
  const uint64_t idle = cache.AddReclaimer([&](uint64_t) {});
  EXPECT_FALSE(responses.ReserveReclaiming(1));
  // Two holders of one account (an index's filter cache and its successor's): both are asked.
  const uint64_t other = cache.AddReclaimer([&](uint64_t bytes) { cache.Release(bytes); });
  EXPECT_TRUE(responses.ReserveReclaiming(50));
  EXPECT_EQ(cache.used(), 450u);
  cache.RemoveReclaimer(idle);
  cache.RemoveReclaimer(other);
  EXPECT_FALSE(responses.ReserveReclaiming(1)) << "no reclaimer left";
}

TEST(MemoryBreakerTest, DescribeNamesEachHolderInMiB) {
  MemoryBreaker breaker(uint64_t{1} << 30);
  breaker.AddAccount("responses");
  ASSERT_TRUE(breaker.AddAccount("filter_cache").TryReserve(uint64_t{3} << 20));
  EXPECT_EQ(breaker.Describe(), "responses 0 MiB, filter_cache 3 MiB");
}

TEST(MemoryBreakerTest, ConcurrentHoldersNeverPassTheLimit) {
  constexpr uint64_t kLimit = 10'000;
  MemoryBreaker breaker(kLimit);
  std::vector<MemoryBreaker::Account*> accounts;
  for (int i = 0; i < 4; ++i) accounts.push_back(&breaker.AddAccount("a"));
  std::atomic<bool> passed{false};
  std::vector<std::thread> threads;
  for (MemoryBreaker::Account* account : accounts) {
    threads.emplace_back([&, account] {
      for (int i = 0; i < 20'000; ++i) {
        if (account->TryReserve(7)) {
          if (breaker.used() > kLimit) passed = true;
          account->Release(7);
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(passed.load());
  EXPECT_EQ(breaker.used(), 0u);
}

}  // namespace
}  // namespace tandem::base
