// File: model.h
//
// Standing queries: the events, subscriptions and predicates of content-based matching (Margara &
// Cugola, "High performance content-based matching using GPUs", DEBS 2011, section 3), extended to
// text.
//
// - An event is a document: typed attributes (int64, double, string), each name at most once, plus
//   the analyzed terms of its text, a string-set attribute named `terms`.
// - A constraint is `name op value`: numbers with = != < > <= >=, strings with = != prefix
//   substring, and `terms contains "text"`, analyzed like a query (one constraint per term, so
//   `terms contains "gas prices"` needs both terms).
// - A filter is an AND of constraints; a predicate an OR of filters; a subscription one predicate
//   of one interface (a subscriber). An event matches an interface when at least one filter of one
//   of its subscriptions has every constraint satisfied.
// - A constraint on an attribute the event lacks is not satisfied (!= included), and a type
//   mismatch never satisfies (satisfies.h).
//
//   TANDEM_ASSIGN_OR_RETURN(Predicate p, ParsePredicate("year >= 2002 AND terms contains
//   \"gas\"")); TANDEM_ASSIGN_OR_RETURN(p, NormalizePredicate(std::move(p), analyzer, limits));
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "match/satisfies.h"

namespace tandem::index {
class Analyzer;
}

namespace tandem::match {

// The reserved name of an event's string-set attribute of analyzed terms.
inline constexpr absl::string_view kTermsName = "terms";

using SubscriptionId = uint64_t;
// A dense index the registry gives each interface name (subscriber id).
using InterfaceId = uint32_t;

struct Value {
  ValueType type = ValueType::kInt;
  int64_t i = 0;
  double d = 0;
  std::string s;

  static Value Int(int64_t v) { return Value{ValueType::kInt, v, 0, {}}; }
  static Value Double(double v) { return Value{ValueType::kDouble, 0, v, {}}; }
  static Value String(std::string v) { return Value{ValueType::kString, 0, 0, std::move(v)}; }

  ValueRef ref() const { return ValueRef{type, i, d, s.data(), static_cast<uint32_t>(s.size())}; }
  friend bool operator==(const Value&, const Value&) = default;
};

struct Constraint {
  std::string name;
  Op op = Op::kEq;
  Value value;
  friend bool operator==(const Constraint&, const Constraint&) = default;
};

struct Filter {
  std::vector<Constraint> constraints;
  friend bool operator==(const Filter&, const Filter&) = default;
};

struct Predicate {
  std::vector<Filter> filters;
  friend bool operator==(const Predicate&, const Predicate&) = default;
};

struct Attribute {
  std::string name;
  Value value;
  friend bool operator==(const Attribute&, const Attribute&) = default;
};

// A normalized event: attributes sorted by name, names unique, none named `terms`; terms sorted
// and unique.
struct Event {
  std::vector<Attribute> attributes;
  std::vector<std::string> terms;
};

// Bounds on what one subscription or event may hold (server flags).
struct Limits {
  int max_filters_per_predicate = 64;
  int max_constraints_per_filter = 32;  // at most kMaxConstraintsPerFilter
  int max_value_bytes = 256;            // a string value or attribute name
  int max_attributes_per_event = 256;
  int max_terms_per_event = 100000;
};
// Per-filter counters are 8 bits wide on both engines.
inline constexpr int kMaxConstraintsPerFilter = 255;

absl::string_view OpName(Op op);  // "=", "!=", "<", ..., "prefix", "substring", "contains"
absl::string_view ValueTypeName(ValueType type);  // "int", "double", "string"

// Checks and normalizes a parsed or decoded predicate: each `contains` value analyzed into one
// constraint per term (duplicate terms of one filter kept once), names and operators checked
// against types, limits enforced after analysis. INVALID_ARGUMENT naming the filter, the
// constraint and the problem: an empty predicate or filter, an empty or over-long name, `terms`
// with another operator than contains or contains on another name, an ordering operator on a
// string, prefix or substring on a number, a NaN or infinite double, a contains that analyzes to
// no term, too many filters or constraints. `analyzer` may be null when no constraint is a
// contains.
absl::StatusOr<Predicate> NormalizePredicate(Predicate predicate, const index::Analyzer* analyzer,
                                             const Limits& limits);

// Builds a normalized event from attributes and text (analyzed with `analyzer`, which may be null
// when `text` is empty). INVALID_ARGUMENT for a duplicate, empty, reserved (`terms`) or over-long
// name, a NaN or infinite double, an over-long string, or too many attributes or terms.
absl::StatusOr<Event> MakeEvent(std::vector<Attribute> attributes, absl::string_view text,
                                const index::Analyzer* analyzer, const Limits& limits);

// The text form (predicate_parser.h) of a predicate, of a value: ParsePredicate(Format(p)) == p.
std::string FormatPredicate(const Predicate& predicate);
std::string FormatValue(const Value& value);

// Whether the normalized `event` satisfies `filter` / `predicate`, by evaluating every constraint:
// the brute-force reference the matchers are tested against.
bool FilterMatches(const Filter& filter, const Event& event);
bool PredicateMatches(const Predicate& predicate, const Event& event);

}  // namespace tandem::match
