#include "cpu/daat_engine.h"

#include <algorithm>
#include <numeric>
#include <optional>
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

// How far ahead in a cursor's block a document's norm is prefetched (DocNorms::Prefetch): every
// posting of an essential list is scored, so a few postings ahead gives the load time to land.
constexpr uint32_t kNormPrefetchAhead = 16;

// AND scores its matches this many at a time, so that their norms' cache misses overlap.
constexpr size_t kAndScoreBatch = 16;

// Pruning compares float sums taken in another order than the final score's and bounds computed
// from the index's stored maxima; inflating the bound side by this relative margin (far above the
// few ulps those roundings can differ by) keeps every pruning decision safe.
constexpr float kBoundMargin = 1.0f + 1e-4f;

// Per-term scratch of one query: on the stack for up to kInline entries, else on the heap, and
// indexed through a plain pointer (absl::InlinedVector tests which of the two on every access,
// which the scoring loops would pay per posting).
template <typename T, size_t kInline = 8>
class PerTerm {
 public:
  explicit PerTerm(size_t n, T value = T()) : n_(n) {
    if (n > kInline) heap_.resize(n);
    data_ = n > kInline ? heap_.data() : inline_;
    std::fill_n(data_, n, value);
  }
  PerTerm(const PerTerm&) = delete;
  PerTerm& operator=(const PerTerm&) = delete;

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + n_; }

 private:
  size_t n_;
  T inline_[kInline];
  std::vector<T> heap_;
  T* data_;
};

// One query term with its cursor, weighted idf and upper bounds of its score contribution.
struct TermScorer {
  // The cursor is built in place: a Cursor holds two blocks of postings, too much to copy per term.
  TermScorer(const index::PostingListView& list, const index::BlockCodec& codec, QueryStats* stats,
             float weighted_idf, float max_score, float block_scale)
      : cursor(list, codec, stats),
        weighted_idf(weighted_idf),
        max_score(max_score),
        block_scale(block_scale) {}

  Cursor cursor;
  float weighted_idf;
  float max_score;    // over the whole list
  float block_scale;  // stored block maximum -> bound of this term; 0 when there are none
  // The bound in the cursor's shallow block (Cursor::block_max_next_geq), at most max_score.
  float block_bound() const {
    return block_scale > 0.0f ? std::min(max_score, cursor.block_max() * block_scale) : max_score;
  }
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
  // Starts loading what operator()(docid) reads. Candidates are spread over the whole collection,
  // so at 25M documents (a 100 MB table) nearly every norm misses the cache; loading it while
  // other work goes on hides that latency. kEnd and other docIDs past the table prefetch its end.
  // (Branch-free on purpose: GCC 12 at -O2 drops a __builtin_prefetch behind a branch.)
  void Prefetch(uint32_t docid) const {
    __builtin_prefetch(prefetch_base_ + sizeof(float) * std::min(docid, last_docid_));
  }

 private:
  const index::Index& index_;
  Bm25Params params_;
  const float* table_;
  // What operator() loads per document: the norm table, else the document lengths (4 bytes each).
  const char* prefetch_base_ = table_ != nullptr
                                   ? reinterpret_cast<const char*>(table_)
                                   : reinterpret_cast<const char*>(index_.doc_lengths());
  uint32_t last_docid_ = index_.num_docs() > 0 ? index_.num_docs() - 1 : 0;
};

// Ranked AND. `order` lists the terms by increasing df; scores are summed in query-term order so
// every engine adds the same floats in the same order.
// With `block_max`, once k hits are kept, a candidate whose lists' block maxima sum to at most the
// k-th score is skipped along with every docID up to the end of the first of those blocks to end
// (each such document is bounded by the same blocks), and so on from there: the skip tables alone
// decide, and the lists are decoded only where the blocks could hold a hit.
// A filter is one more conjunct: a matching candidate the filter does not allow moves the lead
// to the filter's next document.
// Matches wait to be scored kAndScoreBatch at a time, with their frequencies read while the
// cursors stand on them and their norms prefetched: a match's norm is a cache miss, and scoring
// it at once would stall on it. The k-th score then lags by at most a batch, which only makes
// block-max skipping more cautious.
absl::Status RunAnd(std::vector<TermScorer>& terms, const DocNorms& norm, bool block_max,
                    const index::DenseRows* filter, const SearchContext& ctx, TopK& top,
                    QueryStats& stats) {
  const size_t n = terms.size();
  uint32_t pending[kAndScoreBatch];  // matched docIDs, not yet scored
  size_t num_pending = 0;
  PerTerm<uint32_t, kAndScoreBatch * 4> pending_freqs(kAndScoreBatch * n);  // n per match
  auto score_pending = [&] {
    for (size_t m = 0; m < num_pending; ++m) {
      const float dn = norm(pending[m]);
      const uint32_t* freqs = &pending_freqs[m * n];
      float score = 0.0f;
      for (size_t i = 0; i < n; ++i) score += index::Bm25Score(terms[i].weighted_idf, freqs[i], dn);
      top.Push(pending[m], score);
    }
    stats.documents_scored += num_pending;
    num_pending = 0;
  };
  PerTerm<size_t> order(terms.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return terms[a].cursor.size() < terms[b].cursor.size();
  });
  Cursor& lead = terms[order[0]].cursor;
  uint32_t since_check = 0;
  // Candidates up to here lie in blocks whose summed maxima last passed the check. Checking them
  // again could only skip more as the k-th score grows; once per run of blocks keeps the cost low.
  int64_t checked_until = -1;
  uint32_t candidate = lead.docid();
  while (candidate != Cursor::kEnd) {
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    if (block_max && static_cast<int64_t>(candidate) > checked_until && top.full()) {
      // Walk the skip tables while the blocks at `target` cannot reach the k-th score.
      const float threshold = top.threshold();
      uint32_t target = candidate;
      while (target != Cursor::kEnd) {
        float bound = 0.0f;
        uint32_t blocks_end = Cursor::kEnd;
        for (TermScorer& t : terms) {
          t.cursor.block_max_next_geq(target);
          bound += t.block_bound();
          blocks_end = std::min(blocks_end, t.cursor.block_max_docid());
        }
        if (bound * kBoundMargin > threshold) {
          // These blocks may hold hits: candidates up to their end are not checked again.
          checked_until = blocks_end;
          break;
        }
        ++stats.block_max_skips;
        target = blocks_end == Cursor::kEnd ? Cursor::kEnd : blocks_end + 1;
      }
      if (target != candidate) {
        if (target == Cursor::kEnd) break;
        lead.next_geq(target);
        candidate = lead.docid();
        continue;
      }
    }
    bool match = true;
    for (size_t i = 1; i < n; ++i) {
      Cursor& c = terms[order[i]].cursor;
      c.next_geq(candidate);
      if (c.docid() != candidate) {
        match = false;
        candidate = c.docid();  // kEnd ends the loop
        break;
      }
    }
    if (match && filter != nullptr) {
      const uint32_t allowed = filter->NextGeq(candidate);
      if (allowed != candidate) {
        match = false;
        candidate = allowed == index::DenseRows::kEnd ? Cursor::kEnd : allowed;
      }
    }
    if (!match) {
      if (candidate == Cursor::kEnd) break;
      lead.next_geq(candidate);
      candidate = lead.docid();
      continue;
    }
    norm.Prefetch(candidate);
    uint32_t* freqs = &pending_freqs[num_pending * n];
    for (size_t i = 0; i < n; ++i) freqs[i] = terms[i].cursor.freq();
    pending[num_pending++] = candidate;
    if (num_pending == kAndScoreBatch) score_pending();
    lead.next();
    candidate = lead.docid();
  }
  score_pending();
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
        norm.Prefetch(t.cursor.docid_ahead(kNormPrefetchAhead));
      }
    }
    ++stats.documents_scored;
    top.Push(doc, score);
  }
  return absl::OkStatus();
}

// Ranked OR by MaxScore. Terms are ordered by increasing bound; bound_sum[i] is the sum of the
// bounds of the i + 1 lowest. The lowest terms whose bound_sum stays at or below the k-th score
// are non-essential: a document in none of the other lists cannot enter the top k (a document
// scoring exactly the k-th score loses the docID tie, as it comes later). Every document that
// is kept is scored in query-term order, so its float score equals RunOr's. kBlockMax: the
// non-essential bounds of a candidate are those of the blocks that would hold it (block-max
// MaxScore), read before any of them is decoded.
template <bool kBlockMax>
absl::Status RunMaxScore(std::vector<TermScorer>& terms, const DocNorms& norm,
                         const SearchContext& ctx, TopK& top, QueryStats& stats) {
  const size_t n = terms.size();
  PerTerm<size_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return terms[a].max_score < terms[b].max_score; });
  PerTerm<float> bound_sum(n);
  float sum = 0.0f;
  for (size_t i = 0; i < n; ++i) {
    sum += terms[order[i]].max_score;
    bound_sum[i] = sum * kBoundMargin;
  }
  PerTerm<float> block_sum(n);           // kBlockMax: bound_sum over the candidate's blocks
  PerTerm<float> contribution(n, 0.0f);  // by query-term position
  PerTerm<TermScorer*> by_bound(n);
  for (size_t i = 0; i < n; ++i) by_bound[i] = &terms[order[i]];
  size_t first_essential = 0;
  float threshold = top.threshold();
  uint32_t since_check = 0;
  // The next candidate: the lowest docID of the essential lists. The scoring pass below finds the
  // one after it; a change of the essential set recomputes it.
  auto lowest_essential = [&] {
    uint32_t d = Cursor::kEnd;
    for (size_t i = first_essential; i < n; ++i) d = std::min(d, by_bound[i]->cursor.docid());
    return d;
  };
  uint32_t doc = lowest_essential();
  while (true) {
    if (first_essential < n && bound_sum[first_essential] <= threshold) {
      while (first_essential < n && bound_sum[first_essential] <= threshold) ++first_essential;
      if (first_essential == n) break;  // no document left can enter the top k
      doc = lowest_essential();
    }
    if (doc == Cursor::kEnd) break;
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    const float dn = norm(doc);
    float partial = 0.0f;
    uint32_t next_doc = Cursor::kEnd;
    for (size_t i = first_essential; i < n; ++i) {
      TermScorer& t = *by_bound[i];
      float c = 0.0f;
      if (t.cursor.docid() == doc) {
        c = index::Bm25Score(t.weighted_idf, t.cursor.freq(), dn);
        t.cursor.next();
        norm.Prefetch(t.cursor.docid_ahead(kNormPrefetchAhead));
      }
      next_doc = std::min(next_doc, t.cursor.docid());
      contribution[order[i]] = c;
      partial += c;
    }
    const uint32_t candidate = doc;
    doc = next_doc;
    const PerTerm<float>* bounds = &bound_sum;
    if constexpr (kBlockMax) {
      float block = 0.0f;
      for (size_t i = 0; i < first_essential; ++i) {
        TermScorer& t = *by_bound[i];
        t.cursor.block_max_next_geq(candidate);
        block += t.block_bound();
        block_sum[i] = block * kBoundMargin;
      }
      bounds = &block_sum;
    }
    // Non-essential terms from the highest bound down, while the document can still enter.
    bool pruned = false;
    for (size_t i = first_essential; i-- > 0;) {
      if ((partial + (*bounds)[i]) * kBoundMargin <= threshold) {
        pruned = true;
        break;
      }
      TermScorer& t = *by_bound[i];
      t.cursor.next_geq(candidate);
      float c = 0.0f;
      if (t.cursor.docid() == candidate) c = index::Bm25Score(t.weighted_idf, t.cursor.freq(), dn);
      contribution[order[i]] = c;
      partial += c;
    }
    if (pruned) continue;
    // Adding a 0 for an absent term leaves a float sum unchanged, so this is RunOr's sum.
    float score = 0.0f;
    for (size_t q = 0; q < n; ++q) score += contribution[q];
    ++stats.documents_scored;
    top.Push(candidate, score);
    threshold = top.threshold();
  }
  return absl::OkStatus();
}

// Ranked OR by WAND (Broder et al. 2003) and, with kBlockMax, by block-max WAND (Ding and Suel
// 2011, Algorithm 2 with PISA's choice of the list to move). `sorted` orders the lists by current
// docID. The pivot is the first list at which the summed list bounds exceed the k-th score, widened
// to every list on the pivot's docID; no document below the pivot's docID can enter the top k, as
// the lists holding it have bounds summing to at most the k-th score, and that sum only shrinks
// as they move on while the k-th score only grows.
template <bool kBlockMax>
absl::Status RunWand(std::vector<TermScorer>& terms, const DocNorms& norm, const SearchContext& ctx,
                     TopK& top, QueryStats& stats) {
  const size_t n = terms.size();
  PerTerm<TermScorer*> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[i] = &terms[i];
  auto by_docid = [](const TermScorer* a, const TermScorer* b) {
    return a->cursor.docid() < b->cursor.docid();
  };
  std::sort(sorted.begin(), sorted.end(), by_docid);
  // Restores the order after sorted[i] moved forward.
  auto sink = [&](size_t i) {
    for (; i + 1 < n && sorted[i + 1]->cursor.docid() < sorted[i]->cursor.docid(); ++i) {
      std::swap(sorted[i], sorted[i + 1]);
    }
  };
  float threshold = top.threshold();
  uint32_t since_check = 0;
  while (true) {
    if (++since_check == kCheckInterval) {
      since_check = 0;
      TANDEM_RETURN_IF_ERROR(ctx.Check());
    }
    float bound = 0.0f;
    size_t pivot = n;
    for (size_t i = 0; i < n && sorted[i]->cursor.docid() != Cursor::kEnd; ++i) {
      bound += sorted[i]->max_score;
      if (bound * kBoundMargin > threshold) {
        pivot = i;
        break;
      }
    }
    if (pivot == n) break;  // no document left can enter the top k
    const uint32_t pivot_doc = sorted[pivot]->cursor.docid();
    while (pivot + 1 < n && sorted[pivot + 1]->cursor.docid() == pivot_doc) ++pivot;

    if constexpr (kBlockMax) {
      float block = 0.0f;
      for (size_t i = 0; i <= pivot; ++i) {
        sorted[i]->cursor.block_max_next_geq(pivot_doc);
        block += sorted[i]->block_bound();
      }
      if (block * kBoundMargin <= threshold) {
        // Every document from the pivot's docID to the end of the first of these blocks to end
        // (and before the next list's docID) holds only these lists, each within its block.
        uint32_t next = Cursor::kEnd;
        size_t move = pivot;  // the list with the highest bound moves: it skips the most
        for (size_t i = 0; i <= pivot; ++i) {
          next = std::min(next, sorted[i]->cursor.block_max_docid());
          if (sorted[i]->max_score > sorted[move]->max_score) move = i;
        }
        next = next == Cursor::kEnd ? Cursor::kEnd : next + 1;
        if (pivot + 1 < n) next = std::min(next, sorted[pivot + 1]->cursor.docid());
        next = std::max(next, pivot_doc + 1);
        ++stats.block_max_skips;
        sorted[move]->cursor.next_geq(next);
        sink(move);
        continue;
      }
    }
    // Scored now or, after a list moves up to it, soon. Block-max WAND has skipped most pivots on
    // their blocks' bounds alone by here, without loading their norms.
    norm.Prefetch(pivot_doc);

    if (sorted[0]->cursor.docid() == pivot_doc) {
      // Every list holding pivot_doc stands on it; sum in query-term order as RunOr does.
      const float dn = norm(pivot_doc);
      float score = 0.0f;
      for (TermScorer& t : terms) {
        if (t.cursor.docid() == pivot_doc) {
          score += index::Bm25Score(t.weighted_idf, t.cursor.freq(), dn);
        }
      }
      ++stats.documents_scored;
      top.Push(pivot_doc, score);
      threshold = top.threshold();
      for (size_t i = 0; i <= pivot; ++i) {
        sorted[i]->cursor.next();
        // The pivot's own prefetch comes too late when it is scored at once; these lists' coming
        // postings are where the next pivots are most likely to stand.
        norm.Prefetch(sorted[i]->cursor.docid_ahead(kNormPrefetchAhead));
      }
      std::sort(sorted.begin(), sorted.end(), by_docid);
    } else {
      // Move the last list before those on pivot_doc up to it.
      size_t i = pivot;
      while (sorted[i]->cursor.docid() == pivot_doc) --i;
      sorted[i]->cursor.next_geq(pivot_doc);
      sink(i);
    }
  }
  return absl::OkStatus();
}

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

std::shared_ptr<const index::DenseRows> DaatEngine::FilterRows(
    const std::shared_ptr<const index::Bitmap>& filter) const {
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
  auto rows = std::make_shared<const index::DenseRows>(*filter);
  std::lock_guard<std::mutex> lock(filter_rows_mu_);
  filter_rows_.emplace_front(filter, rows);
  while (filter_rows_.size() > kFilterRowsEntries) filter_rows_.pop_back();  // users hold theirs
  return rows;
}

absl::StatusOr<SearchResult> DaatEngine::Search(const Query& query,
                                                const SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(index::ValidateQuery(query));
  return SearchValid(query, index::ResolveQuery(index_, query), context);
}

absl::StatusOr<SearchResult> DaatEngine::Search(const Query& query,
                                                const index::ResolvedQuery& resolved,
                                                const SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(index::ValidateQuery(query));
  if (resolved.mode != query.mode || resolved.k != query.k || resolved.bm25.k1 != query.bm25.k1 ||
      resolved.bm25.b != query.bm25.b || resolved.num_distinct_terms > query.terms.size()) {
    return absl::InvalidArgumentError(
        "the resolved query is not this query's: resolve it with index::ResolveQuery against "
        "the engine's index");
  }
  return SearchValid(query, resolved, context);
}

absl::StatusOr<SearchResult> DaatEngine::SearchValid(const Query& query,
                                                     const index::ResolvedQuery& resolved,
                                                     const SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(index::ValidateQueryFilter(query, index_.num_docs()));
  TANDEM_RETURN_IF_ERROR(context.Check());
  SearchResult result;
  result.stats.executed_mode = resolved.initial_executed_mode();
  if (resolved.empty()) return result;

  struct Resolved {
    index::PostingListView list;
    float weighted_idf;
    float max_score;
    float block_scale;
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
    const float block_scale = t.has_stored_bound ? t.weight * kBoundMargin * scale : 0.0f;
    present.push_back({list, t.weighted_idf,
                       std::min(t.weighted_idf, t.weighted_idf * max_ratio) * scale, block_scale});
  }

  const DocNorms norm(index_, query.bm25, resolved.default_bm25);
  auto make_scorers = [&] {
    std::vector<TermScorer> terms;
    terms.reserve(present.size());
    for (const Resolved& r : present) {
      terms.emplace_back(r.list, index_.codec(), &result.stats, r.weighted_idf, r.max_score,
                         r.block_scale);
    }
    return terms;
  };
  auto check_cursors = [](const std::vector<TermScorer>& terms) -> absl::Status {
    for (const TermScorer& t : terms) TANDEM_RETURN_IF_ERROR(t.cursor.status());
    return absl::OkStatus();
  };

  const std::shared_ptr<const index::DenseRows> filter =
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
