// M5 model trees against values computed by hand (Quinlan 1992's steps, one test each).
#include "cost_model/m5_tree.h"

#include <cmath>

#include "cost_model/m5_test_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::cost_model {
namespace {

using ::testing::HasSubstr;

TEST(M5TreeTest, StandardDeviationReductionByHand) {
  // all = {1,2,3,10,12}: mean 5.6, SD sqrt(101.2/5); left SD sqrt(2/3), right SD 1.
  const double want = std::sqrt(20.24) - 0.6 * std::sqrt(2.0 / 3.0) - 0.4 * 1.0;
  EXPECT_NEAR(want, 3.6089908, 1e-6);
  EXPECT_NEAR(StandardDeviationReduction({1, 2, 3}, {10, 12}), want, 1e-12);
  EXPECT_NEAR(StandardDeviation({1, 2, 3}), std::sqrt(2.0 / 3.0), 1e-15);
  EXPECT_EQ(StandardDeviation({}), 0.0);
}

TEST(M5TreeTest, BestSplitIsTheHandComputedOne) {
  // By hand: x cuts give SDR 1.040, 1.983, 3.609, 1.671; z cuts at most 1.507.
  M5Dataset d;
  d.attributes = {"x", "z"};
  const double x[] = {1, 2, 3, 4, 5}, z[] = {5, 1, 4, 2, 3}, y[] = {1, 2, 3, 10, 12};
  for (int i = 0; i < 5; ++i) {
    d.rows.push_back({x[i], z[i]});
    d.targets.push_back(y[i]);
  }
  const M5Split split = FindBestSplit(d, {0, 1, 2, 3, 4}, /*min_leaf=*/1);
  ASSERT_TRUE(split.found);
  EXPECT_EQ(split.attribute, 0);
  EXPECT_DOUBLE_EQ(split.threshold, 3.5);
  EXPECT_NEAR(split.sdr, 3.6089908, 1e-6);
  // With two instances per side at least, the cut at 4.5 (one instance right) is not allowed.
  EXPECT_EQ(FindBestSplit(d, {0, 1, 2, 3, 4}, 2).threshold, 3.5);
  EXPECT_FALSE(FindBestSplit(d, {0, 1, 2}, 2).found);
}

TEST(M5TreeTest, PiecewiseLinearDataGetsOneSplitAndTheSlopes) {
  M5Options options;
  options.smooth = false;
  auto tree = M5Tree::Build(Piecewise(10), options);
  ASSERT_TRUE(tree.ok()) << tree.status();
  const M5Node& root = tree->root();
  ASSERT_FALSE(root.leaf);
  EXPECT_EQ(root.attribute, 0);
  EXPECT_DOUBLE_EQ(root.threshold, 10.5);
  ASSERT_TRUE(root.left->leaf);
  ASSERT_TRUE(root.right->leaf);
  EXPECT_EQ(root.left->num_instances, 10u);
  EXPECT_NEAR(root.left->model.coef[0], 2.0, 1e-4);
  EXPECT_NEAR(root.left->model.intercept, 0.0, 1e-3);
  EXPECT_EQ(root.left->model.coef[1], 0.0);  // z eliminated
  EXPECT_NEAR(root.right->model.coef[0], 5.0, 1e-4);
  EXPECT_NEAR(root.right->model.intercept, 100.0, 1e-2);
  EXPECT_EQ(tree->num_leaves(), 2u);
  EXPECT_NEAR(tree->Predict({4, 0}), 8.0, 1e-3);
  EXPECT_NEAR(tree->Predict({17, 0}), 185.0, 1e-3);
}

TEST(M5TreeTest, ConstantTargetIsOneLeaf) {
  M5Dataset d;
  d.attributes = {"a"};
  for (int i = 0; i < 30; ++i) {
    d.rows.push_back({static_cast<double>(i)});
    d.targets.push_back(7.0);
  }
  auto tree = M5Tree::Build(d);
  ASSERT_TRUE(tree.ok());
  EXPECT_TRUE(tree->root().leaf);
  EXPECT_EQ(tree->root().model.intercept, 7.0);
  EXPECT_EQ(tree->root().model.coef[0], 0.0);
  EXPECT_EQ(tree->Predict({100}), 7.0);
}

TEST(M5TreeTest, LeafErrorEstimateByHand) {
  // Unpruned, the left half (x = 1..10, y = 2x) splits at 5.5 (SD 5.74 > 5% of the root's 84);
  // the leaf x <= 5.5 holds y = {2,4,6,8,10}: mean 6, mean |residual| 2.4, times (5+1)/(5-1).
  M5Options options;
  options.prune = false;
  auto tree = M5Tree::Build(Piecewise(10), options);
  ASSERT_TRUE(tree.ok());
  const M5Node& left = *tree->root().left;
  ASSERT_FALSE(left.leaf);
  EXPECT_EQ(left.attribute, 0);
  EXPECT_DOUBLE_EQ(left.threshold, 5.5);
  ASSERT_TRUE(left.left->leaf);
  EXPECT_DOUBLE_EQ(left.left->model.intercept, 6.0);
  EXPECT_NEAR(left.left->estimated_error, 3.6, 1e-12);
  // The node's own model (over x, tested below it) fits exactly, so pruning would take it.
  EXPECT_NEAR(left.model.coef[0], 2.0, 1e-4);
  EXPECT_LT(AdjustedError(0.0, 10, 2), left.estimated_error);
}

TEST(M5TreeTest, PruningCollapsesASplitThatDoesNotPay) {
  // One straight line (with a little noise): splits reduce SD, but the root's model fits it all.
  M5Dataset d;
  d.attributes = {"x"};
  for (int x = 1; x <= 40; ++x) {
    d.rows.push_back({static_cast<double>(x)});
    d.targets.push_back(3.0 * x + (x % 2 == 0 ? 0.1 : -0.1));
  }
  M5Options unpruned;
  unpruned.prune = false;
  auto grown = M5Tree::Build(d, unpruned);
  ASSERT_TRUE(grown.ok());
  EXPECT_GT(grown->num_leaves(), 1u);
  auto pruned = M5Tree::Build(d);
  ASSERT_TRUE(pruned.ok());
  EXPECT_EQ(pruned->num_leaves(), 1u);
  EXPECT_NEAR(pruned->root().model.coef[0], 3.0, 1e-3);
  // Its estimate: mean |residual| about 0.1, times (40 + 2) / (40 - 2).
  EXPECT_NEAR(pruned->root().estimated_error, 0.1 * 42.0 / 38.0, 0.01);
}

TEST(M5TreeTest, SmoothingByHandOnATwoLevelTree) {
  // Root model y = 1 + x over 30 instances; leaves y = 2x (10 instances) and y = 100 (20).
  auto tree = M5Tree::Parse(
      "m5tree 1\nattributes 1 x\nsmoothing 15\n"
      "split 0 5 30 1 1\nleaf 10 0 2\nleaf 20 100 0\nend\n");
  ASSERT_TRUE(tree.ok()) << tree.status();
  // x = 3: p = 6, q = 4, p' = (10*6 + 15*4) / 25 = 4.8.
  EXPECT_DOUBLE_EQ(tree->Predict({3}), 4.8);
  EXPECT_DOUBLE_EQ(tree->PredictUnsmoothed({3}), 6.0);
  // x = 7: p = 100, q = 8, p' = (20*100 + 15*8) / 35.
  EXPECT_DOUBLE_EQ(tree->Predict({7}), 2120.0 / 35.0);
  // The smoothed leaf model is linear: (0.6 + 1.4x) on the left.
  std::vector<std::vector<const M5Node*>> paths;
  tree->ForEachLeaf([&](const std::vector<const M5Node*>& p) { paths.push_back(p); });
  ASSERT_EQ(paths.size(), 2u);
  const LinearModel left = SmoothedModel(paths[0], 15);
  EXPECT_DOUBLE_EQ(left.intercept, 0.6);
  EXPECT_DOUBLE_EQ(left.coef[0], 1.4);
}

TEST(M5TreeTest, BuiltTreeSmoothsWithItsOwnModels) {
  auto tree = M5Tree::Build(Piecewise(10));
  ASSERT_TRUE(tree.ok());
  const M5Node& root = tree->root();
  const std::vector<double> x = {1, 3};
  const double p = root.left->model.Predict(x), q = root.model.Predict(x);
  EXPECT_NEAR(tree->Predict(x), (10 * p + 15 * q) / 25, 1e-9);
  EXPECT_GT(std::fabs(tree->Predict(x) - p), 1.0);  // the root's single line pulls it away
}

TEST(M5TreeTest, LinearFitRecoversCoefficientsAndDropsUselessAttributes) {
  M5Dataset d;
  d.attributes = {"a", "b", "c"};
  std::vector<size_t> all;
  for (int i = 0; i < 50; ++i) {
    const double a = i % 7, b = (i * 3) % 11, c = (i * 13) % 17;
    d.rows.push_back({a, b, c});
    d.targets.push_back(1 + 2 * a - 3 * b);
    all.push_back(i);
  }
  LinearFitter fitter(d, all);
  const LinearModel full = fitter.Fit({0, 1, 2}, 1e-9);
  EXPECT_NEAR(full.intercept, 1, 1e-5);
  EXPECT_NEAR(full.coef[0], 2, 1e-6);
  EXPECT_NEAR(full.coef[1], -3, 1e-6);
  EXPECT_NEAR(full.coef[2], 0, 1e-6);
  const LinearModel reduced = fitter.FitWithElimination({0, 1, 2}, 1e-9);
  EXPECT_EQ(reduced.UsedAttributes(), (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(AdjustedError(2.0, 10, 2), 3.0);
  EXPECT_TRUE(std::isinf(AdjustedError(2.0, 3, 3)));
  // Collinear attributes (b = 2a) stay solvable thanks to the ridge term.
  M5Dataset col;
  col.attributes = {"a", "b"};
  for (int i = 0; i < 10; ++i) {
    col.rows.push_back({double(i), 2.0 * i});
    col.targets.push_back(4.0 * i);
  }
  LinearFitter cf(col, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9});
  const LinearModel m = cf.Fit({0, 1}, 1e-8);
  EXPECT_NEAR(m.Predict({5, 10}), 20, 1e-3);
  // Without it the dependent attribute is dropped.
  const LinearModel no_ridge = cf.Fit({0, 1}, 0);
  EXPECT_NEAR(no_ridge.coef[0], 4, 1e-9);
  EXPECT_EQ(no_ridge.coef[1], 0);
}

TEST(M5TreeTest, RejectsBadData) {
  M5Dataset d;
  d.attributes = {"a"};
  EXPECT_EQ(M5Tree::Build(d).status().code(), absl::StatusCode::kInvalidArgument);  // empty
  d.rows = {{1}, {2, 3}};
  d.targets = {1, 2};
  EXPECT_THAT(M5Tree::Build(d).status().message(), HasSubstr("row 1"));
  d.rows = {{1}, {NAN}};
  EXPECT_EQ(M5Tree::Build(d).status().code(), absl::StatusCode::kInvalidArgument);
  d.rows = {{1}, {2}};
  d.attributes = {"two words"};
  EXPECT_THAT(M5Tree::Build(d).status().message(), HasSubstr("one word"));
}

TEST(M5TreeTest, TextRoundTrip) {
  auto tree = M5Tree::Build(Piecewise(10));
  ASSERT_TRUE(tree.ok());
  const std::string text = tree->Save();
  auto back = M5Tree::Parse(text);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->Save(), text);
  for (double x = 0; x <= 21; x += 0.5) {
    EXPECT_EQ(back->Predict({x, 3}), tree->Predict({x, 3})) << x;
  }
}

TEST(M5TreeTest, MalformedTextNamesTheLine) {
  const std::string good =
      "m5tree 1\nattributes 1 x\nsmoothing 15\nsplit 0 5 30 1 1\nleaf 10 0 2\nleaf 20 100 0\nend\n";
  ASSERT_TRUE(M5Tree::Parse(good).ok());
  struct Case {
    std::string text, message;
  };
  const Case cases[] = {
      {"", "expected 'm5tree 1'"},
      {"m5tree 2\n", "line 1: unsupported m5tree version"},
      {"m5tree 1\nattributes 2 x\n", "line 2: expected 'attributes"},
      {"m5tree 1\nattributes 1 x\nsmoothing -1\n", "line 3: expected 'smoothing"},
      {"m5tree 1\nattributes 1 x\nsmoothing 15\nsplit 1 5 30 1 1\n", "line 4: split attribute"},
      {"m5tree 1\nattributes 1 x\nsmoothing 15\nsplit 0 5 30 1 1\nleaf 10 0 abc\n",
       "line 5: not a finite number: 'abc'"},
      {"m5tree 1\nattributes 1 x\nsmoothing 15\nleaf 10 0 2 3\n", "line 4: a linear model needs 2"},
      {"m5tree 1\nattributes 1 x\nsmoothing 15\nsplit 0 5 30 1 1\nleaf 10 0 2\n",
       "end of text: expected a 'split' or 'leaf'"},
      {"m5tree 1\nattributes 1 x\nsmoothing 15\nnode 1\n", "line 4: expected 'leaf"},
      {good + "leaf 1 2 3\n", "line 8: unexpected text after 'end'"},
      {"m5tree 1\nattributes 1 x\nsmoothing 15\nleaf 10 0 inf\nend\n", "not a finite number"},
  };
  for (const Case& c : cases) {
    auto tree = M5Tree::Parse(c.text);
    EXPECT_EQ(tree.status().code(), absl::StatusCode::kInvalidArgument) << c.text;
    EXPECT_THAT(tree.status().message(), HasSubstr(c.message)) << c.text;
  }
  // A tree deeper than the limit is refused, not recursed into.
  std::string deep = "m5tree 1\nattributes 1 x\nsmoothing 0\n";
  for (int i = 0; i < 5000; ++i) deep += "split 0 1 2 0 0\n";
  EXPECT_THAT(M5Tree::Parse(deep).status().message(), HasSubstr("deeper than"));
  // Every prefix of a saved tree either parses or fails cleanly.
  const std::string text = M5Tree::Build(Piecewise(10))->Save();
  for (size_t n = 0; n < text.size(); ++n) {
    auto t = M5Tree::Parse(text.substr(0, n));
    if (!t.ok()) {
      EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    }
  }
}

}  // namespace
}  // namespace tandem::cost_model
