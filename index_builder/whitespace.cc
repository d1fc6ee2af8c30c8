#include "index_builder/whitespace.h"

#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tandem::index_builder {

void AppendParagraph(absl::string_view part, std::string* text) {
  if (part.empty()) return;
  if (!text->empty()) text->push_back('\n');
  absl::StrAppend(text, part);
}

std::string CollapseWhitespace(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (const char c : text) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

}  // namespace tandem::index_builder
