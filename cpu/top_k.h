// File: top_k.h
//
// TopK keeps the k best hits seen so far in a binary heap whose root is the worst kept hit, so a
// candidate is compared once against threshold() and most are rejected without touching the heap.
// Ties are broken by docID (lower wins), which makes the result independent of arrival order.
//
//   TopK top(k);
//   for (...) if (top.WouldEnter(docid, score)) top.Push(docid, score);
//   std::vector<Hit> hits = std::move(top).Finish();  // rank order
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "index/bitmap.h"
#include "index/query.h"

namespace tandem::cpu {

using index::Hit;
using index::RanksBefore;

class TopK {
 public:
  explicit TopK(size_t k) : k_(k) { heap_.reserve(std::min<size_t>(k, 1 << 16)); }
  // Keeps only the documents of `filter` (null: all), which must outlive the TopK.
  TopK(size_t k, const index::DenseRows* filter) : TopK(k) { filter_ = filter; }

  size_t size() const { return heap_.size(); }
  bool full() const { return heap_.size() >= k_; }

  // The score a new hit must reach to have a chance of entering (-inf until full).
  float threshold() const {
    return full() ? heap_.front().score : -std::numeric_limits<float>::infinity();
  }

  bool WouldEnter(uint32_t docid, float score) const {
    if (!full()) return k_ > 0;
    return RanksBefore(Hit{docid, score}, heap_.front());
  }

  void Push(uint32_t docid, float score) {
    // Most candidates are rejected here, without a call.
    if (full() && !RanksBefore(Hit{docid, score}, heap_.front())) return;
    if (filter_ && !filter_->Contains(docid)) return;
    if (!full()) {
      heap_.push_back(Hit{docid, score});
      std::push_heap(heap_.begin(), heap_.end(), RankOrder());
      return;
    }
    std::pop_heap(heap_.begin(), heap_.end(), RankOrder());
    heap_.back() = Hit{docid, score};
    std::push_heap(heap_.begin(), heap_.end(), RankOrder());
  }

  // The kept hits in rank order.
  std::vector<Hit> Finish() && {
    std::sort_heap(heap_.begin(), heap_.end(), RankOrder());
    return std::move(heap_);
  }

 private:
  const index::DenseRows* filter_ = nullptr;
  // RanksBefore as a type, so the heap operations inline it.
  struct RankOrder {
    bool operator()(const Hit& a, const Hit& b) const { return RanksBefore(a, b); }
  };

  size_t k_;
  // Max-heap under RanksBefore: front() is the hit that ranks last.
  std::vector<Hit> heap_;
};

}  // namespace tandem::cpu
