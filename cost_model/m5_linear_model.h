// File: m5_linear_model.h
//
// The linear models at the nodes of an M5 model tree (Quinlan 1992, "Learning with continuous
// classes", section 2; Wang & Witten 1997, M5'), and the data they are fitted to:
//
//   - A model is fitted by least squares over the instances that reach a node, using only the
//     attributes given (M5: those tested or used by models in the node's subtree).
//   - Its error is estimated as the mean absolute residual times (n + v) / (n - v), n instances,
//     v parameters (Quinlan's compensation for optimistic training error); infinite when n <= v,
//     so a model never has as many parameters as instances.
//   - Attributes are then dropped greedily, one at a time, while that estimate does not grow.
//
// Numerics: attributes are centred and scaled to unit variance before the normal equations are
// solved (Cholesky), with a small ridge term (ridge * n on the diagonal) so that collinear
// attributes — one-term queries have shortest list = sum of lists — cannot make it singular.
//
//   LinearFitter fit(data, instances);
//   LinearModel m = fit.FitWithElimination({0, 2}, /*ridge=*/1e-8);
//   double y = m.Predict(data.rows[i]);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace tandem::cost_model {

// Numeric instances: rows[i] holds one value per attribute, targets[i] the value to predict.
struct M5Dataset {
  std::vector<std::string> attributes;  // names: one word each (they are written to model files)
  std::vector<std::vector<double>> rows;
  std::vector<double> targets;

  size_t size() const { return targets.size(); }
  // Every row as wide as `attributes`, as many rows as targets, every value finite, names one
  // word each. INVALID_ARGUMENT naming the first offender.
  absl::Status Validate() const;
};

// y = intercept + sum over attributes a of coef[a] * x[a]; coef has one entry per attribute of the
// dataset, zero for attributes the model does not use.
struct LinearModel {
  double intercept = 0;
  std::vector<double> coef;

  double Predict(absl::Span<const double> x) const;
  // Attributes with a non-zero coefficient, increasing.
  std::vector<int> UsedAttributes() const;
  // 1 (the intercept) + used attributes: Quinlan's v.
  size_t num_parameters() const { return 1 + UsedAttributes().size(); }
};

// (n + v) / (n - v) * mean_abs_error; +infinity when n <= v (Quinlan 1992).
double AdjustedError(double mean_abs_error, size_t n, size_t v);

// Least-squares fits over one set of instances. The centred cross products of all attributes are
// computed once, so the many fits of attribute elimination cost O(v^3) each plus one residual pass.
class LinearFitter {
 public:
  // `data` must outlive the fitter; `instances` index data.rows (non-empty).
  LinearFitter(const M5Dataset& data, std::vector<size_t> instances);

  size_t size() const { return instances_.size(); }
  // Least squares with the given attributes; attributes constant over the instances get 0.
  LinearModel Fit(absl::Span<const int> attributes, double ridge) const;
  double MeanAbsoluteError(const LinearModel& model) const;
  double AdjustedErrorOf(const LinearModel& model) const {
    return AdjustedError(MeanAbsoluteError(model), size(), model.num_parameters());
  }
  // Fit, then drop attributes greedily while the adjusted error does not increase (Quinlan 1992)
  // by more than `tolerance` (exact fits differ only by rounding and the ridge term).
  LinearModel FitWithElimination(std::vector<int> attributes, double ridge,
                                 double tolerance = 0) const;

 private:
  const M5Dataset& data_;
  std::vector<size_t> instances_;
  size_t d_ = 0;
  std::vector<double> mean_;   // d attributes, then the target
  std::vector<double> cross_;  // (d+1) x (d+1) centred cross products, row-major
};

}  // namespace tandem::cost_model
