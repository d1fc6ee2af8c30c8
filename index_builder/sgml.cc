#include "index_builder/sgml.h"

#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tandem::index_builder {

std::vector<absl::string_view> ElementContents(absl::string_view sgml, absl::string_view tag) {
  std::vector<absl::string_view> contents;
  const std::string open = absl::StrCat("<", tag);
  const std::string close = absl::StrCat("</", tag, ">");
  size_t from = 0;
  while (true) {
    const size_t start = sgml.find(open, from);
    if (start == absl::string_view::npos) break;
    const size_t after_name = start + open.size();
    if (after_name >= sgml.size()) break;
    if (sgml[after_name] != '>' &&
        !absl::ascii_isspace(static_cast<unsigned char>(sgml[after_name]))) {
      from = after_name;  // a longer name such as <DOCNO> when looking for <DOC>
      continue;
    }
    const size_t gt = sgml.find('>', after_name);
    if (gt == absl::string_view::npos) break;
    const size_t end = sgml.find(close, gt + 1);
    if (end == absl::string_view::npos) break;
    contents.push_back(sgml.substr(gt + 1, end - gt - 1));
    from = end + close.size();
  }
  return contents;
}

absl::string_view FirstElementContent(absl::string_view sgml, absl::string_view tag) {
  std::vector<absl::string_view> contents = ElementContents(sgml, tag);
  return contents.empty() ? absl::string_view() : contents.front();
}

absl::string_view AttributeValue(absl::string_view open_tag, absl::string_view name) {
  const auto is_space = [](char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); };
  size_t from = 0;
  while (true) {
    const size_t at = open_tag.find(name, from);
    if (at == absl::string_view::npos) return {};
    from = at + name.size();
    if (at == 0 || !is_space(open_tag[at - 1])) continue;
    size_t i = from;
    while (i < open_tag.size() && is_space(open_tag[i])) ++i;
    if (i >= open_tag.size() || open_tag[i] != '=') continue;
    ++i;
    while (i < open_tag.size() && is_space(open_tag[i])) ++i;
    if (i >= open_tag.size()) return {};
    if (open_tag[i] == '"' || open_tag[i] == '\'') {
      const size_t end = open_tag.find(open_tag[i], i + 1);
      if (end == absl::string_view::npos) return {};
      return open_tag.substr(i + 1, end - i - 1);
    }
    size_t end = i;
    while (end < open_tag.size() && !is_space(open_tag[end]) && open_tag[end] != '>') ++end;
    return open_tag.substr(i, end - i);
  }
}

}  // namespace tandem::index_builder
