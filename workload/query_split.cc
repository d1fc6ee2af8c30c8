#include "workload/query_split.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/enum_names.h"

namespace tandem::workload {
namespace {

uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace

absl::StatusOr<QuerySplit> SplitQueries(size_t pool_size, uint64_t seed, size_t train,
                                        size_t eval) {
  if (train > pool_size || eval > pool_size - train) {
    return absl::InvalidArgumentError(absl::StrCat("cannot split ", pool_size, " queries into ",
                                                   train, " training and ", eval,
                                                   " evaluation queries: too few queries"));
  }
  std::vector<size_t> order(pool_size);
  std::iota(order.begin(), order.end(), size_t{0});
  uint64_t state = seed;
  for (size_t i = pool_size; i-- > 1;) {
    const uint64_t x = SplitMix64(&state);
    const size_t j = static_cast<size_t>((static_cast<unsigned __int128>(x) * (i + 1)) >> 64);
    std::swap(order[i], order[j]);
  }
  QuerySplit split;
  split.train.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(train));
  split.eval.assign(order.begin() + static_cast<std::ptrdiff_t>(train),
                    order.begin() + static_cast<std::ptrdiff_t>(train + eval));
  std::sort(split.train.begin(), split.train.end());
  std::sort(split.eval.begin(), split.eval.end());
  return split;
}

constexpr base::EnumName<SplitPart> kSplitPartNames[] = {
    {SplitPart::kAll, "all"}, {SplitPart::kTrain, "train"}, {SplitPart::kEval, "eval"}};

absl::StatusOr<SplitPart> ParseSplitPart(absl::string_view name) {
  if (const std::optional<SplitPart> part = base::ValueOfName(kSplitPartNames, name)) return *part;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown split '", name, "' (known: all, train, eval)"));
}

}  // namespace tandem::workload
