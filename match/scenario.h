// File: scenario.h
//
// Random subscriptions and events for tests and benchmarks, with the parameters of Margara &
// Cugola's evaluation (section 5, Table 1: the default scenario) as defaults:
//   10 interfaces, 22,500-27,500 filters each, 3-5 constraints per filter, 100 names drawn
//   uniformly (or by Zipf), 50/50 numeric and string constraints, numeric operators = != > < (25%
//   each), string operators = != substring prefix (25% each), 100 values; events of 3-5 attributes.
// Each name has one type (numeric or string, in the numeric share), so constraints and attributes
// on a name agree as they would in a real schema. String values are drawn from `num_values` words
// of 3-8 letters, so prefix and substring constraints can hold.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "match/model.h"

namespace tandem::match {

struct Scenario {
  int interfaces = 10;
  int filters_min = 22500;  // per interface
  int filters_max = 27500;
  int constraints_min = 3;  // per filter
  int constraints_max = 5;
  int names = 100;
  double zipf = 0;  // name popularity: 0 is uniform, otherwise the Zipf exponent
  double numeric_share = 0.5;
  int values = 100;
  int attributes_min = 3;  // per event
  int attributes_max = 5;
  int filters_per_subscription = 1;
  // Term constraints: with `vocabulary` > 0, a share of constraints become `terms contains w` and
  // events carry `event_terms` words, both drawn from w0 ... w{vocabulary-1} by Zipf(1).
  int vocabulary = 0;
  double term_share = 0;
  int event_terms = 0;
};

// A scenario of `interfaces` interfaces with filters_min..filters_max filters each, over `names`
// names and `values` values, the rest as the default: the sizes a test shrinks first.
//   Scenario small = SizedScenario(5, 200, 400, /*names=*/20, /*values=*/10);
Scenario SizedScenario(int interfaces, int filters_min, int filters_max, int names, int values);

// `scenario` with term constraints (see Scenario::vocabulary).
Scenario WithTerms(Scenario scenario, int vocabulary, double term_share, int event_terms);

struct GeneratedSubscription {
  InterfaceId interface = 0;
  Predicate predicate;  // normalized
};

// Subscriptions for every interface of `scenario`, in interface order.
std::vector<GeneratedSubscription> GenerateSubscriptions(const Scenario& scenario, uint64_t seed);

// `count` normalized events.
std::vector<Event> GenerateEvents(const Scenario& scenario, int count, uint64_t seed);

// The attribute name of index `i` ("a0", "a1", ...) and whether it is numeric.
std::string ScenarioName(int i);
bool ScenarioNameIsNumeric(const Scenario& scenario, int i);

}  // namespace tandem::match
