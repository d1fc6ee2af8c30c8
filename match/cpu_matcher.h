// File: cpu_matcher.h
//
// The CPU matcher: a counting algorithm in the style of Siena's SFF (Carzaniga & Wolf, "Forwarding
// in a content-based network", SIGCOMM 2003), the CPU reference of Margara & Cugola (DEBS 2011,
// section 5). Constraints are indexed by attribute name, then by operator and type, so an event's
// attribute finds the constraints it satisfies by hash lookups and binary searches instead of
// evaluating every constraint of its name (CCM's row, section 4.1); `terms contains` constraints
// are indexed by term. Each satisfied constraint counts for its filter; a filter whose count
// reaches its size matches its interface, and the remaining constraints of a matched interface
// are skipped (SFF's pruning). Answers equal BruteForceMatcher's: every comparison follows
// `Satisfies` (satisfies.h).
//
// Add and Remove change the index in place: Remove tombstones a subscription's filters, purged
// when they make up a large share of the index; sorted rows take new constraints at the next Match.
// Match runs under a shared lock (concurrent Match calls proceed together), Add and Remove under
// an exclusive one. One batch's events are matched in parallel by `threads` threads (the caller
// and a pool the matcher owns).
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<CpuMatcher> matcher,
//                           CpuMatcher::Create(CpuMatcherOptions{.threads = 4}));
//   TANDEM_RETURN_IF_ERROR(matcher->Add(id, interface, normalized_predicate));
//   TANDEM_RETURN_IF_ERROR(matcher->Match(events, &matched));
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "match/matcher.h"
#include "match/model.h"

namespace tandem::match {
namespace cpu_matcher_internal {
struct Index;
struct Scratch;
class WorkerPool;
}  // namespace cpu_matcher_internal

struct CpuMatcherOptions {
  // Threads matching the events of one batch, the calling thread included: 1..256.
  int threads = 1;
};

class CpuMatcher final : public Matcher {
 public:
  // INVALID_ARGUMENT for threads outside 1..256.
  static absl::StatusOr<std::unique_ptr<CpuMatcher>> Create(const CpuMatcherOptions& options = {});
  ~CpuMatcher() override;

  const char* name() const override { return "cpu"; }
  // Also INVALID_ARGUMENT for a filter without constraints or with more than
  // kMaxConstraintsPerFilter, or a NaN value.
  absl::Status Add(SubscriptionId id, InterfaceId interface, const Predicate& predicate) override;
  absl::Status Remove(SubscriptionId id) override;
  // Also INVALID_ARGUMENT for an event whose attribute names or terms are not sorted and unique.
  absl::Status Match(absl::Span<const Event> events,
                     std::vector<std::vector<InterfaceId>>* matched) override;
  MatcherStats stats() const override;

  // The number of constraints held in the rows that the events' attribute names and terms select,
  // summed over the events: the work of CCM's constraint selection (section 4), a cost feature for
  // the scheduler. Entries of removed subscriptions count until they are purged. Hash lookups only.
  int64_t SelectedConstraints(absl::Span<const Event> events) const;

 private:
  explicit CpuMatcher(const CpuMatcherOptions& options);

  // Matches under the shared lock, on the caller and the pool.
  void MatchLocked(absl::Span<const Event> events,
                   std::vector<std::vector<InterfaceId>>* matched) const;
  // A matching thread's counters, sized for the index; under the shared lock.
  cpu_matcher_internal::Scratch* AcquireScratch() const;
  void ReleaseScratch(cpu_matcher_internal::Scratch* scratch) const;

  const CpuMatcherOptions options_;
  std::unique_ptr<cpu_matcher_internal::Index> index_;
  std::unique_ptr<cpu_matcher_internal::WorkerPool> pool_;  // null with one thread
};

}  // namespace tandem::match
