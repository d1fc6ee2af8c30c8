#include "gpu/layouts/search_range.h"

#include "base/enum_names.h"

namespace tandem::gpu {
namespace {

constexpr base::EnumName<SearchRange> kSearchRangeNames[] = {{SearchRange::kBinary, "bs"},
                                                             {SearchRange::kLinearRegression, "lr"},
                                                             {SearchRange::kHash16, "hs16"},
                                                             {SearchRange::kHash32, "hs32"},
                                                             {SearchRange::kHash256, "hs256"}};

}  // namespace

const char* SearchRangeName(SearchRange range) { return base::NameOf(kSearchRangeNames, range); }

bool ParseSearchRange(const std::string& name, SearchRange* range) {
  return base::ParseName(kSearchRangeNames, name, range);
}

}  // namespace tandem::gpu
