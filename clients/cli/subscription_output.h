// File: subscription_output.h
//
// What tandem-cli prints for standing queries (subscribe, unsubscribe, subscriptions, match,
// watch): one readable line per subscription, document or event; --json prints the messages in
// their canonical proto3 JSON form instead (output.h's ToJson), one per line.
//
//   std::cout << FormatSubscription(subscription);   // "7  alice  year >= 2001"
//   std::cout << FormatWatchEvent(event);           // "m1  domain=\"enron.com\" year=2001"
#pragma once

#include <string>

#include "tandem/v1/subscription.pb.h"

namespace tandem::cli {

// "7  alice  terms contains \"ga\" AND year >= 2001\n".
std::string FormatSubscription(const tandem::v1::Subscription& subscription);

// "m1: alice, legal\n", or "m1: (none)\n".
std::string FormatDocumentMatch(const tandem::v1::DocumentMatch& match);

// A value as the predicates' text form writes it: 2001, 0.5, "enron.com".
std::string FormatValue(const tandem::v1::Value& value);

// "(12 documents dropped: this client read too slowly)\n" first when the event reports drops,
// then "m1  domain=\"enron.com\" year=2001\n".
std::string FormatWatchEvent(const tandem::v1::WatchEvent& event);

}  // namespace tandem::cli
