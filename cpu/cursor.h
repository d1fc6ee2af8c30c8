// File: cursor.h
//
// A forward cursor over one compressed posting list, PISA's cursor concept: docid(), freq(),
// next(), next_geq(target). next_geq consults the skip table first and jumps over whole blocks
// whose last docID is below the target, so only the blocks a cursor lands in are decoded (Ding et
// al. 2009, section 2, "skip over most elements of the longer list without uncompressing them").
// Frequencies of a block are decoded only when freq() is asked for.
//
// For block-max pruning (Ding and Suel 2011, "Faster top-k document retrieval using block-max
// indexes", section 4; PISA's block_max_scorer) a cursor also keeps a shallow position in the skip
// table: block_max_next_geq moves it to the block that would hold a docID without decoding
// anything, and block_max() / block_max_docid() read that block's stored maximum and last docID.
//
//   Cursor c(list, index.codec(), &stats);
//   for (c.next_geq(1000); c.docid() != Cursor::kEnd; c.next()) Use(c.docid(), c.freq());
//
// A cursor also checks what decoding hands it against the lexicon and the skip table, at no extra
// pass: each block's frequencies sum into the list's total, which may not pass cf (less one for
// each posting still undecoded) and must reach it once every block is decoded (else status()
// turns DATA_LOSS, as for a block that does not decode), and a scorer notes each score against the
// decoded block's bound (NoteScore). Such a list was changed after its checksum was computed, or
// written wrong, and pruning by its block maxima is no longer rank-safe.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "filter/bitmap.h"
#include "index/block_codec.h"
#include "index/posting_list.h"
#include "index/query.h"

namespace tandem::cpu {

class Cursor {
 public:
  // Past the last posting. DocIDs are < 2^32 - 1, so the sentinel never collides.
  static constexpr uint32_t kEnd = UINT32_MAX;
  // next_geq compares this many docIDs of the block at once before it searches.
  static constexpr uint32_t kScan = 8;

  // Positions the cursor on the list's first posting. `stats` (may be null) counts decoded
  // postings.
  // postings. `bound_scale` (0: none) turns a block's stored maximum into the bound of the
  // scores its postings may get (decoded_block_bound).
  Cursor(const index::PostingListView& list, const index::BlockCodec& codec,
         index::QueryStats* stats, float bound_scale = 0.0f);

  uint32_t docid() const { return docid_; }
  uint32_t size() const { return list_.num_postings(); }

  // The docID `ahead` postings on within the decoded block, or the current one when the block
  // ends sooner: where a later next() will stand, for prefetching what scoring it will load.
  uint32_t docid_ahead(uint32_t ahead) const {
    return pos_ + ahead < block_len_ ? docs_[pos_ + ahead] : docid_;
  }

  // The current posting's term frequency (>= 1). Only valid while docid() != kEnd.
  uint32_t freq() {
    if (!freqs_loaded_) LoadFreqs();
    return freqs_[pos_];
  }

  void next() {
    if (++pos_ < block_len_) {
      docid_ = docs_[pos_];
    } else {
      LoadBlock(block_ + 1);
    }
    if (filter_ != nullptr) SkipFiltered();
  }

  // Moves to the first posting with docID >= target (no move when already there).
  void next_geq(uint32_t target) {
    if (docid_ >= target) return;  // most calls in AND and MaxScore: no call, no move
    SeekGeq(target);
    if (filter_ != nullptr) SkipFiltered();
  }

  // From now on the cursor stops only at documents `filter` allows (null: all; it must outlive
  // the cursor), jumping to the filter's next document through the skip table, as if the list
  // held no others. A selective filter then keeps an OR's candidates, and so the k-th score, to
  // the allowed documents from the start. Block maxima stay upper bounds of what is left.
  void set_filter(const filter::DenseRows* filter) {
    filter_ = filter;
    if (filter_ != nullptr) SkipFiltered();
  }

  // Moves the shallow position to the first block whose last docID is >= target, never backwards
  // and never behind the decoded block. Decodes nothing.
  void block_max_next_geq(uint32_t target) {
    // Most calls of block-max WAND find the shallow block still holding the target: no call.
    if (shallow_ >= block_ && shallow_ < list_.num_blocks() &&
        list_.last_docid(shallow_) >= target) {
      return;
    }
    ShallowSeek(target);
  }
  // The last docID of the shallow block; kEnd once the shallow position is past the last block.
  uint32_t block_max_docid() const {
    return shallow_ < list_.num_blocks() ? list_.last_docid(shallow_) : kEnd;
  }
  // The stored maximum score contribution in the shallow block (default BM25, weight 1); 0 past
  // the last block.
  float block_max() const {
    return shallow_ < list_.num_blocks() ? list_.block_max(shallow_) : 0.0f;
  }

  // What no posting of the decoded block scores above: its stored maximum times the bound scale
  // (+inf without one).
  float decoded_block_bound() const { return decoded_bound_; }
  // Notes a posting's score against `bound`, the decoded_block_bound() the cursor had on it;
  // without a branch, so the scoring loops keep their registers. scored_above_bound() tells.
  void NoteScore(float score, float bound) { scored_above_bound_ |= score > bound; }
  // Some posting scored above its block's stored maximum: the list is damaged.
  bool scored_above_bound() const { return scored_above_bound_; }

  // Not OK when a block failed to decode (the cursor then sits at kEnd) or its frequencies
  // contradict cf; OK scores above the block maxima show in scored_above_bound().
  const absl::Status& status() const { return status_; }

 private:
  void LoadBlock(uint32_t block);
  void LoadFreqs();
  void SeekGeq(uint32_t target);
  // block_max_next_geq past the shallow block.
  void ShallowSeek(uint32_t target);
  // Moves on to the first allowed document at or after the current one.
  void SkipFiltered() {
    while (docid_ != kEnd) {
      const uint32_t allowed = filter_->NextGeq(docid_);
      if (allowed == docid_) return;
      if (allowed == filter::DenseRows::kEnd) {
        LoadBlock(list_.num_blocks());
        return;
      }
      SeekGeq(allowed);
    }
  }

  index::PostingListView list_;
  const index::BlockCodec* codec_;
  index::QueryStats* stats_;
  float bound_scale_;
  float decoded_bound_ = 0.0f;
  bool scored_above_bound_ = false;
  uint64_t freq_sum_ = 0;       // of the blocks whose frequencies were decoded
  uint32_t freq_postings_ = 0;  // in those blocks
  const filter::DenseRows* filter_ = nullptr;
  uint32_t block_ = 0;
  uint32_t shallow_ = 0;  // block_max_next_geq's block, >= block_ once moved
  uint32_t pos_ = 0;
  uint32_t block_len_ = 0;
  uint32_t block_last_ = 0;  // the decoded block's last docID: no skip-table read per move
  uint32_t docid_ = kEnd;
  bool freqs_loaded_ = false;
  absl::Status status_;
  // kScan past the block, so the compare at the block's end reads inside; zeroed, so every read
  // is of a set value (what lies past block_len_ is ignored).
  uint32_t docs_[index::kBlockSize + kScan] = {};
  uint32_t freqs_[index::kBlockSize];
};

}  // namespace tandem::cpu
