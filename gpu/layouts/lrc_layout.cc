// The LRC layouts' builder (Ao et al. 2011, section 4.2; gpu/list_format.h describes the arrays):
// a list's docIDs as vertical deviations from least-squares lines, one line (LRC), one line with a
// range of deviations per segment (LRCSeg), a line per fixed segment (SegLRC) or per hash bucket
// (HS-LRC, section 4.3). The deviations are stored plainly at their segment's width, without
// exceptions: section 4.3 forbids them too, so that any posting decodes with one packed load.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_format.h"
#include "gpu/layouts/layout_builder.h"
#include "gpu/layouts/list_layout.h"
#include "gpu/layouts/search_range.h"

namespace tandem::gpu {
namespace {

using layout_builder::BitLength;
using layout_builder::CheckLength;
using layout_builder::ImageBuilder;
using layout_builder::Pack;

// The least-squares slope of docids[first + j] against j, j in [0, count); 0 for one posting.
double LeastSquaresSlope(absl::Span<const uint32_t> docids, uint32_t first, uint32_t count) {
  if (count < 2) return 0.0;
  const double mean_j = (count - 1) / 2.0;
  double mean_x = 0;
  for (uint32_t j = 0; j < count; ++j) mean_x += docids[first + j];
  mean_x /= count;
  double sxy = 0, sxx = 0;
  for (uint32_t j = 0; j < count; ++j) {
    const double dj = j - mean_j;
    sxy += dj * (docids[first + j] - mean_x);
    sxx += dj * dj;
  }
  return sxy / sxx;
}

struct SegmentPlan {
  uint32_t first = 0, count = 0;
  float slope = 0;
  uint32_t intercept = 0;  // modulo 2^32
  uint32_t width = 0;
  std::vector<uint32_t> lambdas;
};

// The segment's deviations from the line of `slope` (a float >= 0 whose products stay below 2^32)
// and their minimum, or false when their range does not fit 32 bits.
bool Deviations(absl::Span<const uint32_t> docids, SegmentPlan* s) {
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = std::numeric_limits<int64_t>::min();
  for (uint32_t j = 0; j < s->count; ++j) {
    const int64_t d = int64_t{docids[s->first + j]} - LrcLine(s->slope, j);
    lo = std::min(lo, d);
    hi = std::max(hi, d);
  }
  if (hi - lo > int64_t{std::numeric_limits<uint32_t>::max()}) return false;
  s->intercept = static_cast<uint32_t>(lo);  // modulo 2^32: docid = lo + line + lambda
  s->lambdas.resize(s->count);
  uint32_t all = 0;
  for (uint32_t j = 0; j < s->count; ++j) {
    s->lambdas[j] =
        static_cast<uint32_t>(int64_t{docids[s->first + j]} - LrcLine(s->slope, j) - lo);
    all |= s->lambdas[j];
  }
  s->width = BitLength(all);
  return true;
}

// Fits the segment on `slope`, or on no slope when that one's products or deviations do not fit.
void FitSegment(absl::Span<const uint32_t> docids, double slope, SegmentPlan* s) {
  s->slope = slope > 0 && std::isfinite(slope) ? static_cast<float>(slope) : 0.0f;
  if (s->count > 0 && !(s->slope * static_cast<float>(s->count - 1) < 4294967296.0f)) {
    s->slope = 0;
  }
  if (s->count == 0) return;
  if (!Deviations(docids, s)) {
    s->slope = 0;  // deviations are the docIDs themselves: they fit
    Deviations(docids, s);
  }
}

}  // namespace

absl::StatusOr<LrcImage> BuildLrcDocids(absl::Span<const uint32_t> docids,
                                        const LrcOptions& options) {
  if (absl::Status s = CheckLength(docids.size()); !s.ok()) return s;
  const uint32_t n = static_cast<uint32_t>(docids.size());
  LrcImage out;
  LrcDesc& d = out.desc;
  d.num_postings = n;
  d.kind = options.kind;

  std::vector<uint32_t> firsts;  // each segment's first posting, then n
  switch (options.kind) {
    case LrcKind::kLrc:
      d.segment_length = n;
      firsts = {0, n};
      break;
    case LrcKind::kLrcSeg:
    case LrcKind::kSegLrc:
      if (options.segment_length == 0) {
        return absl::InvalidArgumentError("LRC segments need at least one posting");
      }
      d.segment_length = options.segment_length;
      for (uint64_t f = 0; f < n; f += options.segment_length) {
        firsts.push_back(static_cast<uint32_t>(f));
      }
      firsts.push_back(n);
      break;
    case LrcKind::kHsLrc: {
      if (options.postings_per_bucket == 0) {
        return absl::InvalidArgumentError("HS-LRC buckets need at least one posting on average");
      }
      if (!std::is_sorted(docids.begin(), docids.end())) {
        return absl::InvalidArgumentError("HS-LRC needs non-decreasing docIDs");
      }
      // Below 2^32 the bucket width of docIDs [0, last + 1) is that of [0, 2^32 - 1).
      const uint32_t num_docs = options.num_docs != 0 ? options.num_docs
                                : docids.back() == std::numeric_limits<uint32_t>::max()
                                    ? docids.back()
                                    : docids.back() + 1;
      if (options.num_docs != 0 && docids.back() >= options.num_docs) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "docID %d is not below the collection size %d", docids.back(), options.num_docs));
      }
      // At most 31, so that a list of few postings over 2^32 docIDs still has two buckets.
      d.hash_shift = std::min(HashShift(n, num_docs, options.postings_per_bucket), 31u);
      const uint32_t buckets = ((num_docs - 1) >> d.hash_shift) + 1;
      for (uint32_t h = 0; h < buckets; ++h) {
        const uint64_t low = uint64_t{h} << d.hash_shift;
        firsts.push_back(
            static_cast<uint32_t>(std::lower_bound(docids.begin(), docids.end(), low,
                                                   [](uint32_t x, uint64_t v) { return x < v; }) -
                                  docids.begin()));
      }
      firsts.push_back(n);
      break;
    }
    default:
      return absl::InvalidArgumentError("unknown LRC kind");
  }
  const uint32_t ns = static_cast<uint32_t>(firsts.size() - 1);
  d.num_segments = ns;

  // LRC and LRCSeg share the list's line; SegLRC and HS-LRC fit one per segment.
  const bool one_line = options.kind == LrcKind::kLrc || options.kind == LrcKind::kLrcSeg;
  const double list_slope = one_line ? LeastSquaresSlope(docids, 0, n) : 0.0;
  std::vector<SegmentPlan> plans(ns);
  uint64_t deviation_words = 0;
  std::vector<uint32_t> offsets(ns + 1);
  for (uint32_t s = 0; s < ns; ++s) {
    SegmentPlan& p = plans[s];
    p.first = firsts[s];
    p.count = firsts[s + 1] - firsts[s];
    FitSegment(docids, one_line ? list_slope : LeastSquaresSlope(docids, p.first, p.count), &p);
    offsets[s] = static_cast<uint32_t>(deviation_words);
    deviation_words += PackedWords(p.count, p.width);
    if (deviation_words >= std::numeric_limits<uint32_t>::max()) {
      return absl::InvalidArgumentError("LRC deviations beyond 2^32 words");
    }
  }
  offsets[ns] = static_cast<uint32_t>(deviation_words);
  d.deviation_words = deviation_words + 1;  // the spare word

  ImageBuilder layout;
  d.segments = layout.Add((uint64_t{ns} + 1) * kLrcRecordWords);
  d.widths = layout.Add(PackedWords(ns, 8) + 1);
  d.deviations = layout.Add(d.deviation_words);
  d.image_words = layout.size();
  out.words.assign(d.image_words, 0);
  std::vector<uint32_t> widths(ns);
  for (uint32_t s = 0; s <= ns; ++s) {
    uint32_t* record = out.words.data() + d.segments + uint64_t{s} * kLrcRecordWords;
    record[0] = firsts[s];
    record[3] = offsets[s];
    if (s == ns) break;
    const SegmentPlan& p = plans[s];
    record[1] = p.intercept;
    std::memcpy(&record[2], &p.slope, sizeof(float));
    widths[s] = p.width;
    Pack(p.lambdas, p.width, d.deviations + offsets[s], &out.words);
  }
  Pack(widths, 8, d.widths, &out.words);
  return out;
}

}  // namespace tandem::gpu
