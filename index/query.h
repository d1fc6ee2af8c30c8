// File: query.h
//
// What every engine receives and returns. A Query holds analyzed terms (the server runs the index's
// Analyzer first); engines return the top-k hits in rank order: higher score first, ties broken by
// lower docID, so any two engines can be compared hit by hit.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "filter/bitmap.h"
#include "filter/filter.h"
#include "index/bm25.h"

namespace tandem::index {

enum class QueryMode : uint8_t {
  kAnd,    // documents containing every term
  kOr,     // documents containing any term
  kAndOr,  // AND; when it yields fewer than k hits, OR (Ding et al. 2009, section 8)
};

absl::string_view QueryModeName(QueryMode mode);  // "and", "or", "and_or"
bool ParseQueryMode(absl::string_view name, QueryMode* mode);

inline constexpr uint32_t kMaxK = 10000;
// The largest term weight. With k1 <= 100 and idf below 50, a term adds less than 1e6 * 50 * 101
// to a score, so the sum over any query stays finite (3.4e38 weights ranked everything as inf).
inline constexpr float kMaxTermWeight = 1e6f;

struct CollectionStatistics;  // index/resolved_query.h

struct QueryTerm {
  std::string term;
  float weight = 1.0f;
};

struct Query {
  std::vector<QueryTerm> terms;
  QueryMode mode = QueryMode::kOr;
  uint32_t k = 10;
  Bm25Params bm25;
  // The documents a filter allows (index/filter.h evaluates one to this bitmap, rows are docIDs);
  // null: every document. It never changes a score: the hits are the top k of the allowed
  // documents. Its num_rows must be the index's document count.
  std::shared_ptr<const filter::Bitmap> filter;
  // The filter as the request gave it, when `filter` came from one: an index of several segments
  // (live/snapshot.h) evaluates it against each segment's attributes.
  std::shared_ptr<const filter::FilterNode> filter_expression;
  // The statistics to score with, one df per term after MergeRepeatedTerms, when the caller knows
  // the whole collection's (a broker's --global-stats); null: the index's own. A live index's
  // snapshot (live/snapshot.h) then uses them instead of its live documents' own.
  std::shared_ptr<const CollectionStatistics> collection;
};

// Checks k (1..kMaxK), BM25 parameters (k1 in [0, 100], b in [0, 1], finite) and term weights
// (in (0, kMaxTermWeight]). INVALID_ARGUMENT with a message naming the field.
absl::Status ValidateQuery(const Query& query);

// Checks that a query's filter, when it has one, is over num_docs documents: INVALID_ARGUMENT
// otherwise.
absl::Status ValidateQueryFilter(const Query& query, uint32_t num_docs);

// Merges repeated terms into one with the summed weight, keeping first-occurrence order. This is
// how Anserini's bag-of-words query counts a term that appears twice.
std::vector<QueryTerm> MergeRepeatedTerms(const std::vector<QueryTerm>& terms);

struct Hit {
  uint32_t docid = 0;
  float score = 0.0f;
  friend bool operator==(const Hit& a, const Hit& b) {
    return a.docid == b.docid && a.score == b.score;
  }
};

// Rank order: true when a ranks before b.
inline bool RanksBefore(const Hit& a, const Hit& b) {
  return a.score > b.score || (a.score == b.score && a.docid < b.docid);
}

struct QueryStats {
  uint64_t postings_decoded = 0;  // docIDs decoded from compressed blocks
  uint64_t blocks_decoded = 0;
  uint64_t documents_scored = 0;
  uint64_t block_max_skips = 0;  // docID ranges skipped on stored block maxima alone
  // The mode that produced the hits: for kAndOr, kOr when the AND pass fell short of k.
  QueryMode executed_mode = QueryMode::kOr;
};

// What a result's docIDs name when they are not the docIDs of the engine's index: a live index's
// snapshot of several segments (live/snapshot.h) answers in its own docIDs.
class DocumentTable {
 public:
  virtual ~DocumentTable() = default;
  virtual absl::string_view external_id(uint32_t docid) const = 0;
  virtual std::vector<std::pair<absl::string_view, absl::string_view>> stored_fields(
      uint32_t docid) const = 0;
};

struct SearchResult {
  std::vector<Hit> hits;  // rank order, at most k
  QueryStats stats;
  // Where the hits' docIDs are resolved; null: the engine's index.
  std::shared_ptr<const DocumentTable> documents;
};

// Per-call limits. Engines poll Check() every few thousand postings and stop early.
struct SearchContext {
  absl::Time deadline = absl::InfiniteFuture();
  const std::atomic<bool>* cancelled = nullptr;

  // DEADLINE_EXCEEDED or CANCELLED once the query must stop, else OK.
  absl::Status Check() const;
};

}  // namespace tandem::index
