#include "server/snippet.h"

#include <algorithm>
#include <set>

#include "absl/container/flat_hash_set.h"

namespace tandem::server {
namespace {

bool IsContinuationByte(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }
bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// The first position at or after `at` (up to `limit`) that starts a word: after a space, or `at`
// itself when it already does; never inside a UTF-8 sequence.
size_t ForwardToWordStart(absl::string_view text, size_t at, size_t limit) {
  if (at == 0) return 0;
  for (size_t i = at; i < limit; ++i) {
    if (IsSpace(text[i - 1]) && !IsSpace(text[i])) return i;
  }
  while (at < text.size() && IsContinuationByte(text[at])) ++at;
  return at;
}

// The last position at or before `at` (down to `floor`) that ends a word, on a UTF-8 boundary.
size_t BackToWordEnd(absl::string_view text, size_t at, size_t floor) {
  if (at >= text.size()) return text.size();
  for (size_t i = at; i > floor; --i) {
    if (IsSpace(text[i]) && !IsSpace(text[i - 1])) return i;
  }
  while (at > floor && IsContinuationByte(text[at])) --at;
  return at;
}

}  // namespace

Snippet MakeSnippet(const index::Analyzer& analyzer, absl::string_view text,
                    const std::vector<std::string>& query_terms, size_t max_bytes) {
  Snippet snippet;
  if (text.empty() || max_bytes == 0) return snippet;
  const absl::flat_hash_set<std::string> wanted(query_terms.begin(), query_terms.end());
  std::vector<index::Analyzer::TermSpan> spans;
  analyzer.AnalyzeWithOffsets(text, &spans);
  std::vector<index::Analyzer::TermSpan> hits;
  for (index::Analyzer::TermSpan& span : spans) {
    if (wanted.contains(span.term)) hits.push_back(std::move(span));
  }

  // The window of hits [best, best_end) with the most distinct terms, then the most hits, that
  // fits in max_bytes.
  size_t best = 0, best_end = 0, best_distinct = 0;
  for (size_t i = 0, j = 0; i < hits.size(); ++i) {
    j = std::max(j, i);
    while (j < hits.size() && hits[j].end - hits[i].begin <= max_bytes) ++j;
    std::set<absl::string_view> distinct;
    for (size_t k = i; k < j; ++k) distinct.insert(hits[k].term);
    if (distinct.size() > best_distinct ||
        (distinct.size() == best_distinct && j - i > best_end - best)) {
      best = i;
      best_end = j;
      best_distinct = distinct.size();
    }
  }

  size_t begin = 0, end = std::min(text.size(), max_bytes);
  if (best_end > best) {
    // Context shared before and after the window's hits.
    const size_t first = hits[best].begin, last = hits[best_end - 1].end;
    const size_t slack = max_bytes - (last - first);
    begin = first > slack / 2 ? first - slack / 2 : 0;
    end = std::min(text.size(), begin + max_bytes);
    if (end == text.size()) begin = end > max_bytes ? end - max_bytes : 0;
    begin = ForwardToWordStart(text, begin, first);
    end = std::max(BackToWordEnd(text, end, last), last);
  } else {
    end = BackToWordEnd(text, end, 0);
    if (end == 0) end = std::min(text.size(), max_bytes);
    while (end < text.size() && end > 0 && IsContinuationByte(text[end])) --end;
  }
  snippet.text = std::string(text.substr(begin, end - begin));
  for (char& c : snippet.text) {
    if (c == '\n' || c == '\r' || c == '\t') c = ' ';
  }
  for (const index::Analyzer::TermSpan& hit : hits) {
    if (hit.begin >= begin && hit.end <= end) {
      snippet.highlights.emplace_back(hit.begin - begin, hit.end - begin);
    }
  }
  snippet.starts_inside = begin > 0;
  snippet.ends_inside = end < text.size();
  return snippet;
}

}  // namespace tandem::server
