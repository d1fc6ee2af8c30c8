// File: m5_test_util.h
//
// The data the M5 tests (m5_tree_test.cc, m5_rules_test.cc) learn from: two straight lines meeting
// at a known x, beside an attribute that predicts nothing, so that the tests know the split, the
// slopes and what a rule covers.
#pragma once

#include "cost_model/m5_linear_model.h"

namespace tandem::cost_model {

// y = 2x for x = 1..last_of_first, y = 100 + 5x for x = last_of_first + 1..20; z = 7x mod 11 is a
// scrambled distractor.
inline M5Dataset Piecewise(int last_of_first) {
  M5Dataset d;
  d.attributes = {"x", "z"};
  for (int x = 1; x <= 20; ++x) {
    d.rows.push_back({static_cast<double>(x), static_cast<double>((7 * x) % 11)});
    d.targets.push_back(x <= last_of_first ? 2.0 * x : 100.0 + 5.0 * x);
  }
  return d;
}

}  // namespace tandem::cost_model
