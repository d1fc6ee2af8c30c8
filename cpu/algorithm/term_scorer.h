// File: term_scorer.h
//
// What every algorithm of the CPU engine (cpu/algorithm/*.cc) scores with: one query term's cursor
// and score bounds (TermScorer), the documents' length norms (DocNorms), per-term scratch that
// stays on the stack for short queries (PerTerm), and the constants the loops share. Internal to
// cpu/: DaatEngine builds the scorers, algorithms.h runs them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "cpu/cursor.h"
#include "index/bm25.h"
#include "index/index.h"
#include "index/query.h"
#include "index/resolved_query.h"

namespace tandem::cpu {

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
  // `check_scale` (0: none) turns a stored block maximum into what no posting of the block may
  // score above in an undamaged list (Cursor::decoded_block_bound).
  TermScorer(const index::PostingListView& list, const index::BlockCodec& codec,
             index::QueryStats* stats, float weighted_idf, float max_score, float block_scale,
             float check_scale)
      : cursor(list, codec, stats, check_scale),
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
  // The score of the cursor's posting, whose frequency is `tf` and norm `doc_norm`, noted against
  // its block's stored maximum (Cursor::NoteScore), which pruning trusted.
  float Score(uint32_t tf, float doc_norm) {
    return Checked(tf, doc_norm, cursor.decoded_block_bound());
  }
  // The same for a posting scored after the cursor moved on: `bound` is the decoded_block_bound()
  // the cursor had on it.
  float Checked(uint32_t tf, float doc_norm, float bound) {
    const float c = index::Bm25Score(weighted_idf, tf, doc_norm);
    cursor.NoteScore(c, bound);
    return c;
  }
};

// Document length norms: the index's precomputed table for its default parameters and its own
// statistics, else computed per document with the same formula (and so the same float result) as
// index::Bm25DocNorm, under the query's parameters and average length (a collection's).
class DocNorms {
 public:
  DocNorms(const index::Index& index, const index::ResolvedQuery& query)
      : index_(index),
        params_(query.bm25),
        avg_doc_length_(query.avg_doc_length),
        table_(query.stored_norms ? index.default_doc_norms() : nullptr) {}
  float operator()(uint32_t docid) const {
    return table_ != nullptr
               ? table_[docid]
               : index::Bm25DocNorm(params_, index_.doc_length(docid), avg_doc_length_);
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
  index::Bm25Params params_;
  float avg_doc_length_;
  const float* table_;
  // What operator() loads per document: the norm table, else the document lengths (4 bytes each).
  const char* prefetch_base_ = table_ != nullptr
                                   ? reinterpret_cast<const char*>(table_)
                                   : reinterpret_cast<const char*>(index_.doc_lengths());
  uint32_t last_docid_ = index_.num_docs() > 0 ? index_.num_docs() - 1 : 0;
};

}  // namespace tandem::cpu
