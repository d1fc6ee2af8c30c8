// File: subscription_calls.h
//
// What each method of tandem.v1.SubscriptionService does, without gRPC: a request message in, a
// response message or an absl::Status out. Predicates (messages or text, parsed by
// match::ParsePredicate) are normalized with the index's own analyzer, so `terms contains` means
// what a query's text means; documents become events by match::MakeEvent. Errors are
// INVALID_ARGUMENT naming the problem (the model's own messages), NOT_FOUND for an unknown id, and
// the registry's. Match hands every matched document to the Watch streams of its interfaces
// (watch_hub.h). SubscriptionService (subscription_service.h) runs these on its workers.
//
//   SubscriptionCalls calls(registry, index.analyzer(), {.max_match_documents = 1024}, &hub,
//                           &metrics);
//   absl::StatusOr<tandem::v1::SubscribeResponse> response = calls.Subscribe(request);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "index/analyzer.h"
#include "match/subscription_registry.h"
#include "tandem/v1/subscription.pb.h"

namespace tandem::server {

class SubscriptionMetrics;
class WatchHub;

// Who makes a call. With mutual TLS (SubscriptionServiceOptions::authorize_by_certificate) an
// interface is bound to client certificates: a caller acts only for the interfaces named as one
// of its certificate's identities (subject CN or a subjectAltName), and is refused
// PERMISSION_DENIED for any other. Without it (`bound` false) every caller may act for every
// interface, as any client of the port can.
struct Caller {
  bool bound = false;
  std::vector<std::string> identities;
  bool Owns(absl::string_view interface) const;
};

struct SubscriptionCallsOptions {
  // Documents one Match call may carry (--max-match-documents).
  uint32_t max_match_documents = 1024;
};

class SubscriptionCalls {
 public:
  // `hub` and `metrics` may be null; everything must outlive the calls.
  SubscriptionCalls(match::SubscriptionRegistry& registry, const index::Analyzer& analyzer,
                    const SubscriptionCallsOptions& options, WatchHub* hub,
                    SubscriptionMetrics* metrics);

  // Subscribe, Unsubscribe, ListSubscriptions and Watch are the interface's own: PERMISSION_DENIED
  // when `caller` does not own it. A bound caller listing "all" gets its own interfaces'. Match is
  // a publisher's and open to every caller.
  absl::StatusOr<tandem::v1::SubscribeResponse> Subscribe(
      const tandem::v1::SubscribeRequest& request, const Caller& caller = {});
  absl::StatusOr<tandem::v1::UnsubscribeResponse> Unsubscribe(
      const tandem::v1::UnsubscribeRequest& request, const Caller& caller = {});
  absl::StatusOr<tandem::v1::ListSubscriptionsResponse> ListSubscriptions(
      const tandem::v1::ListSubscriptionsRequest& request, const Caller& caller = {}) const;
  absl::Status AuthorizeWatch(absl::string_view interface, const Caller& caller) const;
  absl::StatusOr<tandem::v1::MatchResponse> Match(const tandem::v1::MatchRequest& request);

  // The normalized predicate a SubscribeRequest asks for (its text parsed, or its messages
  // converted; then match::NormalizePredicate). INVALID_ARGUMENT naming the problem.
  absl::StatusOr<match::Predicate> RequestedPredicate(
      const tandem::v1::SubscribeRequest& request) const;

 private:
  absl::StatusOr<tandem::v1::SubscribeResponse> DoSubscribe(
      const tandem::v1::SubscribeRequest& request);
  void Publish(const tandem::v1::MatchResponse& response, const tandem::v1::MatchRequest& request,
               const std::vector<match::Event>& events);
  // Records a Subscribe or Unsubscribe and sets the subscriptions gauge from the registry.
  void RecordChange(absl::string_view op, absl::StatusCode code);

  match::SubscriptionRegistry& registry_;
  const index::Analyzer& analyzer_;
  const SubscriptionCallsOptions options_;
  WatchHub* const hub_;
  SubscriptionMetrics* const metrics_;
  // Orders the gauge's updates: the last change to set it read the registry last.
  absl::Mutex gauge_mu_;
};

}  // namespace tandem::server
