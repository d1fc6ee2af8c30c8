#include "match/brute_force_matcher.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace tandem::match {

absl::Status BruteForceMatcher::Add(SubscriptionId id, InterfaceId interface,
                                    const Predicate& predicate) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!subscriptions_.emplace(id, std::make_pair(interface, predicate)).second) {
    return absl::AlreadyExistsError(absl::StrCat("subscription ", id, " exists"));
  }
  return absl::OkStatus();
}

absl::Status BruteForceMatcher::Remove(SubscriptionId id) {
  std::lock_guard<std::mutex> lock(mu_);
  if (subscriptions_.erase(id) == 0) {
    return absl::NotFoundError(absl::StrCat("no subscription ", id));
  }
  return absl::OkStatus();
}

absl::Status BruteForceMatcher::Match(absl::Span<const Event> events,
                                      std::vector<std::vector<InterfaceId>>* matched) {
  std::lock_guard<std::mutex> lock(mu_);
  matched->assign(events.size(), {});
  for (size_t e = 0; e < events.size(); ++e) {
    std::vector<InterfaceId>& out = (*matched)[e];
    for (const auto& [id, entry] : subscriptions_) {
      if (PredicateMatches(entry.second, events[e])) out.push_back(entry.first);
    }
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return absl::OkStatus();
}

MatcherStats BruteForceMatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  MatcherStats stats;
  stats.subscriptions = subscriptions_.size();
  for (const auto& [id, entry] : subscriptions_) {
    stats.filters += entry.second.filters.size();
    for (const Filter& f : entry.second.filters) stats.constraints += f.constraints.size();
  }
  return stats;
}

}  // namespace tandem::match
