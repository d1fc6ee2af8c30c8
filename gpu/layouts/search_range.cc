#include "gpu/layouts/search_range.h"

namespace tandem::gpu {

const char* SearchRangeName(SearchRange range) {
  switch (range) {
    case SearchRange::kBinary:
      return "bs";
    case SearchRange::kLinearRegression:
      return "lr";
    case SearchRange::kHash16:
      return "hs16";
    case SearchRange::kHash32:
      return "hs32";
    case SearchRange::kHash256:
      return "hs256";
  }
  return "unknown";
}

bool ParseSearchRange(const std::string& name, SearchRange* range) {
  for (int r = 0; r < kNumSearchRanges; ++r) {
    if (name == SearchRangeName(static_cast<SearchRange>(r))) {
      *range = static_cast<SearchRange>(r);
      return true;
    }
  }
  return false;
}

}  // namespace tandem::gpu
