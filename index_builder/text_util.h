// File: text_util.h
//
// Text clean-up shared by the document readers. Collections on disk are rarely clean: Reuters-21578
// holds stray Latin-1 bytes and SGML character references (&lt; &#3;), e-mail bodies come in any
// charset, WikiExtractor output keeps HTML remnants (<br>, <ref>). Every reader passes what it extracts
// through these functions so that Document::text is always valid UTF-8 with markup removed.
//
//   std::string body = SanitizeUtf8(raw_bytes);                 // never fails
//   std::string text = DecodeEntities(StripTags(body, TagPolicy::kAnyTag));
#pragma once

#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

// Returns `in` as valid UTF-8. Well-formed UTF-8 sequences are kept; every byte that does not start one is
// read as windows-1252 (the WHATWG Encoding Standard's decoder for "latin1"/"iso-8859-1"), which is what
// stray high bytes in old newswire and e-mail almost always are. C0 control characters other than tab,
// newline and carriage return, and DEL, become spaces: they separate words at most, and a NUL inside
// Document::text would surprise any C API downstream.
std::string SanitizeUtf8(absl::string_view in);

// Appends the UTF-8 encoding of `code_point` to *out; surrogates and values past U+10FFFF become U+FFFD.
void AppendUtf8(char32_t code_point, std::string* out);

// Replaces character references: decimal (&#233;) and hexadecimal (&#xE9;, &#XE9;) ones, the HTML
// named entities of Latin-1 and common punctuation (&amp; &eacute; &mdash; ...), and the SGML
// entities of TREC's Federal Register (&hyph; &blank;). A reference naming no known entity is kept as
// written, so text such as "AT&T;" survives. References to control characters become spaces (see
// SanitizeUtf8), so Reuters' &#2; and &#3; markers do not leak into the index.
std::string DecodeEntities(absl::string_view in);

enum class TagPolicy {
  // Every well-formed tag, comment, declaration and processing instruction goes: for SGML and HTML
  // input, where a literal "<" in text is always written &lt;.
  kAnyTag,
  // Only tags whose name is an HTML or MediaWiki tag (br, ref, div, poem, ...) go: for text such as
  // WikiExtractor output, where "<" is also a literal ("a value <1%", "x<y and y>z").
  kKnownHtmlTags,
};

// Removes markup. The contents of <script> and <style> elements go with their tags. What a removed tag
// leaves follows how a browser renders it: inline tags (b, i, span, font, ...) leave nothing, so
// "<b>H</b>ello" stays one word; block tags (p, br, div, li, tr, headings, ...) leave a newline and
// any other tag (SGML's <DATELINE>, MediaWiki's <ref>) a space, each written only between two
// non-space characters, so "one<br>two" does not become the word "onetwo". A "<" that does not open a
// tag the policy removes is kept as text.
std::string StripTags(absl::string_view in, TagPolicy policy);

// HTML or SGML bytes to indexable text: SanitizeUtf8, StripTags with kAnyTag, DecodeEntities, and
// white space trimmed at both ends.
std::string HtmlToText(absl::string_view html);

// Appends `part` to *text, separated by a newline when both are non-empty. Used to join a title and a
// body the way BEIR's "title + \n + text" convention does.
void AppendParagraph(absl::string_view part, std::string* text);

// Content-Transfer-Encoding decoders for e-mail (RFC 2045). Both are lenient, as mail readers are:
// quoted-printable keeps a "=" that starts no escape as written and drops "=" line breaks ("soft"
// breaks) whether the line ends in LF or CRLF; base64 skips line breaks and any other character
// outside its alphabet and stops at "=" padding.
std::string DecodeQuotedPrintable(absl::string_view in);
std::string DecodeBase64(absl::string_view in);

// `text` with every run of ASCII white space turned into one space and none at either end: stored
// fields such as titles are shown on one line.
std::string CollapseWhitespace(absl::string_view text);

// Contents of every <TAG ...>...</TAG> element inside `sgml`, in order. Tag names match exactly
// (case-sensitively, as SGML collections write them); elements of the same name do not nest.
std::vector<absl::string_view> ElementContents(absl::string_view sgml, absl::string_view tag);

// The first of ElementContents, or an empty view when there is none.
absl::string_view FirstElementContent(absl::string_view sgml, absl::string_view tag);

// Raw value of attribute `name` (matched exactly) in an open tag such as <REUTERS NEWID="5">, quoted
// with " or ' or unquoted; empty when absent. Decode it with DecodeEntities.
absl::string_view AttributeValue(absl::string_view open_tag, absl::string_view name);

}  // namespace tandem::index_builder
