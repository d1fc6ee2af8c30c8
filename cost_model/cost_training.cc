#include "cost_model/cost_training.h"

#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace tandem::cost_model {

absl::StatusOr<M5Rules> TrainCostRules(absl::Span<const CostSample> samples, FeatureSpace space,
                                       const M5Options& options) {
  if (samples.empty()) return absl::InvalidArgumentError("no timing samples to train on");
  M5Dataset data;
  data.attributes = CostFeatureNames();
  data.rows.reserve(samples.size());
  data.targets.reserve(samples.size());
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!std::isfinite(samples[i].ms) || samples[i].ms < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("timing sample ", i, " has time ", samples[i].ms, " ms"));
    }
    data.rows.push_back(ModelInputs(samples[i].features, space));
    data.targets.push_back(ModelTarget(samples[i].ms, space));
  }
  return M5Rules::Build(data, options);
}

double PredictMs(const M5Rules& rules, FeatureSpace space, const QueryFeatures& features) {
  return MsFromModel(rules.Predict(ModelInputs(features, space)), space);
}

double MeanRelativeError(const std::function<double(const QueryFeatures&)>& predict_ms,
                         absl::Span<const CostSample> samples) {
  double sum = 0;
  size_t n = 0;
  for (const CostSample& s : samples) {
    if (!(s.ms > 0)) continue;
    sum += std::fabs(predict_ms(s.features) - s.ms) / s.ms;
    ++n;
  }
  return n == 0 ? std::numeric_limits<double>::quiet_NaN() : sum / static_cast<double>(n);
}

double MeanRelativeError(const M5Rules& rules, FeatureSpace space,
                         absl::Span<const CostSample> samples) {
  return MeanRelativeError([&](const QueryFeatures& f) { return PredictMs(rules, space, f); },
                           samples);
}

std::vector<CostSample> ThinSamples(absl::Span<const CostSample> samples, size_t max) {
  if (samples.size() <= max) return {samples.begin(), samples.end()};
  std::vector<CostSample> out;
  out.reserve(max);
  for (size_t i = 0; i < max; ++i) out.push_back(samples[i * samples.size() / max]);
  return out;
}

}  // namespace tandem::cost_model
