#include "clients/cli/batch_input.h"

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace tandem::cli {

BatchQuery ParseBatchLine(absl::string_view line, size_t line_number) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  const size_t tab = line.find('\t');
  if (tab != absl::string_view::npos) {
    return {std::string(absl::StripAsciiWhitespace(line.substr(0, tab))),
            std::string(line.substr(tab + 1))};
  }
  const size_t colon = line.find(':');
  if (colon != absl::string_view::npos && colon > 0) {
    // Query log ids are numbers or carry one ("701", "q12"); a word before a colon ("re: free
    // money", "http://...") is text.
    const absl::string_view id = line.substr(0, colon);
    bool has_space = false, has_digit = false;
    for (char c : id) {
      has_space |= absl::ascii_isspace(static_cast<unsigned char>(c));
      has_digit |= absl::ascii_isdigit(static_cast<unsigned char>(c));
    }
    if (!has_space && has_digit) return {std::string(id), std::string(line.substr(colon + 1))};
  }
  return {absl::StrCat(line_number), std::string(line)};
}

std::vector<BatchQuery> ReadBatchQueries(std::istream& in) {
  std::vector<BatchQuery> queries;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    queries.push_back(ParseBatchLine(line, n));
  }
  return queries;
}

}  // namespace tandem::cli
