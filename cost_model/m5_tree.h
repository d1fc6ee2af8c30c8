// File: m5_tree.h
//
// M5 model trees (Quinlan 1992, "Learning with continuous classes"; Wang & Witten 1997, "Inducing
// model trees for continuous classes", M5'): a regression tree whose nodes hold linear models.
//
//   1. Growing: a node is split on the numeric attribute and threshold that maximize the standard
//      deviation reduction SDR = sd(T) - sum_i |T_i|/|T| sd(T_i). A node is not split when it has
//      fewer than `min_instances` instances or its target SD is at most `min_sd_fraction` of the
//      root's (Quinlan: 5%); each side of a split keeps at least `min_leaf_instances`.
//   2. Models: every node gets a linear model over the attributes tested or used by models in its
//      subtree (a leaf of the grown tree: the mean), simplified by greedy attribute elimination
//      (m5_linear_model.h).
//   3. Pruning, bottom-up: a node becomes a leaf when its model's estimated error is no larger than
//      its subtree's (the instance-weighted mean of its children's estimated errors; equal within
//      kM5ErrorTolerance).
//   4. Smoothing: a prediction p from below is blended with each ancestor's model prediction q on
//      the way up, p' = (n p + k q) / (n + k), n the training instances of the node below, k = 15.
//      All models are linear, so the blended model of a leaf is itself linear (SmoothedModel).
//
// SD is the population SD (divide by n). Thresholds lie midway between adjacent distinct values;
// x <= threshold goes left. Ties between splits go to the lower attribute, then the lower
// threshold.
//
//   TANDEM_ASSIGN_OR_RETURN(M5Tree tree, M5Tree::Build(data));
//   double y = tree.Predict(row);
//   std::string text = tree.Save();  // M5Tree::Parse(text) reads it back
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cost_model/m5_linear_model.h"

namespace tandem::cost_model {

class TextLines;

struct M5Options {
  size_t min_instances = 4;       // nodes with fewer are not split (Weka M5P -M 4)
  size_t min_leaf_instances = 2;  // each side of a split keeps at least this many
  double min_sd_fraction = 0.05;  // nodes with SD <= 5% of the root's are not split
  bool prune = true;
  bool smooth = true;
  double smoothing_k = 15;  // Quinlan's k
  double ridge = 1e-8;      // relative ridge term of the least-squares fits
};

// Estimated errors closer than this fraction of the root's SD count as equal when pruning and
// eliminating attributes: two exact fits differ only by rounding and the ridge term, and the
// simpler model should win.
inline constexpr double kM5ErrorTolerance = 1e-6;

struct M5Node {
  bool leaf = true;
  int attribute = -1;  // split: x[attribute] <= threshold goes left
  double threshold = 0;
  size_t num_instances = 0;
  LinearModel model;
  double estimated_error = 0;  // the pruning estimate (model's if leaf, subtree's otherwise)
  std::unique_ptr<M5Node> left, right;
};

// Standard deviation reduction of splitting `all` into `left` and `right` (population SDs).
double StandardDeviation(absl::Span<const double> values);
double StandardDeviationReduction(absl::Span<const double> left, absl::Span<const double> right);

struct M5Split {
  bool found = false;
  int attribute = -1;
  double threshold = 0;
  double sdr = 0;
};
// The split of `instances` with the highest SDR, each side keeping >= min_leaf instances.
M5Split FindBestSplit(const M5Dataset& data, absl::Span<const size_t> instances, size_t min_leaf);

// p' = (n p + k q) / (n + k) applied to models: the leaf model smoothed by its ancestors.
// `path` runs from the root to the leaf.
LinearModel SmoothedModel(const std::vector<const M5Node*>& path, double k);

class M5Tree {
 public:
  // INVALID_ARGUMENT for an invalid or empty dataset.
  static absl::StatusOr<M5Tree> Build(const M5Dataset& data, const M5Options& options = {});
  // Only the given instances of `data` (M5 rules grow one tree per rule on what is left).
  static absl::StatusOr<M5Tree> Build(const M5Dataset& data, std::vector<size_t> instances,
                                      const M5Options& options);

  double Predict(absl::Span<const double> x) const;  // smoothed when the tree smooths
  double PredictUnsmoothed(absl::Span<const double> x) const;

  const M5Node& root() const { return *root_; }
  const std::vector<std::string>& attributes() const { return attributes_; }
  bool smooth() const { return smoothing_k_ > 0; }
  double smoothing_k() const { return smoothing_k_; }
  size_t num_leaves() const;
  // Calls `visit` with the path root..leaf of every leaf, left to right.
  void ForEachLeaf(const std::function<void(const std::vector<const M5Node*>&)>& visit) const;

  // Text form (m5_text.h): "m5tree 1", attribute names, smoothing k, then the nodes in preorder.
  std::string Save() const;
  static absl::StatusOr<M5Tree> Parse(absl::string_view text);

 private:
  M5Tree() = default;
  static absl::StatusOr<M5Tree> Read(TextLines& lines);

  std::vector<std::string> attributes_;
  double smoothing_k_ = 0;  // 0: no smoothing
  std::unique_ptr<M5Node> root_;
};

// Deepest tree Build grows and Parse accepts.
inline constexpr int kMaxM5Depth = 100;

}  // namespace tandem::cost_model
