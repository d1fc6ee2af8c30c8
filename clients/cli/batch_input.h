// File: batch_input.h
//
// Reads the queries of `tandem-cli batch`, one per line, in the formats of the common query logs:
//   id<TAB>text      MS MARCO, BEIR queries.tsv
//   id:text          TREC efficiency topics, Million Query ("12:foo bar"); the id has no spaces
//                    and holds a digit, so "re: free money" is text
//   text             anything else; the id is the line number (1-based)
// Blank lines are skipped; a trailing CR (Windows line ends) is dropped.
//
//   std::vector<BatchQuery> queries = ReadBatchQueries(std::cin);
#pragma once

#include <istream>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem::cli {

struct BatchQuery {
  std::string id;
  std::string text;
  friend bool operator==(const BatchQuery&, const BatchQuery&) = default;
};

// One line; `line_number` names queries without an id.
BatchQuery ParseBatchLine(absl::string_view line, size_t line_number);

std::vector<BatchQuery> ReadBatchQueries(std::istream& in);

}  // namespace tandem::cli
