#include "base/memory_breaker.h"

#include "absl/strings/str_cat.h"

namespace tandem::base {

void MemoryBreaker::Account::Release(uint64_t bytes) {
  used_.fetch_sub(bytes, std::memory_order_relaxed);
  breaker_.used_.fetch_sub(bytes, std::memory_order_relaxed);
}

bool MemoryBreaker::Account::ReserveReclaiming(uint64_t bytes) {
  if (TryReserve(bytes)) return true;
  if (bytes > breaker_.limit_) return false;
  absl::MutexLock lock(&breaker_.reclaim_mu_);
  for (const auto& other : breaker_.accounts_) {
    if (other.get() == this) continue;
    for (const auto& [id, reclaim] : other->reclaimers_) {
      const uint64_t used = breaker_.used();
      const uint64_t free = breaker_.limit_ > used ? breaker_.limit_ - used : 0;
      if (free >= bytes) return TryReserve(bytes);
      reclaim(bytes - free);
    }
  }
  return TryReserve(bytes);
}

uint64_t MemoryBreaker::Account::AddReclaimer(std::function<void(uint64_t bytes)> reclaimer) {
  absl::MutexLock lock(&breaker_.reclaim_mu_);
  const uint64_t id = breaker_.next_reclaimer_++;
  reclaimers_.emplace_back(id, std::move(reclaimer));
  return id;
}

void MemoryBreaker::Account::RemoveReclaimer(uint64_t id) {
  absl::MutexLock lock(&breaker_.reclaim_mu_);
  std::erase_if(reclaimers_, [id](const auto& reclaimer) { return reclaimer.first == id; });
}

MemoryBreaker::Account& MemoryBreaker::AddAccount(std::string name) {
  return *accounts_.emplace_back(new Account(*this, std::move(name)));
}

bool MemoryBreaker::TryReserve(uint64_t bytes, Account& account) {
  // The total is the only shared bound: a compare-and-swap keeps two holders from both passing
  // it. The account's count is bookkeeping and follows.
  uint64_t used = used_.load(std::memory_order_relaxed);
  do {
    if (bytes > limit_ || used > limit_ - bytes) return false;
  } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
  account.used_.fetch_add(bytes, std::memory_order_relaxed);
  return true;
}

std::vector<std::pair<std::string, uint64_t>> MemoryBreaker::Usage() const {
  std::vector<std::pair<std::string, uint64_t>> usage;
  for (const auto& account : accounts_) usage.emplace_back(account->name(), account->used());
  return usage;
}

std::string MemoryBreaker::Describe() const {
  std::string text;
  for (const auto& [name, bytes] : Usage()) {
    absl::StrAppend(&text, text.empty() ? "" : ", ", name, " ", bytes >> 20, " MiB");
  }
  return text;
}

}  // namespace tandem::base
