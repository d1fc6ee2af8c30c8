#include "index_builder/reader_attributes.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "index_builder/markup.h"
#include "index_builder/utf8.h"
#include "index_builder/whitespace.h"

namespace tandem::index_builder::internal {
namespace {

// SGML name characters, as the collections use them (<DOCNO>, <F P=100>, <DATE1>).
bool IsNameStart(char c) { return absl::ascii_isalpha(static_cast<unsigned char>(c)); }
bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
         c == ':';
}

}  // namespace

void AddAttribute(absl::string_view name, absl::string_view value, Document* doc,
                  size_t max_bytes) {
  std::string clean = CollapseWhitespace(SanitizeUtf8(value));
  if (clean.empty() || clean.size() > max_bytes) return;
  doc->attributes.emplace_back(std::string(name), std::move(clean));
}

void AddElementAttributes(absl::string_view sgml, bool (*skip)(absl::string_view tag),
                          Document* doc) {
  // Close tags not found after some position are not found after any later one. Remembering them
  // keeps a body with many <br> linear, and bounding how many are looked for keeps one with
  // thousands of different unclosed tags so.
  constexpr size_t kMaxUnclosedTags = 256;
  std::vector<std::string> unclosed;
  size_t pos = 0;
  while (pos < sgml.size()) {
    const size_t lt = sgml.find('<', pos);
    if (lt == absl::string_view::npos) return;
    size_t name_end = lt + 1;
    if (name_end >= sgml.size() || !IsNameStart(sgml[name_end])) {
      pos = lt + 1;  // a close tag, a comment, a declaration, or a literal "<"
      continue;
    }
    while (name_end < sgml.size() && IsNameChar(sgml[name_end])) ++name_end;
    const absl::string_view tag = sgml.substr(lt + 1, name_end - lt - 1);
    if (name_end < sgml.size() && sgml[name_end] != '>' && sgml[name_end] != '/' &&
        !absl::ascii_isspace(static_cast<unsigned char>(sgml[name_end]))) {
      pos = name_end;  // "<a+b": no tag
      continue;
    }
    const size_t gt = sgml.find('>', name_end);
    if (gt == absl::string_view::npos) return;
    if (sgml[gt - 1] == '/') {  // <empty/>
      pos = gt + 1;
      continue;
    }
    std::string close = absl::StrCat("</", tag, ">");
    const bool known_unclosed =
        std::find(unclosed.begin(), unclosed.end(), close) != unclosed.end();
    const size_t end = known_unclosed ? absl::string_view::npos : sgml.find(close, gt + 1);
    if (end == absl::string_view::npos) {
      pos = gt + 1;  // no element: an open tag alone
      if (known_unclosed) continue;
      if (unclosed.size() == kMaxUnclosedTags) return;
      unclosed.push_back(std::move(close));
      continue;
    }
    pos = end + close.size();
    if (skip != nullptr && skip(tag)) continue;
    const std::string text = HtmlToText(sgml.substr(gt + 1, end - gt - 1));
    if (text.find('\n') != std::string::npos) continue;  // a block (<DOCHDR>), not a value
    AddAttribute(absl::AsciiStrToLower(tag), text, doc, kMaxAttributeValueBytes);
  }
}

}  // namespace tandem::index_builder::internal
