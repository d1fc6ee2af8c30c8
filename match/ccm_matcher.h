// File: ccm_matcher.h
//
// The CCM matcher on the GPU: Margara & Cugola, "High performance content-based matching using
// GPUs" (DEBS 2011), section 4, extended to `terms contains` constraints (a row per term) and to
// batches of events. Plain C++; the CUDA code is behind it (ccm_kernels.cu).
//
// - The tables of section 4.1 stay on the device. Add and Remove change their host mirror in place
//   (ccm_tables.h) and the next Match first copies the pages they touched.
// - A Match selects each event's rows on the host (map Names, the terms' rows); each launch then
//   costs one copy of its inputs from pinned memory, one kernel (Algorithm 1 over a flattened
//   work list, ccm_launch.h) counting into each event's own counters and interface bitmap, one
//   copy of the bitmaps back, and one wait. A small launch (one event, say) skips both copies: its
//   inputs travel in the kernel's parameters and the kernel's last block writes the bitmaps to
//   pinned host memory. Events beyond one launch (max_batch_events, or fewer when the counters
//   would pass max_counter_bytes) go in further launches.
// - Count and Interfaces are double-buffered (section 4.3): each launch resets the copies the
//   previous one used, so no memset runs per Match.
//
// Thread-safe: one mutex serializes Add, Remove and Match, whose device work is one stream.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<CcmMatcher> gpu, CcmMatcher::Create(CcmOptions{}));
//   TANDEM_RETURN_IF_ERROR(gpu->Add(id, interface, normalized_predicate));
//   TANDEM_RETURN_IF_ERROR(gpu->Match(events, &matched));
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "match/matcher.h"
#include "match/model.h"

namespace tandem::match {

struct CcmOptions {
  int device = 0;  // CUDA device ordinal
  // Events per kernel launch, 1 to 65536; a Match with more runs several launches.
  int max_batch_events = 1024;
  // Device memory for the two copies of each launch slot's counters and bitmap: with many filters
  // a launch takes fewer events (at least one).
  size_t max_counter_bytes = size_t{1} << 30;
};

class CcmMatcher final : public Matcher {
 public:
  // INVALID_ARGUMENT for bad options, UNAVAILABLE when the device is missing or unusable (no
  // driver, no such ordinal), FAILED_PRECONDITION when the kernel has no code for it.
  static absl::StatusOr<std::unique_ptr<CcmMatcher>> Create(const CcmOptions& options);
  ~CcmMatcher() override;

  const char* name() const override { return "gpu"; }
  // Also INVALID_ARGUMENT for a filter without constraints or with more than
  // kMaxConstraintsPerFilter, a NaN or an unknown operator; RESOURCE_EXHAUSTED for an interface
  // id of 2^24 or more, and when the device cannot hold the tables (the Add is undone).
  absl::Status Add(SubscriptionId id, InterfaceId interface, const Predicate& predicate) override;
  absl::Status Remove(SubscriptionId id) override;
  // Also INVALID_ARGUMENT for an event whose attribute names or terms are not sorted and unique.
  absl::Status Match(absl::Span<const Event> events,
                     std::vector<std::vector<InterfaceId>>* matched) override;
  MatcherStats stats() const override;

 private:
  struct Impl;
  explicit CcmMatcher(std::unique_ptr<Impl> impl);

  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::match
