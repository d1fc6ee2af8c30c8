#include "cost_model/m5_tree.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "absl/strings/str_cat.h"

namespace tandem::cost_model {
namespace {

double TargetSd(const M5Dataset& data, absl::Span<const size_t> instances) {
  std::vector<double> y;
  y.reserve(instances.size());
  for (size_t i : instances) y.push_back(data.targets[i]);
  return StandardDeviation(y);
}

// Grows the subtree of `instances` and, on the way back up, fits its models and prunes it
// (Quinlan 1992, sections 2.1-2.3). `referenced` (all false on entry) receives the attributes
// tested or used by models in the grown subtree: the candidates for the models of the nodes above.
class Grower {
 public:
  Grower(const M5Dataset& data, const M5Options& options, double root_sd)
      : data_(data),
        options_(options),
        root_sd_(root_sd),
        tolerance_(kM5ErrorTolerance * root_sd) {}

  std::unique_ptr<M5Node> Grow(std::vector<size_t> instances, int depth,
                               std::vector<bool>& referenced) {
    auto node = std::make_unique<M5Node>();
    node->num_instances = instances.size();
    M5Split split;
    if (instances.size() >= options_.min_instances && depth < kMaxM5Depth &&
        TargetSd(data_, instances) > options_.min_sd_fraction * root_sd_) {
      split = FindBestSplit(data_, instances, std::max<size_t>(1, options_.min_leaf_instances));
    }
    if (!split.found || !(split.sdr > 0)) {
      LinearFitter fitter(data_, std::move(instances));
      node->model = fitter.Fit({}, options_.ridge);  // the mean (Quinlan: leaves of the grown tree)
      node->estimated_error = fitter.AdjustedErrorOf(node->model);
      return node;
    }
    std::vector<size_t> left, right;
    for (size_t i : instances) {
      (data_.rows[i][split.attribute] <= split.threshold ? left : right).push_back(i);
    }
    node->leaf = false;
    node->attribute = split.attribute;
    node->threshold = split.threshold;
    std::vector<bool> right_referenced(referenced.size(), false);
    node->left = Grow(std::move(left), depth + 1, referenced);
    node->right = Grow(std::move(right), depth + 1, right_referenced);
    referenced[split.attribute] = true;
    for (size_t a = 0; a < referenced.size(); ++a) {
      if (right_referenced[a]) referenced[a] = true;
    }

    std::vector<int> candidates;
    for (size_t a = 0; a < referenced.size(); ++a) {
      if (referenced[a]) candidates.push_back(static_cast<int>(a));
    }
    LinearFitter fitter(data_, std::move(instances));
    node->model = fitter.FitWithElimination(candidates, options_.ridge, tolerance_);
    const double model_error = fitter.AdjustedErrorOf(node->model);
    const double n = static_cast<double>(node->num_instances);
    const double subtree_error =
        (static_cast<double>(node->left->num_instances) * node->left->estimated_error +
         static_cast<double>(node->right->num_instances) * node->right->estimated_error) /
        n;
    if (options_.prune && model_error <= subtree_error + tolerance_) {
      node->leaf = true;
      node->attribute = -1;
      node->threshold = 0;
      node->left.reset();
      node->right.reset();
      node->estimated_error = model_error;
    } else {
      node->estimated_error = subtree_error;
    }
    for (int a : node->model.UsedAttributes()) referenced[a] = true;
    return node;
  }

 private:
  const M5Dataset& data_;
  const M5Options& options_;
  const double root_sd_;
  const double tolerance_;
};

const M5Node* LeafFor(const M5Node* node, absl::Span<const double> x,
                      std::vector<const M5Node*>* path) {
  while (true) {
    if (path) path->push_back(node);
    if (node->leaf) return node;
    node = x[node->attribute] <= node->threshold ? node->left.get() : node->right.get();
  }
}

}  // namespace

double StandardDeviation(absl::Span<const double> values) {
  if (values.empty()) return 0;
  const double n = static_cast<double>(values.size());
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / n;
  double ss = 0;
  for (double v : values) ss += (v - mean) * (v - mean);
  return std::sqrt(ss / n);
}

double StandardDeviationReduction(absl::Span<const double> left, absl::Span<const double> right) {
  std::vector<double> all(left.begin(), left.end());
  all.insert(all.end(), right.begin(), right.end());
  const double n = static_cast<double>(all.size());
  return StandardDeviation(all) - static_cast<double>(left.size()) / n * StandardDeviation(left) -
         static_cast<double>(right.size()) / n * StandardDeviation(right);
}

M5Split FindBestSplit(const M5Dataset& data, absl::Span<const size_t> instances, size_t min_leaf) {
  M5Split best;
  const size_t n = instances.size();
  if (n < 2 * min_leaf || n < 2) return best;
  // Targets centred on the node mean, so the running sums of squares do not cancel.
  double mean = 0;
  for (size_t i : instances) mean += data.targets[i];
  mean /= static_cast<double>(n);
  double total1 = 0, total2 = 0;
  for (size_t i : instances) {
    const double c = data.targets[i] - mean;
    total1 += c;
    total2 += c * c;
  }
  auto sd = [](double s1, double s2, double count) {
    const double m = s1 / count;
    return std::sqrt(std::max(0.0, s2 / count - m * m));
  };
  const double sd_all = sd(total1, total2, static_cast<double>(n));
  std::vector<size_t> order(instances.begin(), instances.end());
  for (size_t a = 0; a < data.attributes.size(); ++a) {
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t x, size_t y) { return data.rows[x][a] < data.rows[y][a]; });
    double left1 = 0, left2 = 0;
    for (size_t cut = 1; cut < n; ++cut) {  // left = order[0, cut)
      const double c = data.targets[order[cut - 1]] - mean;
      left1 += c;
      left2 += c * c;
      if (cut < min_leaf || n - cut < min_leaf) continue;
      const double lo = data.rows[order[cut - 1]][a], hi = data.rows[order[cut]][a];
      if (!(lo < hi)) continue;
      const double nl = static_cast<double>(cut), nr = static_cast<double>(n - cut);
      const double sdr =
          sd_all - nl / n * sd(left1, left2, nl) - nr / n * sd(total1 - left1, total2 - left2, nr);
      if (!best.found || sdr > best.sdr) {
        double threshold = lo + (hi - lo) / 2;
        if (!(threshold < hi)) threshold = lo;  // adjacent doubles
        best = {true, static_cast<int>(a), threshold, sdr};
      }
    }
  }
  return best;
}

LinearModel SmoothedModel(const std::vector<const M5Node*>& path, double k) {
  LinearModel p = path.back()->model;
  for (size_t i = path.size() - 1; i-- > 0;) {
    const double n = static_cast<double>(path[i + 1]->num_instances);
    const LinearModel& q = path[i]->model;
    p.intercept = (n * p.intercept + k * q.intercept) / (n + k);
    for (size_t a = 0; a < p.coef.size(); ++a)
      p.coef[a] = (n * p.coef[a] + k * q.coef[a]) / (n + k);
  }
  return p;
}

absl::StatusOr<M5Tree> M5Tree::Build(const M5Dataset& data, const M5Options& options) {
  std::vector<size_t> all(data.size());
  std::iota(all.begin(), all.end(), 0);
  return Build(data, std::move(all), options);
}

absl::StatusOr<M5Tree> M5Tree::Build(const M5Dataset& data, std::vector<size_t> instances,
                                     const M5Options& options) {
  if (absl::Status s = data.Validate(); !s.ok()) return s;
  if (instances.empty()) return absl::InvalidArgumentError("no instances to build an M5 tree from");
  for (size_t i : instances) {
    if (i >= data.size()) return absl::InvalidArgumentError(absl::StrCat("no instance ", i));
  }
  if (options.smoothing_k < 0 || options.ridge < 0 || options.min_sd_fraction < 0) {
    return absl::InvalidArgumentError("M5 options must not be negative");
  }
  M5Tree tree;
  tree.attributes_ = data.attributes;
  tree.smoothing_k_ = options.smooth ? options.smoothing_k : 0;
  Grower grower(data, options, TargetSd(data, instances));
  std::vector<bool> referenced(data.attributes.size(), false);
  tree.root_ = grower.Grow(std::move(instances), 0, referenced);
  return tree;
}

double M5Tree::PredictUnsmoothed(absl::Span<const double> x) const {
  return LeafFor(root_.get(), x, nullptr)->model.Predict(x);
}

double M5Tree::Predict(absl::Span<const double> x) const {
  if (!smooth()) return PredictUnsmoothed(x);
  std::vector<const M5Node*> path;
  LeafFor(root_.get(), x, &path);
  double p = path.back()->model.Predict(x);
  for (size_t i = path.size() - 1; i-- > 0;) {
    const double n = static_cast<double>(path[i + 1]->num_instances);
    p = (n * p + smoothing_k_ * path[i]->model.Predict(x)) / (n + smoothing_k_);
  }
  return p;
}

size_t M5Tree::num_leaves() const {
  size_t n = 0;
  ForEachLeaf([&n](const std::vector<const M5Node*>&) { ++n; });
  return n;
}

void M5Tree::ForEachLeaf(
    const std::function<void(const std::vector<const M5Node*>&)>& visit) const {
  std::vector<const M5Node*> path;
  std::function<void(const M5Node*)> walk = [&](const M5Node* node) {
    path.push_back(node);
    if (node->leaf) {
      visit(path);
    } else {
      walk(node->left.get());
      walk(node->right.get());
    }
    path.pop_back();
  };
  walk(root_.get());
}

}  // namespace tandem::cost_model
