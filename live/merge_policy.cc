#include "live/merge_policy.h"

#include <algorithm>

namespace tandem::live {

namespace {

int LevelOf(uint64_t live, const MergePolicyOptions& options) {
  uint64_t bound = std::max<uint64_t>(options.floor_documents, 1) * options.per_level;
  int level = 0;
  while (live >= bound && level < 64) {
    bound = bound > UINT64_MAX / options.per_level ? UINT64_MAX : bound * options.per_level;
    ++level;
  }
  return level;
}

}  // namespace

std::optional<MergeRange> FindMerge(const std::vector<SegmentSize>& segments,
                                    const MergePolicyOptions& options) {
  if (options.per_level < 2) return std::nullopt;
  const size_t first = std::min(options.first_mergeable, segments.size());
  // Deletes first: a segment that is mostly dead costs every query that reaches it.
  for (size_t i = first; i < segments.size(); ++i) {
    const SegmentSize& s = segments[i];
    if (s.documents > 0 &&
        s.deleted<s.documents&& static_cast<double>(s.deleted) / static_cast<double>(s.documents)>
            options.max_deleted_share) {
      return MergeRange{i, i + 1};
    }
  }
  // Then the first run of per_level adjacent segments of one level.
  size_t run_begin = first;
  int run_level = -1;
  for (size_t i = first; i < segments.size(); ++i) {
    const int level = LevelOf(segments[i].documents - segments[i].deleted, options);
    if (level != run_level) {
      run_begin = i;
      run_level = level;
    }
    if (i + 1 - run_begin == options.per_level) return MergeRange{run_begin, i + 1};
  }
  return std::nullopt;
}

std::vector<MergeRange> ForcedMerges(size_t n, size_t max_segments) {
  std::vector<MergeRange> ranges;
  if (max_segments == 0 || n <= max_segments) return ranges;
  size_t begin = 0;
  for (size_t g = 0; g < max_segments; ++g) {
    const size_t count = n / max_segments + (g < n % max_segments ? 1 : 0);
    if (count > 1) ranges.push_back({begin, begin + count});
    begin += count;
  }
  return ranges;
}

}  // namespace tandem::live
