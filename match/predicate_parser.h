// File: predicate_parser.h
//
// The short text form of a predicate, for the CLI and the Python client:
//
//   predicate  := filter ("OR" filter)*
//   filter     := group ("AND" group)*
//   group      := constraint | "(" filter ")"
//   constraint := name op value
//   name       := [A-Za-z_][A-Za-z0-9_.-]*  |  `any UTF-8`
//   op         := = | != | < | > | <= | >= | prefix | substring | contains
//   value      := integer | decimal (1.5, 2e3: a double) | "string" (\" \\ \n \t \r \xHH)
//
// AND binds tighter than OR; keywords and operator words are case-insensitive. A predicate is an
// OR of filters, so parentheses group constraints only (an OR inside parentheses is refused rather
// than expanded). `terms contains "text"` is analyzed later, by NormalizePredicate. A quoted name
// or string must be UTF-8 once unescaped: \xHH escapes may spell a sequence ("caf\xc3\xa9") but not
// a lone byte of one.
//
//   ParsePredicate("(sender = \"enron.com\" AND year >= 2001) OR terms contains \"gas price\"")
#pragma once

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "match/model.h"

namespace tandem::match {

// INVALID_ARGUMENT naming the byte offset and what was expected: an unknown operator, a missing
// value, an unterminated string, a bad escape, a name or string that is not UTF-8, an integer out
// of range, an OR inside parentheses, unbalanced parentheses, trailing text, an empty input.
absl::StatusOr<Predicate> ParsePredicate(absl::string_view text);

}  // namespace tandem::match
