#include "cpu/daat_engine.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cpu/algorithm/algorithms.h"
#include "cpu/algorithm/term_scorer.h"
#include "cpu/top_k.h"

namespace tandem::cpu {
namespace {

using index::Query;
using index::QueryMode;
using index::QueryStats;
using index::SearchContext;
using index::SearchResult;

absl::Status RunOrAlgorithm(OrAlgorithm algorithm, std::vector<TermScorer>& terms,
                            const DocNorms& norm, const SearchContext& ctx, TopK& top,
                            QueryStats& stats) {
  switch (algorithm) {
    case OrAlgorithm::kMaxScore:
      return RunMaxScore<false>(terms, norm, ctx, top, stats);
    case OrAlgorithm::kBlockMaxMaxScore:
      return RunMaxScore<true>(terms, norm, ctx, top, stats);
    case OrAlgorithm::kWand:
      return RunWand<false>(terms, norm, ctx, top, stats);
    case OrAlgorithm::kBlockMaxWand:
      return RunWand<true>(terms, norm, ctx, top, stats);
    case OrAlgorithm::kExhaustive:
      break;
  }
  return RunOr(terms, norm, ctx, top, stats);
}

constexpr std::pair<OrAlgorithm, absl::string_view> kOrAlgorithmNames[] = {
    {OrAlgorithm::kMaxScore, "maxscore"},
    {OrAlgorithm::kBlockMaxMaxScore, "block-max-maxscore"},
    {OrAlgorithm::kWand, "wand"},
    {OrAlgorithm::kBlockMaxWand, "block-max-wand"},
    {OrAlgorithm::kExhaustive, "exhaustive"},
};

}  // namespace

absl::string_view OrAlgorithmName(OrAlgorithm algorithm) {
  for (const auto& [a, name] : kOrAlgorithmNames) {
    if (a == algorithm) return name;
  }
  return "unknown";
}

absl::StatusOr<OrAlgorithm> ParseOrAlgorithm(absl::string_view name) {
  std::string choices;
  for (const auto& [a, known] : kOrAlgorithmNames) {
    if (name == known) return a;
    absl::StrAppend(&choices, choices.empty() ? "" : ", ", known);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("OR algorithm must be one of ", choices, "; got '", name, "'"));
}

bool AbslParseFlag(absl::string_view text, OrAlgorithm* algorithm, std::string* error) {
  absl::StatusOr<OrAlgorithm> parsed = ParseOrAlgorithm(text);
  if (!parsed.ok()) {
    *error = std::string(parsed.status().message());
    return false;
  }
  *algorithm = *parsed;
  return true;
}

std::string AbslUnparseFlag(OrAlgorithm algorithm) {
  return std::string(OrAlgorithmName(algorithm));
}

std::vector<OrAlgorithm> AllOrAlgorithms() {
  std::vector<OrAlgorithm> all;
  for (const auto& [a, name] : kOrAlgorithmNames) all.push_back(a);
  return all;
}

absl::StatusOr<std::unique_ptr<DaatEngine>> DaatEngine::Create(const index::Index& index,
                                                               const DaatEngineOptions& options) {
  return std::unique_ptr<DaatEngine>(new DaatEngine(index, options));
}

std::shared_ptr<const filter::DenseRows> DaatEngine::FilterRows(
    const std::shared_ptr<const filter::Bitmap>& filter) const {
  {
    std::lock_guard<std::mutex> lock(filter_rows_mu_);
    for (auto it = filter_rows_.begin(); it != filter_rows_.end(); ++it) {
      if (it->first.lock() == filter) {
        filter_rows_.splice(filter_rows_.begin(), filter_rows_, it);
        return filter_rows_.front().second;
      }
    }
  }
  // Expanded outside the lock: concurrent first uses of one filter may both expand it.
  auto rows = std::make_shared<const filter::DenseRows>(*filter);
  std::lock_guard<std::mutex> lock(filter_rows_mu_);
  filter_rows_.emplace_front(filter, rows);
  while (filter_rows_.size() > kFilterRowsEntries) filter_rows_.pop_back();  // users hold theirs
  return rows;
}

absl::StatusOr<SearchResult> DaatEngine::Search(const index::PreparedQuery& prepared,
                                                const SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(prepared.CheckPreparedFor(index_));
  const Query& query = prepared.query();
  const index::ResolvedQuery& resolved = prepared.resolved();
  TANDEM_RETURN_IF_ERROR(context.Check());
  SearchResult result;
  result.stats.executed_mode = resolved.initial_executed_mode();
  if (resolved.empty()) return result;

  struct Resolved {
    index::PostingListView list;
    float weighted_idf;
    float max_score;
    float block_scale;
    float check_scale;  // the stored block maximum -> what no score of the block passes
    const std::string* term;
  };
  // Score bounds for pruning: weighted_idf times the bound of tf / (tf + norm), inflated by the
  // pruning margin when it is the index's stored maximum, never above weighted_idf. A block's
  // stored maximum is for weight 1 (idf times the ratio), so the term's weight scales it; the
  // margin covers the rounding between weight x (idf x ratio) and (weight x idf) x ratio.
  const float scale = options_.bound_scale_for_testing;
  std::vector<Resolved> present;
  present.reserve(resolved.terms.size());
  for (const index::ResolvedTerm& t : resolved.terms) {
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView list, index_.postings(t.info));
    const float max_ratio = t.has_stored_bound ? t.bound_ratio * kBoundMargin : 1.0f;
    const float block_scale =
        t.has_stored_bound ? t.weight * t.block_bound_scale * kBoundMargin * scale : 0.0f;
    // Checking scores against the stored maxima uses the same margin, never the test's scale.
    const float check_scale =
        t.has_stored_bound ? t.weight * t.block_bound_scale * kBoundMargin : 0.0f;
    present.push_back({list, t.weighted_idf,
                       std::min(t.weighted_idf, t.weighted_idf * max_ratio) * scale, block_scale,
                       check_scale, &t.info.term});
  }

  const DocNorms norm(index_, resolved);
  auto make_scorers = [&] {
    std::vector<TermScorer> terms;
    terms.reserve(present.size());
    for (const Resolved& r : present) {
      terms.emplace_back(r.list, index_.codec(), &result.stats, r.weighted_idf, r.max_score,
                         r.block_scale, r.check_scale);
    }
    return terms;
  };
  // A damaged list answers DATA_LOSS naming it, as Index::postings does.
  auto check_cursors = [&](const std::vector<TermScorer>& terms) -> absl::Status {
    for (size_t i = 0; i < terms.size(); ++i) {
      const Cursor& c = terms[i].cursor;
      if (c.status().ok() && !c.scored_above_bound()) continue;
      return absl::Status(
          c.status().ok() ? absl::StatusCode::kDataLoss : c.status().code(),
          absl::StrCat("index '", index_.directory(), "', list of term '", *present[i].term, "': ",
                       c.status().ok() ? "a posting scores above its block's stored maximum, "
                                         "which pruning relies on; the list is damaged"
                                       : c.status().message()));
    }
    return absl::OkStatus();
  };

  const std::shared_ptr<const filter::DenseRows> filter =
      query.filter != nullptr ? FilterRows(query.filter) : nullptr;
  if (resolved.runs_and()) {
    std::vector<TermScorer> terms = make_scorers();
    TopK top(query.k);
    TANDEM_RETURN_IF_ERROR(
        RunAnd(terms, norm, options_.block_max_and, filter.get(), context, top, result.stats));
    TANDEM_RETURN_IF_ERROR(check_cursors(terms));
    result.hits = std::move(top).Finish();
    result.stats.executed_mode = QueryMode::kAnd;
  }
  if (resolved.runs_or(result.hits.size())) {
    std::vector<TermScorer> terms = make_scorers();
    // Every OR algorithm then sees only the allowed documents (AND tests the filter itself).
    for (TermScorer& t : terms) t.cursor.set_filter(filter.get());
    TopK top(query.k, filter.get());
    TANDEM_RETURN_IF_ERROR(
        RunOrAlgorithm(options_.or_algorithm, terms, norm, context, top, result.stats));
    TANDEM_RETURN_IF_ERROR(check_cursors(terms));
    result.hits = std::move(top).Finish();
    result.stats.executed_mode = QueryMode::kOr;
  }
  return result;
}

}  // namespace tandem::cpu
