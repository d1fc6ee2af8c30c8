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
#include <string_view>

namespace tandem::index_builder {

// Returns `in` as valid UTF-8. Well-formed UTF-8 sequences are kept; every byte that does not start one is
// read as windows-1252 (the WHATWG Encoding Standard's decoder for "latin1"/"iso-8859-1"), which is what
// stray high bytes in old newswire and e-mail almost always are. C0 control characters other than tab,
// newline and carriage return, and DEL, become spaces: they separate words at most, and a NUL inside
// Document::text would surprise any C API downstream.
std::string SanitizeUtf8(std::string_view in);

// Appends the UTF-8 encoding of `code_point` to *out; surrogates and values past U+10FFFF become U+FFFD.
void AppendUtf8(char32_t code_point, std::string* out);

// Replaces character references: decimal (&#233;) and hexadecimal (&#xE9;, &#XE9;) ones, the HTML
// named entities of Latin-1 and common punctuation (&amp; &eacute; &mdash; ...), and the SGML
// entities of TREC's Federal Register (&hyph; &blank;). A reference naming no known entity is kept as
// written, so text such as "AT&T;" survives. References to control characters become spaces (see
// SanitizeUtf8), so Reuters' &#2; and &#3; markers do not leak into the index.
std::string DecodeEntities(std::string_view in);

enum class TagPolicy {
  // Every well-formed tag, comment, declaration and processing instruction goes: for SGML and HTML
  // input, where a literal "<" in text is always written &lt;.
  kAnyTag,
  // Only tags whose name is an HTML or MediaWiki tag (br, ref, div, poem, ...) go: for text such as
  // WikiExtractor output, where "<" is also a literal ("a value <1%", "x<y and y>z").
  kKnownHtmlTags,
};

// Removes markup. The contents of <script> and <style> elements go with their tags. A removed tag that
// separates blocks (p, br, div, li, tr, headings, ...) leaves a newline, any other tag a space when it
// sits between two non-space characters, so "one<br>two" does not become the word "onetwo". A "<" that
// does not open a tag the policy removes is kept as text.
std::string StripTags(std::string_view in, TagPolicy policy);

// HTML to indexable text: StripTags with kAnyTag, then DecodeEntities.
std::string HtmlToText(std::string_view html);

// Appends `part` to *text, separated by a newline when both are non-empty. Used to join a title and a
// body the way BEIR's "title + \n + text" convention does.
void AppendParagraph(std::string_view part, std::string* text);

}  // namespace tandem::index_builder
