// File: reader_attributes.h
//
// Filling Document::attributes, for the readers: one value cleaned up the way every attribute is,
// and the short metadata elements of an SGML document (TREC's <DATE> or <SO>), found by their tags
// when the fields are the data's own.
//
//   AddAttribute("lewissplit", absl::AsciiStrToLower(split), doc);
//   AddElementAttributes(inside_doc, &IsIndexedTrecElement, doc);
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "index_builder/document_reader.h"

namespace tandem::index_builder::internal {

// Appends (name, value) to doc->attributes, the value as valid UTF-8 (SanitizeUtf8) with its
// white space collapsed (CollapseWhitespace); nothing when that leaves it empty or longer than
// `max_bytes`.
void AddAttribute(absl::string_view name, absl::string_view value, Document* doc,
                  size_t max_bytes = SIZE_MAX);

// Adds an attribute for each element <TAG ...>value</TAG> at the top level of `sgml` (inside no
// other element) that `skip` does not reject: named by TAG in lower case, valued by its text
// (tags removed, references decoded, HtmlToText), when that is one line of at most
// kMaxAttributeValueBytes. A tag without its close tag (<br>, a literal "x<y") is no element.
// `skip` sees the tag as written.
void AddElementAttributes(absl::string_view sgml, bool (*skip)(absl::string_view tag),
                          Document* doc);

}  // namespace tandem::index_builder::internal
