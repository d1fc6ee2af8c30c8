// File: match_input.h
//
// Reads the documents of `tandem-cli match`, one JSON object per line:
//   {"id": "m1", "text": "gas prices rise", "attributes": {"year": 2001, "domain": "enron.com",
//    "score": 0.5}}
// Numbers keep the form they are written in: 2001 is an int64, 0.5 and 2e3 are doubles. "id" is a
// string or an integer (the line number when absent); "text" and "attributes" are optional. Blank
// lines are skipped; anything else that is not such an object stops the read, naming its line.
//
//   TANDEM_ASSIGN_OR_RETURN(std::vector<tandem::v1::Document> documents, ReadDocuments(std::cin));
#pragma once

#include <istream>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "tandem/v1/subscription.pb.h"

namespace tandem::cli {

// One line; `line_number` names it in errors and is the id of a document without one.
// INVALID_ARGUMENT ("line 3: attribute \"year\": must be a number or a string").
absl::StatusOr<tandem::v1::Document> ParseDocumentLine(absl::string_view line, size_t line_number);

absl::StatusOr<std::vector<tandem::v1::Document>> ReadDocuments(std::istream& in);

}  // namespace tandem::cli
