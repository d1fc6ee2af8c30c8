// File: matcher.h
//
// The interface of a content-based matcher: subscriptions in, each event's matching interfaces
// out. Two implement it and give identical answers: `CpuMatcher` (cpu_matcher.h, a counting
// matcher in the style of Siena's SFF, indexed by attribute) and the CCM matcher on the GPU
// (ccm_matcher.h, Margara & Cugola, section 4). `BruteForceMatcher` is the reference both are
// tested against.
//
//   TANDEM_RETURN_IF_ERROR(matcher.Add(id, interface, normalized_predicate));
//   std::vector<std::vector<InterfaceId>> matched;
//   TANDEM_RETURN_IF_ERROR(matcher.Match(events, &matched));  // matched[e]: sorted, unique
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "match/model.h"

namespace tandem::match {

struct MatcherStats {
  size_t subscriptions = 0;
  size_t filters = 0;       // live filters
  size_t constraints = 0;   // live constraints
  size_t host_bytes = 0;    // memory held for matching, on the host
  size_t device_bytes = 0;  // and on the device
};

class Matcher {
 public:
  virtual ~Matcher() = default;

  // Short engine name for metrics and logs: "cpu", "gpu", "brute_force".
  virtual const char* name() const = 0;

  // Adds a normalized predicate (NormalizePredicate) under a new id. Visible to every Match that
  // starts after Add returns. ALREADY_EXISTS for a known id; RESOURCE_EXHAUSTED when the engine
  // cannot hold more (device memory, filter ids).
  virtual absl::Status Add(SubscriptionId id, InterfaceId interface,
                           const Predicate& predicate) = 0;

  // Removes a subscription. NOT_FOUND for an unknown id.
  virtual absl::Status Remove(SubscriptionId id) = 0;

  // Matches normalized events (MakeEvent). On success `matched` has one entry per event: the
  // interfaces matched, ascending and unique. Thread-safe with Add, Remove and other Match calls.
  virtual absl::Status Match(absl::Span<const Event> events,
                             std::vector<std::vector<InterfaceId>>* matched) = 0;

  virtual MatcherStats stats() const = 0;
};

}  // namespace tandem::match
