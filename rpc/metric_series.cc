// File: metric_series.cc
#include "rpc/metric_series.h"

namespace tandem::rpc::metrics {

const prometheus::Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      50e-6, 100e-6, 250e-6, 500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3, 25e-3,
      50e-3, 100e-3, 250e-3, 500e-3, 1.0,  2.5,    5.0,  10.0};
  return *buckets;
}

const prometheus::Histogram::BucketBoundaries& RatioBuckets() {
  static const auto* buckets = new prometheus::Histogram::BucketBoundaries{
      0.125, 0.25, 0.5, 0.67, 0.8, 0.9, 1.0, 1.11, 1.25, 1.5, 2.0, 4.0, 8.0};
  return *buckets;
}

}  // namespace tandem::rpc::metrics
