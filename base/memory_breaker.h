// File: memory_breaker.h
//
// The node's memory circuit breaker: one budget of bytes for everything the node holds on behalf
// of its clients (the responses of admitted queries, the filter cache, the Watch streams' queued
// events), each holder charging its own account. A holder reserves before it holds and releases
// when it lets go; a reservation that would take the total past the limit is refused, and the
// holder gives way in its own manner: a query is refused RESOURCE_EXHAUSTED, a filter is not
// cached, a Watch stream drops events. Each holder also keeps its own bound (its flag); the
// breaker bounds their sum, so that no mix of clients takes the node past it.
//
// Holders that can let go on demand (a cache, queues that may drop) give a reclaimer: a holder
// that must not give way first (queries) reserves with ReserveReclaiming, which asks the others to
// free what is missing before it refuses. So a full cache never refuses a query by itself.
//
// Thread-safe. Reserving is lock-free; reclaiming is serialized by the breaker's lock, which is
// taken before any holder's lock (a reclaimer takes its holder's), never after: a holder calls
// TryReserve and Release under its own lock, never ReserveReclaiming or Add/RemoveReclaimer.
//
//   MemoryBreaker breaker(uint64_t{512} << 20);
//   MemoryBreaker::Account& cache = breaker.AddAccount("filter_cache");
//   if (cache.TryReserve(bytes)) { ... hold ...; cache.Release(bytes); }
//   const uint64_t id = cache.AddReclaimer([&](uint64_t bytes) { ... evict, Release ... });
//   if (!responses.ReserveReclaiming(bytes)) return absl::ResourceExhaustedError(...);
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"

namespace tandem::base {

class MemoryBreaker {
 public:
  class Account {
   public:
    // Reserves `bytes` if the breaker's total stays within its limit.
    bool TryReserve(uint64_t bytes) { return breaker_.TryReserve(bytes, *this); }
    // As TryReserve, but when the total would pass the limit first asks the other accounts'
    // reclaimers to free the difference, then tries once more.
    bool ReserveReclaiming(uint64_t bytes);
    // Gives back bytes this account reserved.
    void Release(uint64_t bytes);
    // How a holder charging this account frees about `bytes` when another account needs them (it
    // calls Release for what it frees). An account may have several holders (the filter caches of
    // an index and of the one replacing it), each with its reclaimer. Add it once the holder is
    // ready; remove it (by the id returned) before the holder goes.
    uint64_t AddReclaimer(std::function<void(uint64_t bytes)> reclaimer);
    void RemoveReclaimer(uint64_t id);
    uint64_t used() const { return used_.load(std::memory_order_relaxed); }
    const std::string& name() const { return name_; }
    const MemoryBreaker& breaker() const { return breaker_; }

   private:
    friend class MemoryBreaker;
    Account(MemoryBreaker& breaker, std::string name) : breaker_(breaker), name_(std::move(name)) {}
    MemoryBreaker& breaker_;
    const std::string name_;
    std::atomic<uint64_t> used_{0};
    // Guarded by breaker_.reclaim_mu_.
    std::vector<std::pair<uint64_t, std::function<void(uint64_t)>>> reclaimers_;
  };

  explicit MemoryBreaker(uint64_t limit) : limit_(limit) {}
  MemoryBreaker(const MemoryBreaker&) = delete;
  MemoryBreaker& operator=(const MemoryBreaker&) = delete;

  // A new account, alive as long as the breaker. Not thread-safe: add every account before the
  // holders run.
  Account& AddAccount(std::string name);

  uint64_t limit() const { return limit_; }
  uint64_t used() const { return used_.load(std::memory_order_relaxed); }
  // Each account's name and bytes, in the order they were added.
  std::vector<std::pair<std::string, uint64_t>> Usage() const;
  // "responses 3 MiB, filter_cache 250 MiB, watch_queues 0 MiB", for refusal messages.
  std::string Describe() const;

 private:
  bool TryReserve(uint64_t bytes, Account& account);

  const uint64_t limit_;
  std::atomic<uint64_t> used_{0};
  absl::Mutex reclaim_mu_;
  uint64_t next_reclaimer_ = 0;  // guarded by reclaim_mu_
  std::vector<std::unique_ptr<Account>> accounts_;
};

}  // namespace tandem::base
