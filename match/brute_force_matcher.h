// File: brute_force_matcher.h
//
// The reference matcher: every constraint of every subscription against every event
// (PredicateMatches). Tests and benchmarks check CpuMatcher and the CCM matcher against it.
#pragma once

#include <map>
#include <mutex>
#include <utility>

#include "match/matcher.h"

namespace tandem::match {

class BruteForceMatcher final : public Matcher {
 public:
  const char* name() const override { return "brute_force"; }
  absl::Status Add(SubscriptionId id, InterfaceId interface, const Predicate& predicate) override;
  absl::Status Remove(SubscriptionId id) override;
  absl::Status Match(absl::Span<const Event> events,
                     std::vector<std::vector<InterfaceId>>* matched) override;
  MatcherStats stats() const override;

 private:
  mutable std::mutex mu_;
  std::map<SubscriptionId, std::pair<InterfaceId, Predicate>> subscriptions_;
};

}  // namespace tandem::match
