#include "index/query.h"

#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "base/enum_names.h"

namespace tandem::index {
namespace {

// Names first; then the spellings of older query files and of the command line.
constexpr base::EnumName<QueryMode> kQueryModeNames[] = {
    {QueryMode::kAnd, "and"},      {QueryMode::kOr, "or"},       {QueryMode::kAndOr, "and_or"},
    {QueryMode::kAnd, "AND"},      {QueryMode::kOr, "OR"},       {QueryMode::kAndOr, "andor"},
    {QueryMode::kAndOr, "AND_OR"}, {QueryMode::kAndOr, "and+or"}};

}  // namespace

absl::string_view QueryModeName(QueryMode mode) { return base::NameOf(kQueryModeNames, mode); }

bool ParseQueryMode(absl::string_view name, QueryMode* mode) {
  return base::ParseName(kQueryModeNames, name, mode);
}

absl::Status ValidateQueryFilter(const Query& query, uint32_t num_docs) {
  if (query.filter != nullptr && query.filter->num_rows() != num_docs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the filter is over %d documents and the index holds %d",
                        query.filter->num_rows(), num_docs));
  }
  return absl::OkStatus();
}

absl::Status ValidateQuery(const Query& query) {
  if (query.k < 1 || query.k > kMaxK) {
    return absl::InvalidArgumentError(
        absl::StrFormat("k must be between 1 and %d, got %d", kMaxK, query.k));
  }
  if (!std::isfinite(query.bm25.k1) || query.bm25.k1 < 0.0f || query.bm25.k1 > 100.0f) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bm25.k1 must be in [0, 100], got %g", query.bm25.k1));
  }
  if (!std::isfinite(query.bm25.b) || query.bm25.b < 0.0f || query.bm25.b > 1.0f) {
    return absl::InvalidArgumentError(
        absl::StrFormat("bm25.b must be in [0, 1], got %g", query.bm25.b));
  }
  for (size_t i = 0; i < query.terms.size(); ++i) {
    const QueryTerm& t = query.terms[i];
    if (!std::isfinite(t.weight) || t.weight <= 0.0f || t.weight > kMaxTermWeight) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "terms[%d].weight must be in (0, %g], got %g", i, kMaxTermWeight, t.weight));
    }
    if (t.term.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("terms[%d].term is empty", i));
    }
  }
  return absl::OkStatus();
}

std::vector<QueryTerm> MergeRepeatedTerms(const std::vector<QueryTerm>& terms) {
  std::vector<QueryTerm> merged;
  absl::flat_hash_map<absl::string_view, size_t> position;
  merged.reserve(terms.size());
  for (const QueryTerm& t : terms) {
    auto [it, inserted] = position.emplace(t.term, merged.size());
    if (inserted) {
      merged.push_back(t);
    } else {
      merged[it->second].weight += t.weight;
    }
  }
  return merged;
}

absl::Status SearchContext::Check() const {
  if (cancelled != nullptr && cancelled->load(std::memory_order_relaxed)) {
    return absl::CancelledError("query cancelled by the caller");
  }
  if (deadline != absl::InfiniteFuture() && absl::Now() >= deadline) {
    return absl::DeadlineExceededError("query deadline exceeded");
  }
  return absl::OkStatus();
}

}  // namespace tandem::index
