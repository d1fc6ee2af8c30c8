#include "match/match_router.h"

#include <algorithm>
#include <cmath>

namespace tandem::match {

MatchRouter::MatchRouter(bool has_gpu, const Options& options)
    : has_gpu_(has_gpu), options_(options) {
  lines_[kCpu].fixed = options.cpu_fixed_seconds;
  lines_[kCpu].slope = options.cpu_seconds_per_constraint;
  lines_[kGpu].fixed = options.gpu_fixed_seconds;
  lines_[kGpu].slope = options.gpu_seconds_per_constraint;
}

double MatchRouter::PredictLocked(Engine engine, int64_t work) const {
  const Line& line = lines_[engine];
  return line.fixed + line.slope * static_cast<double>(std::max<int64_t>(work, 0));
}

double MatchRouter::Predict(Engine engine, int64_t work) const {
  std::lock_guard<std::mutex> lock(mu_);
  return PredictLocked(engine, work);
}

MatchRouter::Engine MatchRouter::Choose(int64_t work) {
  if (!has_gpu_) return kCpu;
  std::lock_guard<std::mutex> lock(mu_);
  const Engine best = PredictLocked(kGpu, work) < PredictLocked(kCpu, work) ? kGpu : kCpu;
  const Engine other = best == kGpu ? kCpu : kGpu;
  for (Line& line : lines_) ++line.since_sample;
  if (lines_[other].since_sample >= options_.explore_every) {
    lines_[other].since_sample = 0;  // one try; Record refreshes it
    return other;
  }
  return best;
}

void MatchRouter::Record(Engine engine, int64_t work, double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Line& line = lines_[engine];
  const double f = options_.forgetting;
  const double x = static_cast<double>(std::max<int64_t>(work, 0));
  line.s = line.s * f + 1;
  line.sx = line.sx * f + x;
  line.sy = line.sy * f + seconds;
  line.sxx = line.sxx * f + x * x;
  line.sxy = line.sxy * f + x * seconds;
  line.since_sample = 0;
  const double det = line.s * line.sxx - line.sx * line.sx;
  // With too little spread in x the slope is unknown: keep the prior's slope, fit the level.
  if (line.s >= 3 && det > 1e-9 * line.s * line.sxx) {
    const double slope = (line.s * line.sxy - line.sx * line.sy) / det;
    if (slope >= 0) {
      line.slope = slope;
      line.fixed = std::max(0.0, (line.sy - slope * line.sx) / line.s);
      return;
    }
  }
  line.fixed = std::max(0.0, (line.sy - line.slope * line.sx) / line.s);
}

}  // namespace tandem::match
