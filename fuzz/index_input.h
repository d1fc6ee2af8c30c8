// File: index_input.h
//
// The input layout of index_reader_fuzzer: an index's four payloads (manifest, lexicon, postings,
// document table, in that order; index/FORMAT.md) joined by kPayloadSeparator. Splitting never
// fails: missing payloads are empty, and a separator inside a payload only moves the cut. The seed
// corpus generator joins real payloads the same way.
#pragma once

#include <array>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"

namespace tandem::fuzz {

inline constexpr absl::string_view kPayloadSeparator = "\n--tandem-index-payload--\n";

inline std::array<absl::string_view, 4> SplitPayloads(absl::string_view input) {
  std::array<absl::string_view, 4> parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    const size_t cut = i + 1 < parts.size() ? input.find(kPayloadSeparator) : input.npos;
    if (cut == input.npos) {
      parts[i] = input;
      break;
    }
    parts[i] = input.substr(0, cut);
    input.remove_prefix(cut + kPayloadSeparator.size());
  }
  return parts;
}

inline std::string JoinPayloads(const std::array<absl::string_view, 4>& parts) {
  return absl::StrJoin(parts, kPayloadSeparator);
}

}  // namespace tandem::fuzz
