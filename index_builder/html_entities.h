// File: html_entities.h
//
// Character references in SGML and HTML text: numeric ones (&#233; &#xE9;), the HTML named entities
// of Latin-1, Greek and common punctuation, and the SGML entities of TREC's Federal Register.
// Readers decode what they take from markup (Reuters' &lt; and &#3;, WikiExtractor's escaped
// attributes) with DecodeEntities; HtmlToText (markup.h) does so after removing the tags.
//
//   std::string title = DecodeEntities("Batman &amp; Robin");  // "Batman & Robin"
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

// Replaces character references: decimal (&#233;) and hexadecimal (&#xE9;, &#XE9;) ones, the HTML
// named entities of Latin-1 and common punctuation (&amp; &eacute; &mdash; ...), and the SGML
// entities of TREC's Federal Register (&hyph; &blank;). A reference naming no known entity is kept
// as written, so text such as "AT&T;" survives. References to control characters become spaces (see
// SanitizeUtf8), so Reuters' &#2; and &#3; markers do not leak into the index.
std::string DecodeEntities(absl::string_view in);

}  // namespace tandem::index_builder
