// File: query_file.h
//
// Query files, as the TREC tracks and their successors ship them, read into (id, text) records for
// the load generator and the evaluation tools. One query per line, in one of these layouts:
//
//   kColon          "301:international organized crime"         (TREC topics, Terabyte efficiency)
//   kColonPriority  "20001:1:obama family tree"                 (Million Query 2009)
//   kTsv            "1048585<TAB>what is paula deen's brother"  (MS MARCO, BEIR queries.tsv)
//   kPlain          "obama family tree"                         (id = 1-based line number)
//
// kAuto picks, per file, the first layout that every non-blank line fits, in the order kTsv,
// kColonPriority, kColon, kPlain; an id is a run of letters, digits, '_', '-' and '.'. A file that
// reads as kColon but has lines that also fit kColonPriority (Million Query 2007-2009 mixes
// "id:query" and "id:priority:query") has the priority removed from those lines.
//
// Text comes out as UTF-8: a line that is not valid UTF-8 is read as ISO-8859-1, the encoding of
// the older TREC query sets. A UTF-8 byte-order mark, the line ending (LF or CRLF) and white space
// around id and text are removed; blank lines are skipped.
//
//   TANDEM_ASSIGN_OR_RETURN(std::vector<QueryRecord> queries, LoadQueryFile("topics.701-850.txt"));
//   for (const QueryRecord& q : queries) Run(q.id, q.text);
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::workload {

struct QueryRecord {
  std::string id;
  std::string text;  // UTF-8; may be empty when the file has an id with no query
};

enum class QueryFileFormat { kAuto, kColon, kColonPriority, kTsv, kPlain };

// Reads `path`. Fails with NOT_FOUND / PERMISSION_DENIED etc. when the file cannot be read, and
// with INVALID_ARGUMENT ("path:line: ...") when a line does not fit an explicitly requested format.
absl::StatusOr<std::vector<QueryRecord>> LoadQueryFile(
    const std::string& path, QueryFileFormat format = QueryFileFormat::kAuto);

// Parses the contents of a query file; `source` names it in error messages.
absl::StatusOr<std::vector<QueryRecord>> ParseQueries(absl::string_view contents,
                                                      QueryFileFormat format,
                                                      absl::string_view source = "<queries>");

// "auto", "colon", "colon-priority", "tsv", "plain".
absl::StatusOr<QueryFileFormat> ParseQueryFileFormat(absl::string_view name);
absl::string_view QueryFileFormatName(QueryFileFormat format);

// `line` as UTF-8: unchanged when it is valid UTF-8, otherwise each byte read as ISO-8859-1.
std::string ToUtf8(absl::string_view line);

}  // namespace tandem::workload
