#include "cost_model/m5_rules.h"

#include <numeric>

#include "absl/strings/str_cat.h"
#include "cost_model/m5_text.h"

namespace tandem::cost_model {
namespace {

// The path's conditions, keeping for each (attribute, direction) only the tightest threshold, in
// order of first appearance.
std::vector<RuleCondition> PathConditions(const std::vector<const M5Node*>& path) {
  std::vector<RuleCondition> conditions;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    const RuleCondition c{path[i]->attribute, path[i + 1] == path[i]->left.get(),
                          path[i]->threshold};
    bool merged = false;
    for (RuleCondition& have : conditions) {
      if (have.attribute == c.attribute && have.less_equal == c.less_equal) {
        have.threshold = c.less_equal ? std::min(have.threshold, c.threshold)
                                      : std::max(have.threshold, c.threshold);
        merged = true;
      }
    }
    if (!merged) conditions.push_back(c);
  }
  return conditions;
}

}  // namespace

bool M5Rule::Covers(absl::Span<const double> x) const {
  for (const RuleCondition& c : conditions) {
    if (!c.Holds(x)) return false;
  }
  return true;
}

absl::StatusOr<M5Rules> M5Rules::Build(const M5Dataset& data, const M5Options& options) {
  if (absl::Status s = data.Validate(); !s.ok()) return s;
  if (data.size() == 0) return absl::InvalidArgumentError("no instances to build M5 rules from");
  M5Rules out;
  out.attributes_ = data.attributes;
  std::vector<size_t> remaining(data.size());
  std::iota(remaining.begin(), remaining.end(), 0);
  // Every round removes at least one instance (the chosen leaf covers >= 1), so this ends.
  while (!remaining.empty()) {
    absl::StatusOr<M5Tree> tree = M5Tree::Build(data, remaining, options);
    if (!tree.ok()) return tree.status();
    std::vector<const M5Node*> best;
    tree->ForEachLeaf([&best](const std::vector<const M5Node*>& path) {
      if (best.empty() || path.back()->num_instances > best.back()->num_instances) best = path;
    });
    M5Rule rule;
    rule.conditions = PathConditions(best);
    rule.model = tree->smooth() ? SmoothedModel(best, tree->smoothing_k()) : best.back()->model;
    std::vector<size_t> left_over;
    for (size_t i : remaining) {
      if (rule.Covers(data.rows[i])) {
        ++rule.coverage;
      } else {
        left_over.push_back(i);
      }
    }
    remaining = std::move(left_over);
    if (remaining.empty()) rule.conditions.clear();  // the default rule
    out.rules_.push_back(std::move(rule));
  }
  return out;
}

size_t M5Rules::RuleFor(absl::Span<const double> x) const {
  for (size_t r = 0; r < rules_.size(); ++r) {
    if (rules_[r].Covers(x)) return r;
  }
  return rules_.size() - 1;
}

double M5Rules::Predict(absl::Span<const double> x) const {
  return rules_[RuleFor(x)].model.Predict(x);
}

std::string M5Rules::Save() const {
  std::string out = "m5rules 1\n";
  AppendAttributes(attributes_, &out);
  absl::StrAppend(&out, "rules ", rules_.size(), "\n");
  for (const M5Rule& rule : rules_) {
    absl::StrAppend(&out, "rule ", rule.coverage, " ", rule.conditions.size(), "\n");
    for (const RuleCondition& c : rule.conditions) {
      absl::StrAppend(&out, "if ", c.attribute, c.less_equal ? " <= " : " > ",
                      FormatDouble(c.threshold), "\n");
    }
    absl::StrAppend(&out, "then");
    AppendModel(rule.model, &out);
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "end\n");
  return out;
}

absl::StatusOr<M5Rules> M5Rules::Read(TextLines& lines) {
  if (absl::Status s = ReadHeader(lines, "m5rules", "1"); !s.ok()) return s;
  M5Rules out;
  if (absl::Status s = ReadAttributes(lines, &out.attributes_); !s.ok()) return s;
  const size_t d = out.attributes_.size();
  std::vector<absl::string_view> f;
  size_t count = 0;
  if (!lines.Next(&f) || f.size() != 2 || f[0] != "rules" || !ParseCount(f[1], &count)) {
    return lines.Error("expected 'rules <count>'");
  }
  if (count == 0) return lines.Error("a rule set needs at least one rule");
  for (size_t r = 0; r < count; ++r) {
    M5Rule rule;
    size_t num_conditions = 0;
    if (!lines.Next(&f) || f.size() != 3 || f[0] != "rule" || !ParseCount(f[1], &rule.coverage) ||
        !ParseCount(f[2], &num_conditions)) {
      return lines.Error("expected 'rule <coverage> <conditions>' (rule ", r + 1, " of ", count,
                         ")");
    }
    for (size_t c = 0; c < num_conditions; ++c) {
      RuleCondition cond;
      size_t attribute = 0;
      if (!lines.Next(&f) || f.size() != 4 || f[0] != "if") {
        return lines.Error("expected 'if <attribute> <=|> <threshold>'");
      }
      if (!ParseCount(f[1], &attribute) || attribute >= d) {
        return lines.Error("condition attribute '", f[1], "' is not one of the ", d, " attributes");
      }
      if (f[2] != "<=" && f[2] != ">") return lines.Error("condition operator must be <= or >");
      if (!ParseFinite(f[3], &cond.threshold)) return lines.Error("bad threshold '", f[3], "'");
      cond.attribute = static_cast<int>(attribute);
      cond.less_equal = f[2] == "<=";
      rule.conditions.push_back(cond);
    }
    if (!lines.Next(&f) || f[0] != "then") return lines.Error("expected 'then <model>'");
    if (absl::Status s = ParseModel(lines, absl::MakeConstSpan(f).subspan(1), d, &rule.model);
        !s.ok()) {
      return s;
    }
    out.rules_.push_back(std::move(rule));
  }
  if (absl::Status s = ReadEnd(lines); !s.ok()) return s;
  return out;
}

absl::StatusOr<M5Rules> M5Rules::Parse(absl::string_view text) {
  return ParseWhole(text, "<m5rules>", &M5Rules::Read);
}

}  // namespace tandem::cost_model
