// File: subscription_convert.h
//
// Conversions between tandem.v1's subscription messages (subscription.proto) and the match layer's
// model (match/model.h). Decoding checks what the wire can express and the model cannot (an
// operator or a value left unset) and names the place, in the words NormalizePredicate and
// MakeEvent use for the rest ("filter 2, constraint 1 (year >=): the value is not set"); everything
// else is theirs to check.
//
//   TANDEM_ASSIGN_OR_RETURN(match::Predicate p, PredicateFromProto(request.predicate()));
//   TANDEM_ASSIGN_OR_RETURN(match::Event e, EventFromProto(document, analyzer, limits));
#pragma once

#include "absl/status/statusor.h"
#include "index/analyzer.h"
#include "match/model.h"
#include "tandem/v1/subscription.pb.h"

namespace tandem::server {

// INVALID_ARGUMENT for a constraint whose operator or value is unset (or an operator number this
// build does not know). Not normalized: pass the result to match::NormalizePredicate.
absl::StatusOr<match::Predicate> PredicateFromProto(const tandem::v1::Predicate& predicate);

void PredicateToProto(const match::Predicate& predicate, tandem::v1::Predicate* out);

absl::StatusOr<match::Value> ValueFromProto(const tandem::v1::Value& value);
void ValueToProto(const match::Value& value, tandem::v1::Value* out);

// The normalized event of one document (match::MakeEvent, its text analyzed with `analyzer`).
// INVALID_ARGUMENT for an attribute without a value, or MakeEvent's error.
absl::StatusOr<match::Event> EventFromProto(const tandem::v1::Document& document,
                                            const index::Analyzer& analyzer,
                                            const match::Limits& limits);

}  // namespace tandem::server
