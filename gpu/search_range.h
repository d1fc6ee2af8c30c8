// File: search_range.h
//
// How the batch path's threads bound their binary searches in a list (Ao et al. 2011, sections 3.2
// to 3.4; gpu/search_form.h has what each needs). Plain C++: the engine's public header names it.
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

}  // namespace tandem::gpu
