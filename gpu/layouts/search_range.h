// File: search_range.h
//
// How the batch path's threads bound their binary searches in a list (Ao et al. 2011, sections 3.2
// to 3.4; gpu/search_form.h has what each needs), and the hash segmentation's bucket width, which
// HS-LRC (gpu/list_format.h) shares. Plain C++: the engine's public header names it.
//
//   GpuEngineOptions options;
//   options.batch.range = SearchRange::kHash16;
#pragma once

#include <cstdint>
#include <string>

namespace tandem::gpu {

// How a batch's threads bound their binary searches (the paper's Figure 5 and Table 3).
enum class SearchRange : uint32_t {
  kBinary = 0,            // the whole list (BS)
  kLinearRegression = 1,  // LR
  kHash16 = 2,            // HS16
  kHash32 = 3,            // HS32
  kHash256 = 4,           // HS256
};
inline constexpr int kNumSearchRanges = 5;
const char* SearchRangeName(SearchRange range);  // "bs", "lr", "hs16", "hs32", "hs256"

// The names above; "bs", "lr", "hs16", "hs32" or "hs256" parse back (false for anything else).
bool ParseSearchRange(const std::string& name, SearchRange* range);

// The bucket shift of a list of `n` postings over docIDs [0, num_docs) whose buckets hold at most
// `postings_per_bucket` postings on average: the smallest m with n / postings_per_bucket <= 2^m
// buckets, the top m of the docIDs' significant bits.
inline uint32_t HashShift(uint32_t n, uint32_t num_docs, uint32_t postings_per_bucket) {
  uint32_t bits = 0;  // significant bits of the largest docID, num_docs - 1
  while (bits < 32 && (uint64_t{1} << bits) < num_docs) ++bits;
  uint32_t m = 0;
  while (m < bits && (uint64_t{postings_per_bucket} << m) < n) ++m;
  return bits - m;
}

}  // namespace tandem::gpu
