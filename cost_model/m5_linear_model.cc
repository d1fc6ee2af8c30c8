#include "cost_model/m5_linear_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace tandem::cost_model {

absl::Status M5Dataset::Validate() const {
  if (rows.size() != targets.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat(rows.size(), " rows but ", targets.size(), " targets"));
  }
  for (const std::string& name : attributes) {
    if (name.empty() || name.find_first_of(" \t\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute name '", name, "' is not one word"));
    }
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i].size() != attributes.size()) {
      return absl::InvalidArgumentError(absl::StrCat("row ", i, " has ", rows[i].size(),
                                                     " values, expected ", attributes.size()));
    }
    for (double v : rows[i]) {
      if (!std::isfinite(v))
        return absl::InvalidArgumentError(absl::StrCat("row ", i, ": not finite"));
    }
    if (!std::isfinite(targets[i])) {
      return absl::InvalidArgumentError(absl::StrCat("target ", i, " is not finite"));
    }
  }
  return absl::OkStatus();
}

double LinearModel::Predict(absl::Span<const double> x) const {
  double y = intercept;
  for (size_t a = 0; a < coef.size() && a < x.size(); ++a) y += coef[a] * x[a];
  return y;
}

std::vector<int> LinearModel::UsedAttributes() const {
  std::vector<int> used;
  for (size_t a = 0; a < coef.size(); ++a) {
    if (coef[a] != 0) used.push_back(static_cast<int>(a));
  }
  return used;
}

double AdjustedError(double mean_abs_error, size_t n, size_t v) {
  if (n <= v) return std::numeric_limits<double>::infinity();
  return mean_abs_error * static_cast<double>(n + v) / static_cast<double>(n - v);
}

LinearFitter::LinearFitter(const M5Dataset& data, std::vector<size_t> instances)
    : data_(data), instances_(std::move(instances)), d_(data.attributes.size()) {
  const size_t w = d_ + 1;
  auto value = [&](size_t i, size_t a) { return a < d_ ? data_.rows[i][a] : data_.targets[i]; };
  mean_.assign(w, 0.0);
  for (size_t i : instances_) {
    for (size_t a = 0; a < w; ++a) mean_[a] += value(i, a);
  }
  for (double& m : mean_) m /= static_cast<double>(instances_.size());
  cross_.assign(w * w, 0.0);
  std::vector<double> c(w);
  for (size_t i : instances_) {
    for (size_t a = 0; a < w; ++a) c[a] = value(i, a) - mean_[a];
    for (size_t a = 0; a < w; ++a) {
      for (size_t b = a; b < w; ++b) cross_[a * w + b] += c[a] * c[b];
    }
  }
  for (size_t a = 0; a < w; ++a) {
    for (size_t b = 0; b < a; ++b) cross_[a * w + b] = cross_[b * w + a];
  }
}

LinearModel LinearFitter::Fit(absl::Span<const int> attributes, double ridge) const {
  const size_t w = d_ + 1;
  const double n = static_cast<double>(instances_.size());
  LinearModel model;
  model.coef.assign(d_, 0.0);
  model.intercept = mean_[d_];
  // Attributes that vary over these instances, with their standard deviations.
  std::vector<int> use;
  std::vector<double> sd;
  for (int a : attributes) {
    const double s = std::sqrt(cross_[a * w + a] / n);
    if (s > 1e-12 * std::max(1.0, std::fabs(mean_[a]))) {
      use.push_back(a);
      sd.push_back(s);
    }
  }
  const size_t p = use.size();
  if (p == 0) return model;
  // Normal equations of the standardized attributes: (Z'Z + ridge*n I) beta = Z'y.
  std::vector<double> m(p * p), rhs(p);
  for (size_t i = 0; i < p; ++i) {
    for (size_t j = 0; j < p; ++j) m[i * p + j] = cross_[use[i] * w + use[j]] / (sd[i] * sd[j]);
    m[i * p + i] += ridge * n;
    rhs[i] = cross_[use[i] * w + d_] / sd[i];
  }
  // Cholesky: m = L L' (L in the lower triangle of m). An attribute that depends linearly on the
  // ones before it (possible only with ridge 0) is dropped: its row and column become the identity.
  std::vector<bool> dropped(p, false);
  for (size_t j = 0; j < p; ++j) {
    double diag = m[j * p + j];
    for (size_t k = 0; k < j; ++k) diag -= m[j * p + k] * m[j * p + k];
    if (!(diag > 1e-12 * n)) {
      dropped[j] = true;
      for (size_t k = 0; k < j; ++k) m[j * p + k] = 0;
      for (size_t i = j + 1; i < p; ++i) m[i * p + j] = 0;
      m[j * p + j] = 1;
      rhs[j] = 0;
      continue;
    }
    diag = std::sqrt(diag);
    m[j * p + j] = diag;
    for (size_t i = j + 1; i < p; ++i) {
      double v = m[i * p + j];
      for (size_t k = 0; k < j; ++k) v -= m[i * p + k] * m[j * p + k];
      m[i * p + j] = v / diag;
    }
  }
  std::vector<double> beta(rhs);
  for (size_t i = 0; i < p; ++i) {  // L z = rhs
    for (size_t k = 0; k < i; ++k) beta[i] -= m[i * p + k] * beta[k];
    beta[i] /= m[i * p + i];
  }
  for (size_t i = p; i-- > 0;) {  // L' beta = z
    for (size_t k = i + 1; k < p; ++k) beta[i] -= m[k * p + i] * beta[k];
    beta[i] /= m[i * p + i];
  }
  for (size_t i = 0; i < p; ++i) {
    if (dropped[i]) continue;
    const double c = beta[i] / sd[i];
    model.coef[use[i]] = c;
    model.intercept -= c * mean_[use[i]];
  }
  return model;
}

double LinearFitter::MeanAbsoluteError(const LinearModel& model) const {
  double sum = 0;
  for (size_t i : instances_) sum += std::fabs(model.Predict(data_.rows[i]) - data_.targets[i]);
  return sum / static_cast<double>(instances_.size());
}

LinearModel LinearFitter::FitWithElimination(std::vector<int> attributes, double ridge,
                                             double tolerance) const {
  LinearModel best = Fit(attributes, ridge);
  double best_error = AdjustedErrorOf(best);
  attributes = best.UsedAttributes();
  while (!attributes.empty()) {
    size_t drop = attributes.size();
    LinearModel candidate_best;
    double candidate_error = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < attributes.size(); ++i) {
      std::vector<int> fewer = attributes;
      fewer.erase(fewer.begin() + static_cast<std::ptrdiff_t>(i));
      LinearModel m = Fit(fewer, ridge);
      const double e = AdjustedErrorOf(m);
      if (drop == attributes.size() || e < candidate_error) {
        drop = i;
        candidate_error = e;
        candidate_best = std::move(m);
      }
    }
    // Ties go to the simpler model; an infinite estimate (n <= v) always gives way.
    if (!(candidate_error <= best_error + tolerance) && std::isfinite(best_error)) break;
    best = std::move(candidate_best);
    best_error = candidate_error;
    attributes = best.UsedAttributes();
  }
  return best;
}

}  // namespace tandem::cost_model
