#include "cpu/cursor.h"

#include <algorithm>

namespace tandem::cpu {

Cursor::Cursor(const index::PostingListView& list, const index::BlockCodec& codec,
               index::QueryStats* stats)
    : list_(list), codec_(&codec), stats_(stats) {
  LoadBlock(0);
}

void Cursor::LoadBlock(uint32_t block) {
  freqs_loaded_ = false;
  pos_ = 0;
  if (block >= list_.num_blocks()) {
    block_ = list_.num_blocks();
    block_len_ = 0;
    docid_ = kEnd;
    return;
  }
  block_ = block;
  block_len_ = list_.block_postings(block);
  absl::Status s = list_.DecodeDocids(*codec_, block, docs_);
  if (!s.ok()) {
    status_ = std::move(s);
    block_ = list_.num_blocks();
    block_len_ = 0;
    docid_ = kEnd;
    return;
  }
  if (stats_ != nullptr) {
    stats_->postings_decoded += block_len_;
    stats_->blocks_decoded += 1;
  }
  docid_ = docs_[0];
}

void Cursor::LoadFreqs() {
  absl::Status s = list_.DecodeFreqs(*codec_, block_, freqs_);
  if (!s.ok()) {
    status_ = std::move(s);
    std::fill(freqs_, freqs_ + index::kBlockSize, 1u);
  }
  freqs_loaded_ = true;
}

namespace {

// The first block in [from, n) whose last docID is >= target, or n: gallop over the skip table,
// then binary search the bracket, which is cheap for both short and long jumps.
uint32_t FindBlock(const index::SkipEntry* skips, uint32_t n, uint32_t from, uint32_t target) {
  uint32_t lo = from;
  uint32_t step = 1;
  uint32_t hi = lo;
  while (hi < n && skips[hi].last_docid < target) {
    lo = hi + 1;
    hi = lo + step;
    step *= 2;
  }
  hi = std::min(hi, n);
  const index::SkipEntry* found =
      std::lower_bound(skips + lo, skips + hi, target,
                       [](const index::SkipEntry& s, uint32_t t) { return s.last_docid < t; });
  return static_cast<uint32_t>(found - skips);
}

}  // namespace

void Cursor::block_max_next_geq(uint32_t target) {
  const uint32_t n = list_.num_blocks();
  if (shallow_ < block_) shallow_ = block_;
  if (shallow_ >= n || list_.skip(shallow_).last_docid >= target) return;
  shallow_ = FindBlock(list_.skips(), n, shallow_ + 1, target);
}

void Cursor::SeekGeq(uint32_t target) {
  if (docid_ >= target) return;  // also covers kEnd
  if (list_.skip(block_).last_docid < target) {
    // Start from the shallow position when every block before it ends below the target.
    const uint32_t n = list_.num_blocks();
    uint32_t from = block_ + 1;
    if (shallow_ > from && shallow_ <= n && list_.skip(shallow_ - 1).last_docid < target) {
      from = shallow_;
    }
    LoadBlock(FindBlock(list_.skips(), n, from, target));
    if (docid_ >= target) return;
  }
  // The target lies in the current block: most moves are short (a candidate of a shorter list
  // lands a few postings on), so scan a few before searching the rest.
  uint32_t i = pos_ + 1;
  const uint32_t scan_end = std::min(block_len_, pos_ + 9);
  while (i < scan_end && docs_[i] < target) ++i;
  if (i == scan_end && i < block_len_) {
    i = static_cast<uint32_t>(std::lower_bound(docs_ + i, docs_ + block_len_, target) - docs_);
  }
  pos_ = i;
  if (pos_ < block_len_) {
    docid_ = docs_[pos_];
  } else {
    // Only reachable when a skip entry disagrees with its block; stay correct anyway.
    LoadBlock(block_ + 1);
    SeekGeq(target);
  }
}

}  // namespace tandem::cpu
