#include "cpu/cursor.h"

#include <algorithm>
#include <bit>
#include <limits>

#include "absl/strings/str_format.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tandem::cpu {

Cursor::Cursor(const index::PostingListView& list, const index::BlockCodec& codec,
               index::QueryStats* stats, float bound_scale)
    : list_(list), codec_(&codec), stats_(stats), bound_scale_(bound_scale) {
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
  block_last_ = docs_[block_len_ - 1];
  decoded_bound_ = bound_scale_ > 0.0f ? list_.block_max(block) * bound_scale_
                                       : std::numeric_limits<float>::infinity();
}

void Cursor::LoadFreqs() {
  absl::Status s = list_.DecodeFreqs(*codec_, block_, freqs_);
  freqs_loaded_ = true;
  if (!s.ok()) {
    status_ = std::move(s);
    std::fill(freqs_, freqs_ + index::kBlockSize, 1u);
    return;
  }
  // Every frequency is at least 1, so the blocks still undecoded hold at least one each: the sum
  // so far may not pass cf less those, and all blocks must sum to cf exactly.
  uint64_t sum = 0;
  for (uint32_t i = 0; i < block_len_; ++i) sum += freqs_[i];
  freq_sum_ += sum;
  freq_postings_ += block_len_;
  const uint64_t rest = list_.num_postings() - freq_postings_;
  if (freq_sum_ + rest > list_.cf() || (rest == 0 && freq_sum_ != list_.cf())) {
    if (!status_.ok()) return;
    status_ = absl::DataLossError(
        rest == 0 ? absl::StrFormat("block %d: the frequencies sum to %d, the lexicon's cf is %d",
                                    block_, freq_sum_, list_.cf())
                  : absl::StrFormat("block %d: the frequencies decoded so far sum to %d, past the "
                                    "lexicon's cf %d",
                                    block_, freq_sum_, list_.cf()));
  }
}

namespace {

// The first block in [from, n) whose last docID is >= target, or n: gallop over the blocks' last
// docIDs, then binary search the bracket, which is cheap for both short and long jumps.
uint32_t FindBlock(const uint32_t* last_docids, uint32_t n, uint32_t from, uint32_t target) {
  uint32_t lo = from;
  uint32_t step = 1;
  uint32_t hi = lo;
  while (hi < n && last_docids[hi] < target) {
    lo = hi + 1;
    hi = lo + step;
    step *= 2;
  }
  hi = std::min(hi, n);
  return static_cast<uint32_t>(std::lower_bound(last_docids + lo, last_docids + hi, target) -
                               last_docids);
}

// How many of p[0..valid) are below target, valid <= kScan; p[0..kScan) must be readable (the
// entries past `valid` are ignored). p is sorted, so this is where the target would go.
uint32_t CountBelow(const uint32_t* p, uint32_t target, uint32_t valid) {
  static_assert(Cursor::kScan == 8);
#if defined(__SSE2__)
  // Unsigned compares as signed ones on biased values (SSE2 has only the signed compare).
  const __m128i bias = _mm_set1_epi32(INT32_MIN);
  const __m128i t = _mm_xor_si128(_mm_set1_epi32(static_cast<int32_t>(target)), bias);
  const __m128i lo = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)), bias);
  const __m128i hi = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4)), bias);
  const uint32_t mask =
      static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(lo, t)))) |
      static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmplt_epi32(hi, t)))) << 4;
  // p is sorted, so the lanes below the target are a prefix: count them by the first lane that
  // is not (bsf, where std::popcount without -mpopcnt is a call into libgcc).
  return static_cast<uint32_t>(std::countr_one(mask & ((1u << valid) - 1)));
#else
  uint32_t n = 0;
  for (uint32_t j = 0; j < valid; ++j) n += p[j] < target;
  return n;
#endif
}

}  // namespace

void Cursor::ShallowSeek(uint32_t target) {
  const uint32_t n = list_.num_blocks();
  if (shallow_ < block_) shallow_ = block_;
  if (shallow_ >= n || list_.last_docid(shallow_) >= target) return;
  shallow_ = FindBlock(list_.last_docids(), n, shallow_ + 1, target);
}

void Cursor::SeekGeq(uint32_t target) {
  if (docid_ >= target) return;  // also covers kEnd
  if (block_last_ < target) {
    // Start from the shallow position when every block before it ends below the target.
    const uint32_t n = list_.num_blocks();
    uint32_t from = block_ + 1;
    if (shallow_ > from && shallow_ <= n && list_.last_docid(shallow_ - 1) < target) {
      from = shallow_;
    }
    LoadBlock(FindBlock(list_.last_docids(), n, from, target));
    if (docid_ >= target) return;
  }
  // The target lies in the current block: most moves are short (a candidate of a shorter list
  // lands a few postings on), so count the next kScan docIDs below it, without a branch per
  // posting, before searching the rest.
  uint32_t i = pos_ + 1;
  const uint32_t valid = std::min<uint32_t>(kScan, block_len_ - i);
  const uint32_t below = CountBelow(docs_ + i, target, valid);
  i += below;
  if (below == kScan && i < block_len_) {
    i = static_cast<uint32_t>(std::lower_bound(docs_ + i, docs_ + block_len_, target) - docs_);
  }
  pos_ = i;
  if (pos_ < block_len_) {
    docid_ = docs_[pos_];
  } else {
    // Only reachable when the skip table disagrees with its block; stay correct anyway.
    LoadBlock(block_ + 1);
    SeekGeq(target);
  }
}

}  // namespace tandem::cpu
