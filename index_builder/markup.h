// File: markup.h
//
// Removing markup from the text the readers index: SGML collections (TREC, Reuters) and HTML mail
// lose every tag, WikiExtractor output keeps its literal "<" and loses only HTML and MediaWiki
// remnants (<br>, <ref>, <poem>). A removed tag leaves a space or a newline where a browser would
// break the text, so words on either side stay apart.
//
//   std::string text = HtmlToText("<p>caf\xe9 &amp; bar</p>");  // "café & bar"
//   std::string body = StripTags("a <1%<br>b", TagPolicy::kKnownHtmlTags);  // "a <1%\nb"
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

enum class TagPolicy {
  // Every well-formed tag, comment, declaration and processing instruction goes: for SGML and HTML
  // input, where a literal "<" in text is always written &lt;.
  kAnyTag,
  // Only tags whose name is an HTML or MediaWiki tag (br, ref, div, poem, ...) go: for text such as
  // WikiExtractor output, where "<" is also a literal ("a value <1%", "x<y and y>z").
  kKnownHtmlTags,
};

// Removes markup. The contents of <script> and <style> elements go with their tags. What a removed
// tag leaves follows how a browser renders it: inline tags (b, i, span, font, ...) leave nothing,
// so "<b>H</b>ello" stays one word; block tags (p, br, div, li, tr, headings, ...) leave a newline
// and any other tag (SGML's <DATELINE>, MediaWiki's <ref>) a space, each written only between two
// non-space characters, so "one<br>two" does not become the word "onetwo". A "<" that does not open
// a tag the policy removes is kept as text.
std::string StripTags(absl::string_view in, TagPolicy policy);

// Whether `name` (any case) is an HTML tag or one MediaWiki leaves in WikiExtractor output: what
// TagPolicy::kKnownHtmlTags removes.
bool IsKnownHtmlTag(absl::string_view name);

// HTML or SGML bytes to indexable text: SanitizeUtf8, StripTags with kAnyTag, DecodeEntities, and
// white space trimmed at both ends.
std::string HtmlToText(absl::string_view html);

}  // namespace tandem::index_builder
