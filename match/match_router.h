// File: match_router.h
//
// Which engine matches a batch of events: the CPU matcher or CCM on the GPU. Margara & Cugola
// observe (section 5, "Final considerations") that the GPU pays a fixed fee per launch and copy, so
// small problems (few constraints selected) are better left to the CPU, and that this can be
// decided before matching. The router decides it by prediction, as the node's cost model does for
// queries: per engine, a line time = a + b * work fitted by least squares over recent matches
// (exponentially forgotten, so it follows load and the subscriptions' growth), where work is the
// number of constraints the events select (SubscriptionRegistry::SelectedConstraints). The faster
// prediction wins; one decision in `explore_every` goes to the other engine while its model is
// older than that, so neither model goes stale.
//
//   MatchRouter router(/*has_gpu=*/true);
//   const MatchRouter::Engine e = router.Choose(work);
//   ... match on e, timing it ...
//   router.Record(e, work, seconds);
#pragma once

#include <array>
#include <cstdint>
#include <mutex>

namespace tandem::match {

class MatchRouter {
 public:
  enum Engine { kCpu = 0, kGpu = 1 };

  struct Options {
    double forgetting = 0.98;  // weight of the past per recorded sample
    int explore_every = 64;
    // Priors until an engine has samples: a fixed cost and a cost per selected constraint.
    double cpu_fixed_seconds = 1e-6;
    double cpu_seconds_per_constraint = 4e-9;
    double gpu_fixed_seconds = 25e-6;
    double gpu_seconds_per_constraint = 2e-11;
  };

  explicit MatchRouter(bool has_gpu) : MatchRouter(has_gpu, Options{}) {}
  MatchRouter(bool has_gpu, const Options& options);

  Engine Choose(int64_t work);
  void Record(Engine engine, int64_t work, double seconds);

  // The current prediction, in seconds.
  double Predict(Engine engine, int64_t work) const;

 private:
  struct Line {
    // Decayed sums of 1, x, y, x*x, x*y.
    double s = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
    double fixed = 0, slope = 0;  // the fit, or the prior
    int64_t since_sample = 0;     // decisions since this engine last recorded a sample
  };
  double PredictLocked(Engine engine, int64_t work) const;

  const bool has_gpu_;
  const Options options_;
  mutable std::mutex mu_;
  std::array<Line, 2> lines_;
};

}  // namespace tandem::match
