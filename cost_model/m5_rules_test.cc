// M5 rules (Holmes, Hall & Frank 1999): separate-and-conquer over M5 trees, first-rule semantics,
// text round trip.
#include "cost_model/m5_rules.h"

#include <random>

#include "cost_model/m5_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::cost_model {
namespace {

using ::testing::HasSubstr;

TEST(M5RulesTest, LargestLeafBecomesTheFirstRule) {
  M5Options options;
  options.smooth = false;
  // The first line covers x = 1..12, 12 instances; the second the other 8.
  auto rules = M5Rules::Build(Piecewise(12), options);
  ASSERT_TRUE(rules.ok()) << rules.status();
  ASSERT_EQ(rules->rules().size(), 2u);
  const M5Rule& first = rules->rules()[0];
  ASSERT_EQ(first.conditions.size(), 1u);
  EXPECT_EQ(first.conditions[0].attribute, 0);
  EXPECT_TRUE(first.conditions[0].less_equal);
  EXPECT_DOUBLE_EQ(first.conditions[0].threshold, 12.5);
  EXPECT_EQ(first.coverage, 12u);
  EXPECT_NEAR(first.model.coef[0], 2.0, 1e-4);
  // The rest (x > 12.5) is one straight line: a tree of one leaf, the default rule.
  const M5Rule& last = rules->rules()[1];
  EXPECT_TRUE(last.conditions.empty());
  EXPECT_EQ(last.coverage, 8u);
  EXPECT_NEAR(last.model.coef[0], 5.0, 1e-4);
  EXPECT_NEAR(last.model.intercept, 100.0, 1e-2);
  EXPECT_NEAR(rules->Predict({3, 0}), 6.0, 1e-3);
  EXPECT_NEAR(rules->Predict({19, 0}), 195.0, 1e-3);
}

TEST(M5RulesTest, RulesCoverEveryInstance) {
  M5Dataset d;
  d.attributes = {"a", "b", "c"};
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(0, 10);
  for (int i = 0; i < 400; ++i) {
    const double a = u(rng), b = u(rng), c = std::floor(u(rng) / 4);
    d.rows.push_back({a, b, c});
    d.targets.push_back(c == 0 ? a * b : c == 1 ? 3 * a + 1 : 50 - 2 * b + 0.1 * u(rng));
  }
  auto rules = M5Rules::Build(d);
  ASSERT_TRUE(rules.ok());
  ASSERT_GE(rules->rules().size(), 2u);
  size_t covered = 0;
  for (const M5Rule& r : rules->rules()) covered += r.coverage;
  EXPECT_EQ(covered, d.size());
  EXPECT_TRUE(rules->rules().back().conditions.empty());
  // Each instance is answered by a rule whose conditions hold, and no earlier rule's do.
  for (const auto& row : d.rows) {
    const size_t r = rules->RuleFor(row);
    EXPECT_TRUE(rules->rules()[r].Covers(row));
    for (size_t e = 0; e < r; ++e) EXPECT_FALSE(rules->rules()[e].Covers(row));
  }
  // Rules predict the training data about as well as the piecewise truth allows.
  double error = 0, spread = 0, mean = 0;
  for (double y : d.targets) mean += y / d.size();
  for (size_t i = 0; i < d.size(); ++i) {
    error += std::fabs(rules->Predict(d.rows[i]) - d.targets[i]);
    spread += std::fabs(d.targets[i] - mean);
  }
  EXPECT_LT(error, 0.2 * spread);
}

TEST(M5RulesTest, FirstRuleWhoseConditionsHoldAnswers) {
  auto rules = M5Rules::Parse(
      "m5rules 1\nattributes 1 x\nrules 3\n"
      "rule 5 1\nif 0 <= 5\nthen 1 0\n"
      "rule 5 1\nif 0 <= 10\nthen 2 0\n"
      "rule 5 0\nthen 3 0\nend\n");
  ASSERT_TRUE(rules.ok()) << rules.status();
  EXPECT_EQ(rules->Predict({3}), 1.0);  // rules 1 and 2 hold: the first answers
  EXPECT_EQ(rules->Predict({5}), 1.0);  // <= is inclusive
  EXPECT_EQ(rules->Predict({7}), 2.0);
  EXPECT_EQ(rules->Predict({20}), 3.0);
  // Without a default rule, an uncovered input gets the last rule.
  auto no_default =
      M5Rules::Parse("m5rules 1\nattributes 1 x\nrules 1\nrule 5 1\nif 0 > 5\nthen 4 1\nend\n");
  ASSERT_TRUE(no_default.ok());
  EXPECT_EQ(no_default->Predict({1}), 5.0);
}

TEST(M5RulesTest, ConditionsOnOneAttributeKeepTheTightest) {
  // Three steps. By hand the root splits at 5.5 (SDR 135 against 111 at 14.5), its right child at
  // 14.5; the largest leaf (16 instances) lies under x > 5.5 and x > 14.5: one condition, x > 14.5.
  M5Dataset d;
  d.attributes = {"x"};
  for (int x = 1; x <= 30; ++x) {
    d.rows.push_back({static_cast<double>(x)});
    d.targets.push_back(x <= 5 ? 1000.0 : x <= 14 ? 0.0 : 500.0);
  }
  M5Options options;
  options.smooth = false;
  auto rules = M5Rules::Build(d, options);
  ASSERT_TRUE(rules.ok());
  ASSERT_EQ(rules->rules().size(), 3u);
  const M5Rule& first = rules->rules()[0];
  ASSERT_EQ(first.conditions.size(), 1u);
  EXPECT_FALSE(first.conditions[0].less_equal);
  EXPECT_DOUBLE_EQ(first.conditions[0].threshold, 14.5);
  EXPECT_EQ(first.coverage, 16u);
  for (int x = 1; x <= 30; ++x) {
    EXPECT_NEAR(rules->Predict({double(x)}), d.targets[x - 1], 1e-6) << x;
  }
}

TEST(M5RulesTest, TextRoundTripAndErrors) {
  auto rules = M5Rules::Build(Piecewise(12));
  ASSERT_TRUE(rules.ok());
  const std::string text = rules->Save();
  auto back = M5Rules::Parse(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Save(), text);
  for (double x = 0; x <= 21; x += 0.25) EXPECT_EQ(back->Predict({x, 1}), rules->Predict({x, 1}));

  struct Case {
    std::string text, message;
  };
  const std::string head = "m5rules 1\nattributes 1 x\n";
  const Case cases[] = {
      {"m5tree 1\n", "line 1: expected 'm5rules 1'"},
      {head + "rules 0\n", "line 3: a rule set needs at least one rule"},
      {head + "rules 1\nrule 5\n", "line 4: expected 'rule <coverage> <conditions>'"},
      {head + "rules 1\nrule 5 1\nif 1 <= 3\n", "line 5: condition attribute '1'"},
      {head + "rules 1\nrule 5 1\nif 0 < 3\n", "line 5: condition operator"},
      {head + "rules 1\nrule 5 1\nif 0 <= nan\n", "line 5: bad threshold"},
      {head + "rules 1\nrule 5 0\nthen 1\n", "line 5: a linear model needs 2"},
      {head + "rules 2\nrule 5 0\nthen 1 2\n", "end of text: expected 'rule"},
      {head + "rules 1\nrule 5 0\nthen 1 2\n", "end of text: expected 'end'"},
      {head + "rules 1\nrule 5 0\nthen 1 2\nend\nmore\n", "line 7: unexpected text"},
  };
  for (const Case& c : cases) {
    auto parsed = M5Rules::Parse(c.text);
    EXPECT_EQ(parsed.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(c.message)) << c.text;
  }
  // Random damage never crashes.
  std::mt19937_64 rng(3);
  for (int i = 0; i < 500; ++i) {
    std::string damaged = text;
    damaged[rng() % damaged.size()] = "0 \n-x.e9<>"[rng() % 10];
    auto parsed = M5Rules::Parse(damaged);
    if (parsed.ok() && parsed->attributes().size() == 2) parsed->Predict({1, 2});
  }
}

}  // namespace
}  // namespace tandem::cost_model
