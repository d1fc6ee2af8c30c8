// File: m5_rules.h
//
// M5 rules (Holmes, Hall & Frank 1999, "Generating rule sets from model trees"): a decision list of
// rules, each a conjunction of threshold conditions and a linear model, made by
// separate-and-conquer:
//
//   1. Build a pruned M5 tree (m5_tree.h) on the instances not yet covered.
//   2. Turn its leaf with the highest coverage (the paper's default heuristic; ties: leftmost) into
//      a rule: the conditions on the path to the leaf (for each attribute and direction only the
//      tightest kept) and the leaf's model, smoothed along the path when the tree smooths, as
//      Weka's M5Rules does.
//   3. Remove the instances the rule covers and repeat until none remain. The last rule covers all
//      that was left; its conditions are dropped, so it is the default rule and every input is
//      covered.
//
// A prediction is the model of the first rule whose conditions hold (the default rule when none
// does, which only a parsed file that lacks one can reach).
//
//   TANDEM_ASSIGN_OR_RETURN(M5Rules rules, M5Rules::Build(data));
//   double y = rules.Predict(row);
//   TANDEM_ASSIGN_OR_RETURN(M5Rules same, M5Rules::Parse(rules.Save()));
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cost_model/m5_linear_model.h"
#include "cost_model/m5_tree.h"

namespace tandem::cost_model {

class TextLines;

struct RuleCondition {
  int attribute = 0;
  bool less_equal = true;  // x[attribute] <= threshold; else x[attribute] > threshold
  double threshold = 0;
  bool Holds(absl::Span<const double> x) const {
    return less_equal ? x[attribute] <= threshold : x[attribute] > threshold;
  }
};

struct M5Rule {
  std::vector<RuleCondition> conditions;  // all must hold; empty: always
  LinearModel model;
  size_t coverage = 0;  // training instances the rule took
  bool Covers(absl::Span<const double> x) const;
};

class M5Rules {
 public:
  static absl::StatusOr<M5Rules> Build(const M5Dataset& data, const M5Options& options = {});

  double Predict(absl::Span<const double> x) const;
  // Index of the rule that answers `x`.
  size_t RuleFor(absl::Span<const double> x) const;

  const std::vector<M5Rule>& rules() const { return rules_; }
  const std::vector<std::string>& attributes() const { return attributes_; }

  // Text form:
  //   m5rules 1
  //   attributes 2 x z
  //   rules 2
  //   rule 12 1             (coverage, number of conditions)
  //   if 0 <= 10.5          (attribute, "<=" or ">", threshold)
  //   then 0 2 0            (intercept, one coefficient per attribute)
  //   rule 8 0
  //   then 100 5 0
  //   end
  std::string Save() const;
  static absl::StatusOr<M5Rules> Parse(absl::string_view text);
  // Reads one rule set from `lines` (which may hold more after its "end"); errors name the line.
  static absl::StatusOr<M5Rules> Read(TextLines& lines);

 private:
  M5Rules() = default;

  std::vector<std::string> attributes_;
  std::vector<M5Rule> rules_;
};

}  // namespace tandem::cost_model
