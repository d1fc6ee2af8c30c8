// File: kernels/search_range.cuh
//
// The range of a list's search form (gpu/search_form.h) that can hold a docID, by linear regression
// or hash segmentation (Ao et al. 2011, sections 3.3 and 3.4), and the binary search inside it, on
// plain docIDs or on SegLRC (section 4.3).
// The line's estimate is computed here for the search and, through LineEstimate, when the form is
// built, so the deviations it stores bound exactly the estimates the search makes.
#pragma once

#include <cstdint>

#include "gpu/kernels/lrc_access.cuh"
#include "gpu/layouts/search_form.h"

namespace tandem::gpu::kernels {

struct PositionRange {
  uint32_t lo = 0, hi = 0;  // [lo, hi)
};

// e(x) = (x - beta) / alpha, in double, without contraction into a fused multiply-add.
__device__ __forceinline__ double LineEstimate(double alpha, double beta, uint32_t x) {
  return __ddiv_rn(__dsub_rn(static_cast<double>(x), beta), alpha);
}

__device__ __forceinline__ PositionRange LinearRegressionRange(const SearchForm& f, uint32_t x) {
  const uint32_t n = f.num_postings;
  if (!(f.lr_alpha > 0.0)) return {0, n};
  const double e = LineEstimate(f.lr_alpha, f.lr_beta, x);
  // One position of margin on each side beyond the stored deviations.
  const double lo = floor(e - f.lr_left) - 1.0;
  const double hi = ceil(e + f.lr_right) + 2.0;  // exclusive
  PositionRange r;
  r.lo = lo <= 0.0 ? 0u : (lo >= n ? n : static_cast<uint32_t>(lo));
  r.hi = hi <= 0.0 ? 0u : (hi >= n ? n : static_cast<uint32_t>(hi));
  return r;
}

__device__ __forceinline__ PositionRange HashRange(const HashBuckets& b, uint32_t x) {
  const uint32_t h = x >> b.shift;
  if (h >= b.num_buckets) return {0, 0};
  return {__ldg(b.starts + h), __ldg(b.starts + h + 1)};
}

__device__ __forceinline__ PositionRange SearchRangeOf(const SearchForm& f, SearchRange method,
                                                       uint32_t x) {
  switch (method) {
    case SearchRange::kLinearRegression:
      return LinearRegressionRange(f, x);
    case SearchRange::kHash16:
      return HashRange(f.hash[0], x);
    case SearchRange::kHash32:
      return HashRange(f.hash[1], x);
    case SearchRange::kHash256:
      return HashRange(f.hash[2], x);
    case SearchRange::kBinary:
      break;
  }
  return {0, f.num_postings};
}

// The first position p in [r.lo, r.hi) with docids[p] >= x (r.hi when none).
__device__ __forceinline__ uint32_t LowerBound(const uint32_t* __restrict__ docids, PositionRange r,
                                               uint32_t x) {
  uint32_t lo = r.lo, len = r.hi - r.lo;
  while (len > 0) {
    const uint32_t half = len / 2;
    if (__ldg(docids + lo + half) < x) {
      lo += half + 1;
      len -= half + 1;
    } else {
      len = half;
    }
  }
  return lo;
}

// The docID at position p of a form: one load, or a SegLRC posting decoded alone (its segment's
// record and one packed deviation; section 4.3).
__device__ __forceinline__ uint32_t FormDocid(const SearchForm& f, uint32_t p) {
  return f.docids != nullptr ? __ldg(f.docids + p) : LrcDocidAt(f.lrc, f.lrc_image, p);
}

// The first position p in [r.lo, r.hi) of the form with docid >= x (r.hi when none).
__device__ __forceinline__ uint32_t LowerBound(const SearchForm& f, PositionRange r, uint32_t x) {
  if (f.docids != nullptr) return LowerBound(f.docids, r, x);
  uint32_t lo = r.lo, len = r.hi - r.lo;
  while (len > 0) {
    const uint32_t half = len / 2;
    if (LrcDocidAt(f.lrc, f.lrc_image, lo + half) < x) {
      lo += half + 1;
      len -= half + 1;
    } else {
      len = half;
    }
  }
  return lo;
}

// The position of x in the list, or UINT32_MAX when it is not there.
__device__ __forceinline__ uint32_t FindDocid(const SearchForm& f, SearchRange method, uint32_t x) {
  const PositionRange r = SearchRangeOf(f, method, x);
  const uint32_t p = LowerBound(f, r, x);
  return p < r.hi && FormDocid(f, p) == x ? p : UINT32_MAX;
}

}  // namespace tandem::gpu::kernels
