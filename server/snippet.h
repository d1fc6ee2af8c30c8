// File: snippet.h
//
// A snippet of a hit's stored text (indexes built with `tandem-index build --store-text`): the
// window of at most `max_bytes` bytes that holds the most distinct query terms (then the most
// occurrences), widened around them with context and cut at word boundaries, with the byte spans
// of the query terms' tokens inside it. Terms are found with the index's analyzer, so "Bears" and
// "bear's" match the query term "bear". Line breaks and tabs read as spaces. A text without any
// query term gives its beginning, without highlights.
//
//   Snippet s = MakeSnippet(index.analyzer(), text, {"black", "bear"}, 160);
//   // s.text "... a black bear crossed the road ...", s.highlights {{2, 7}, {8, 12}}
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "index/analyzer.h"

namespace tandem::server {

struct Snippet {
  std::string text;
  // [begin, end) byte offsets into `text`, in order, not overlapping.
  std::vector<std::pair<size_t, size_t>> highlights;
  // Whether `text` starts after the beginning of the stored text, or ends before its end.
  bool starts_inside = false;
  bool ends_inside = false;
};

Snippet MakeSnippet(const index::Analyzer& analyzer, absl::string_view text,
                    const std::vector<std::string>& query_terms, size_t max_bytes);

}  // namespace tandem::server
