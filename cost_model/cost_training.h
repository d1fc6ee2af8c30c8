// File: cost_training.h
//
// Training and judging one engine's cost model: M5 rules (Holmes, Hall & Frank 1999, the method
// Ding et al. 2009 took from Weka) fitted to measured (features, milliseconds) samples, and the
// mean relative prediction error the paper reports (22% on the GPU):
//
//   MRE = mean over samples of |predicted ms - measured ms| / measured ms
//
//   TANDEM_ASSIGN_OR_RETURN(M5Rules rules, TrainCostRules(train, FeatureSpace::kLog));
//   double mre = MeanRelativeError(rules, FeatureSpace::kLog, eval);
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "cost_model/cost_features.h"
#include "cost_model/m5_rules.h"

namespace tandem::cost_model {

struct CostSample {
  QueryFeatures features;
  double ms = 0;  // measured execution time
  friend bool operator==(const CostSample&, const CostSample&) = default;
};

// INVALID_ARGUMENT without samples or with a negative or non-finite time.
absl::StatusOr<M5Rules> TrainCostRules(absl::Span<const CostSample> samples, FeatureSpace space,
                                       const M5Options& options = {});

// The rules' prediction in milliseconds, never negative.
double PredictMs(const M5Rules& rules, FeatureSpace space, const QueryFeatures& features);

// Samples measured as 0 ms (or less) are skipped: they have no relative error. NaN when none is
// left.
double MeanRelativeError(const std::function<double(const QueryFeatures&)>& predict_ms,
                         absl::Span<const CostSample> samples);
double MeanRelativeError(const M5Rules& rules, FeatureSpace space,
                         absl::Span<const CostSample> samples);

// At most `max` samples, evenly spaced over `samples` (all of them when there are fewer), so a
// bounded model file keeps the spread of the training set.
std::vector<CostSample> ThinSamples(absl::Span<const CostSample> samples, size_t max);

}  // namespace tandem::cost_model
