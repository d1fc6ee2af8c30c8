// File: top_k.h
//
// TopK keeps the k best hits seen so far in a binary heap whose root is the worst kept hit, so a
// candidate is compared once against threshold() and most are rejected without touching the heap.
// Ties are broken by docID (lower wins), which makes the result independent of arrival order.
//
// A hit is kept as one 64-bit key that orders as index::RanksBefore does: the score's bits, made
// monotonic, above the docID's complement. The heap and the final sort then compare integers, one
// compare where RanksBefore takes two float compares and a docID compare: at k = 1,000 the heap
// and the final sort were over half of a short query's time.
//
//   TopK top(k);
//   for (...) if (top.WouldEnter(docid, score)) top.Push(docid, score);
//   std::vector<Hit> hits = std::move(top).Finish();  // rank order
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include "filter/bitmap.h"
#include "index/query.h"

namespace tandem::cpu {

using index::Hit;
using index::RanksBefore;

class TopK {
 public:
  explicit TopK(size_t k) : k_(k) { heap_.reserve(std::min<size_t>(k, 1 << 16)); }
  // Keeps only the documents of `filter` (null: all), which must outlive the TopK.
  TopK(size_t k, const filter::DenseRows* filter) : TopK(k) { filter_ = filter; }

  size_t size() const { return heap_.size(); }
  bool full() const { return heap_.size() >= k_; }

  // The score a new hit must reach to have a chance of entering (-inf until full; +inf for k 0).
  float threshold() const {
    if (!full()) return -std::numeric_limits<float>::infinity();
    return heap_.empty() ? std::numeric_limits<float>::infinity() : ScoreOf(heap_.front());
  }

  bool WouldEnter(uint32_t docid, float score) const {
    if (!full()) return true;
    return !heap_.empty() && KeyOf(docid, score) > heap_.front();
  }

  // `score` must not be NaN (engines' scores are finite).
  void Push(uint32_t docid, float score) {
    const uint64_t key = KeyOf(docid, score);
    // Most candidates are rejected here, inline. (An empty full heap: k is 0.)
    if (full() && (heap_.empty() || key <= heap_.front())) return;
    Insert(docid, key);
  }

  // The kept hits in rank order.
  std::vector<Hit> Finish() && {
    std::sort(heap_.begin(), heap_.end(), std::greater<uint64_t>());
    std::vector<Hit> hits(heap_.size());
    for (size_t i = 0; i < heap_.size(); ++i) {
      hits[i] = Hit{~static_cast<uint32_t>(heap_[i]), ScoreOf(heap_[i])};
    }
    return hits;
  }

  // The key of a hit: a > b exactly when RanksBefore(a, b). Floats' bits order as their values
  // once a negative one has all its bits flipped and a positive one its sign bit; adding 0 first
  // makes -0 the +0 that RanksBefore takes it for.
  static uint64_t KeyOf(uint32_t docid, float score) {
    const uint32_t bits = std::bit_cast<uint32_t>(score + 0.0f);
    const uint32_t ordered =
        bits ^ (static_cast<uint32_t>(static_cast<int32_t>(bits) >> 31) | 0x80000000u);
    return static_cast<uint64_t>(ordered) << 32 | ~docid;
  }
  static float ScoreOf(uint64_t key) {
    const uint32_t ordered = static_cast<uint32_t>(key >> 32);
    const uint32_t bits = ordered ^ ((ordered & 0x80000000u) ? 0x80000000u : 0xffffffffu);
    return std::bit_cast<float>(bits);
  }

 private:
  // Push's rare part, kept out of line so that the rejection above inlines into every loop.
  __attribute__((noinline)) void Insert(uint32_t docid, uint64_t key) {
    if (filter_ && !filter_->Contains(docid)) return;
    if (full()) {
      ReplaceFront(key);
    } else {
      heap_.push_back(key);
      std::push_heap(heap_.begin(), heap_.end(), std::greater<uint64_t>());
    }
  }

  // Replaces the worst kept hit by `key`, which ranks above it, and sifts it down: one pass from
  // the root, where pop_heap then push_heap make two. Keys are distinct (their docIDs are).
  void ReplaceFront(uint64_t key) {
    const size_t n = heap_.size();
    uint64_t* const h = heap_.data();
    size_t i = 0;
    for (size_t child = 1; child < n; child = 2 * i + 1) {
      if (child + 1 < n && h[child + 1] < h[child]) ++child;
      if (key < h[child]) break;
      h[i] = h[child];
      i = child;
    }
    h[i] = key;
  }

  const filter::DenseRows* filter_ = nullptr;
  size_t k_;
  // Min-heap of keys: front() is the hit that ranks last.
  std::vector<uint64_t> heap_;
};

}  // namespace tandem::cpu
