// File: sgml.h
//
// Scanning SGML text already in memory: the elements of one document (TREC's <TEXT> and <HEADLINE>,
// Reuters' <TITLE> and <BODY>) and the attributes of an open tag. Matching is exact, as SGML
// collections write their tags (<DOC> is not <doc>), and no DTD is read: elements of the same name
// do not nest. Whole files are streamed element by element by ElementScanner (readers_internal.h).
//
//   for (absl::string_view text : ElementContents(sgml, "TEXT")) AppendParagraph(text, &body);
//   absl::string_view id = AttributeValue("<REUTERS NEWID=\"5\">", "NEWID");  // "5"
#pragma once

#include <vector>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

// Contents of every <TAG ...>...</TAG> element inside `sgml`, in order. Tag names match exactly
// (case-sensitively, as SGML collections write them); elements of the same name do not nest.
std::vector<absl::string_view> ElementContents(absl::string_view sgml, absl::string_view tag);

// The first of ElementContents, or an empty view when there is none.
absl::string_view FirstElementContent(absl::string_view sgml, absl::string_view tag);

// Raw value of attribute `name` (matched exactly) in an open tag such as <REUTERS NEWID="5">,
// quoted with " or ' or unquoted; empty when absent. Decode it with DecodeEntities.
absl::string_view AttributeValue(absl::string_view open_tag, absl::string_view name);

}  // namespace tandem::index_builder
