#include "cpu/daat_engine.h"

#include <algorithm>
#include <numeric>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "cpu/cursor.h"
#include "cpu/top_k.h"
#include "index/bm25.h"
#include "index/resolved_query.h"

namespace tandem::cpu {
namespace {

using index::Bm25Params;
using index::Query;
using index::QueryMode;
using index::QueryStats;
using index::SearchContext;
using index::SearchResult;

// How many candidate documents pass between deadline/cancellation checks.
constexpr uint32_t kCheckInterval = 4096;

// One query term with its cursor, weighted idf and an upper bound of its score contribution.
struct TermScorer {
  Cursor cursor;
  float weighted_idf;
  float max_score;
};

// Document length norms: the index's precomputed table for its default parameters, else computed
// per document with the same formula (and so the same float result) as index::Bm25DocNorm.
class DocNorms {
 public:
  // `default_params`: `p` are the index's own parameters (index::ResolvedQuery::default_bm25).
  DocNorms(const index::Index& index, const Bm25Params& p, bool default_params)
      : index_(index), params_(p), table_(default_params ? index.default_doc_norms() : nullptr) {}
  float operator()(uint32_t docid) const {
    return table_ != nullptr
               ? table_[docid]
               : index::Bm25DocNorm(params_, index_.doc_length(docid), index_.avg_doc_length());
  }

 private:
  const index::Index& index_;
  Bm25Params params_;
  const float* table_;
};

// Ranked AND. `order` lists the terms by increasing df; scores are summed in query-term order so
// every engine adds the same floats in the same order.
absl::Status RunAnd(std::vector<TermScorer>& terms, const DocNorms& norm, const SearchContext& ctx,
                    TopK& top, QueryStats& stats) {
  std::vector<size_t> order(terms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return terms[a].cursor.size() < terms[b].cursor.size();
  });
  Cursor& lead = terms[order[0]].cursor;
  uint32_t since_check = 0;
  uint32_t candidate = lead.docid();
  while (candidate != Cursor::kEnd) {
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    bool match = true;
    for (size_t i = 1; i < order.size(); ++i) {
      Cursor& c = terms[order[i]].cursor;
      c.next_geq(candidate);
      if (c.docid() != candidate) {
        match = false;
        candidate = c.docid();  // kEnd ends the loop
        break;
      }
    }
    if (!match) {
      if (candidate == Cursor::kEnd) break;
      lead.next_geq(candidate);
      candidate = lead.docid();
      continue;
    }
    const float dn = norm(candidate);
    float score = 0.0f;
    for (TermScorer& t : terms) score += index::Bm25Score(t.weighted_idf, t.cursor.freq(), dn);
    ++stats.documents_scored;
    top.Push(candidate, score);
    lead.next();
    candidate = lead.docid();
  }
  return absl::OkStatus();
}

// Ranked exhaustive OR.
absl::Status RunOr(std::vector<TermScorer>& terms, const DocNorms& norm, const SearchContext& ctx,
                   TopK& top, QueryStats& stats) {
  auto min_docid = [&terms] {
    uint32_t m = Cursor::kEnd;
    for (const TermScorer& t : terms) m = std::min(m, t.cursor.docid());
    return m;
  };
  uint32_t since_check = 0;
  for (uint32_t doc = min_docid(); doc != Cursor::kEnd; doc = min_docid()) {
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    const float dn = norm(doc);
    float score = 0.0f;
    for (TermScorer& t : terms) {
      if (t.cursor.docid() == doc) {
        score += index::Bm25Score(t.weighted_idf, t.cursor.freq(), dn);
        t.cursor.next();
      }
    }
    ++stats.documents_scored;
    top.Push(doc, score);
  }
  return absl::OkStatus();
}

// Pruning compares float sums taken in another order than the final score's and bounds computed
// from the index's stored maxima; inflating the bound side by this relative margin (far above the
// few ulps those roundings can differ by) keeps every pruning decision safe.
constexpr float kBoundMargin = 1.0f + 1e-4f;

// Ranked OR by MaxScore. Terms are ordered by increasing bound; bound_sum[i] is the sum of the
// bounds of the i + 1 lowest. The lowest terms whose bound_sum stays at or below the k-th score
// are non-essential: a document in none of the other lists cannot enter the top k (a document
// scoring exactly the k-th score loses the docID tie, as it comes later). Every document that
// is kept is scored in query-term order, so its float score equals RunOr's.
absl::Status RunMaxScore(std::vector<TermScorer>& terms, const DocNorms& norm,
                         const SearchContext& ctx, TopK& top, QueryStats& stats) {
  const size_t n = terms.size();
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return terms[a].max_score < terms[b].max_score; });
  std::vector<float> bound_sum(n);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    sum += terms[order[i]].max_score;
    bound_sum[i] = sum * kBoundMargin;
  }
  std::vector<float> contribution(n, 0.0f);  // by query-term position
  size_t first_essential = 0;
  float threshold = top.threshold();
  uint32_t since_check = 0;
  while (true) {
    while (first_essential < n && bound_sum[first_essential] <= threshold) ++first_essential;
    if (first_essential == n) break;  // no document left can enter the top k
    uint32_t doc = Cursor::kEnd;
    for (size_t i = first_essential; i < n; ++i)
      doc = std::min(doc, terms[order[i]].cursor.docid());
    if (doc == Cursor::kEnd) break;
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    const float dn = norm(doc);
    float partial = 0.0f;
    for (size_t i = first_essential; i < n; ++i) {
      TermScorer& t = terms[order[i]];
      float c = 0.0f;
      if (t.cursor.docid() == doc) {
        c = index::Bm25Score(t.weighted_idf, t.cursor.freq(), dn);
        t.cursor.next();
      }
      contribution[order[i]] = c;
      partial += c;
    }
    // Non-essential terms from the highest bound down, while the document can still enter.
    bool pruned = false;
    for (size_t i = first_essential; i-- > 0;) {
      if ((partial + bound_sum[i]) * kBoundMargin <= threshold) {
        pruned = true;
        break;
      }
      TermScorer& t = terms[order[i]];
      t.cursor.next_geq(doc);
      float c = 0.0f;
      if (t.cursor.docid() == doc) c = index::Bm25Score(t.weighted_idf, t.cursor.freq(), dn);
      contribution[order[i]] = c;
      partial += c;
    }
    if (pruned) continue;
    // Adding a 0 for an absent term leaves a float sum unchanged, so this is RunOr's sum.
    float score = 0.0f;
    for (size_t q = 0; q < n; ++q) score += contribution[q];
    ++stats.documents_scored;
    top.Push(doc, score);
    threshold = top.threshold();
  }
  return absl::OkStatus();
}

}  // namespace

absl::string_view OrAlgorithmName(OrAlgorithm algorithm) {
  return algorithm == OrAlgorithm::kMaxScore ? "maxscore" : "exhaustive";
}

absl::StatusOr<OrAlgorithm> ParseOrAlgorithm(absl::string_view name) {
  if (name == "maxscore") return OrAlgorithm::kMaxScore;
  if (name == "exhaustive") return OrAlgorithm::kExhaustive;
  return absl::InvalidArgumentError(
      absl::StrCat("OR algorithm must be maxscore or exhaustive, got '", name, "'"));
}

absl::StatusOr<std::unique_ptr<DaatEngine>> DaatEngine::Create(const index::Index& index,
                                                               const DaatEngineOptions& options) {
  return std::unique_ptr<DaatEngine>(new DaatEngine(index, options));
}

absl::StatusOr<SearchResult> DaatEngine::Search(const Query& query,
                                                const SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(index::ValidateQuery(query));
  TANDEM_RETURN_IF_ERROR(context.Check());
  const index::ResolvedQuery resolved = index::ResolveQuery(index_, query);
  SearchResult result;
  result.stats.executed_mode = resolved.initial_executed_mode();
  if (resolved.empty()) return result;

  struct Resolved {
    index::PostingListView list;
    float weighted_idf;
    float max_score;
  };
  // Score bounds for MaxScore: weighted_idf times the bound of tf / (tf + norm), inflated by the
  // pruning margin when it is the index's stored maximum, never above weighted_idf.
  std::vector<Resolved> present;
  present.reserve(resolved.terms.size());
  for (const index::ResolvedTerm& t : resolved.terms) {
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView list, index_.postings(t.info));
    const float max_ratio = t.has_stored_bound ? t.bound_ratio * kBoundMargin : 1.0f;
    present.push_back({list, t.weighted_idf, std::min(t.weighted_idf, t.weighted_idf * max_ratio)});
  }

  const DocNorms norm(index_, query.bm25, resolved.default_bm25);
  auto make_scorers = [&] {
    std::vector<TermScorer> terms;
    terms.reserve(present.size());
    for (const Resolved& r : present) {
      terms.push_back({Cursor(r.list, index_.codec(), &result.stats), r.weighted_idf, r.max_score});
    }
    return terms;
  };
  auto check_cursors = [](const std::vector<TermScorer>& terms) -> absl::Status {
    for (const TermScorer& t : terms) TANDEM_RETURN_IF_ERROR(t.cursor.status());
    return absl::OkStatus();
  };

  if (resolved.runs_and()) {
    std::vector<TermScorer> terms = make_scorers();
    TopK top(query.k);
    TANDEM_RETURN_IF_ERROR(RunAnd(terms, norm, context, top, result.stats));
    TANDEM_RETURN_IF_ERROR(check_cursors(terms));
    result.hits = std::move(top).Finish();
    result.stats.executed_mode = QueryMode::kAnd;
  }
  if (resolved.runs_or(result.hits.size())) {
    std::vector<TermScorer> terms = make_scorers();
    TopK top(query.k);
    TANDEM_RETURN_IF_ERROR(options_.or_algorithm == OrAlgorithm::kMaxScore
                               ? RunMaxScore(terms, norm, context, top, result.stats)
                               : RunOr(terms, norm, context, top, result.stats));
    TANDEM_RETURN_IF_ERROR(check_cursors(terms));
    result.hits = std::move(top).Finish();
    result.stats.executed_mode = QueryMode::kOr;
  }
  return result;
}

}  // namespace tandem::cpu
