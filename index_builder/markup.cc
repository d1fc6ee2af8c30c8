#include "index_builder/markup.h"

#include <string>
#include <unordered_set>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/string_view.h"
#include "index_builder/html_entities.h"
#include "index_builder/utf8.h"

namespace tandem::index_builder {
namespace {

// Tags that browsers render without a break: removing them must not split a word ("<b>H</b>ello").
bool IsInlineTag(const std::string& lower_name) {
  static const auto* tags = new std::unordered_set<std::string>{
      "a",    "abbr",   "acronym", "b",   "bdi",  "bdo",  "big", "cite", "code", "dfn",
      "em",   "font",   "i",       "kbd", "mark", "nobr", "q",   "s",    "samp", "small",
      "span", "strike", "strong",  "sub", "sup",  "tt",   "u",   "var",  "wbr"};
  return tags->contains(lower_name);
}

// Tags that end a line of rendered text.
bool IsBlockTag(const std::string& lower_name) {
  static const auto* tags = new std::unordered_set<std::string>{
      "address", "article", "aside", "blockquote", "body",   "br",      "caption", "center", "dd",
      "div",     "dl",      "dt",    "figcaption", "figure", "footer",  "form",    "h1",     "h2",
      "h3",      "h4",      "h5",    "h6",         "head",   "header",  "hr",      "html",   "li",
      "main",    "nav",     "ol",    "p",          "pre",    "section", "table",   "tbody",  "td",
      "tfoot",   "th",      "thead", "title",      "tr",     "ul"};
  return tags->contains(lower_name);
}

// HTML tags plus the extension tags MediaWiki leaves in WikiExtractor output.
bool IsKnownLowerCaseTag(const std::string& lower_name) {
  static const auto* tags = new std::unordered_set<std::string>{
      "area",         "audio",       "base",     "basefont",    "blink",    "button",
      "chem",         "col",         "colgroup", "del",         "details",  "dir",
      "embed",        "fieldset",    "frame",    "frameset",    "gallery",  "hiero",
      "iframe",       "imagemap",    "img",      "includeonly", "input",    "ins",
      "label",        "legend",      "link",     "map",         "marquee",  "math",
      "menu",         "meta",        "noframes", "noinclude",   "noscript", "nowiki",
      "object",       "onlyinclude", "optgroup", "option",      "param",    "poem",
      "ref",          "references",  "rp",       "rt",          "ruby",     "score",
      "script",       "select",      "source",   "style",       "summary",  "syntaxhighlight",
      "templatedata", "textarea",    "timeline", "video"};
  return tags->contains(lower_name) || IsInlineTag(lower_name) || IsBlockTag(lower_name);
}

bool IsTagNameChar(char c) { return absl::ascii_isalnum(c) || c == '-' || c == ':' || c == '_'; }

size_t FindIgnoringCase(absl::string_view haystack, absl::string_view needle, size_t from) {
  for (size_t i = from; i + needle.size() <= haystack.size(); ++i) {
    if (absl::EqualsIgnoreCase(haystack.substr(i, needle.size()), needle)) return i;
  }
  return absl::string_view::npos;
}

// Builds the stripped text. A removed tag leaves a pending separator that is written only in front
// of the next non-space character, so separators never pile up or trail.
class TagStripper {
 public:
  explicit TagStripper(size_t capacity) { out_.reserve(capacity); }

  void Append(char c) {
    if (!absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (pending_ != 0 && !out_.empty() &&
          !absl::ascii_isspace(static_cast<unsigned char>(out_.back()))) {
        out_.push_back(pending_);
      }
      pending_ = 0;
    }
    out_.push_back(c);
  }
  void Separate(char separator) {
    if (pending_ != '\n') pending_ = separator;
  }
  std::string Take() { return std::move(out_); }

 private:
  std::string out_;
  char pending_ = 0;
};

}  // namespace

std::string StripTags(absl::string_view in, TagPolicy policy) {
  TagStripper out(in.size());
  const bool any = policy == TagPolicy::kAnyTag;
  size_t i = 0;
  while (i < in.size()) {
    if (in[i] != '<') {
      out.Append(in[i++]);
      continue;
    }
    const absl::string_view rest = in.substr(i);
    if (any && absl::StartsWith(rest, "<!--")) {
      const size_t end = in.find("-->", i + 4);
      i = end == absl::string_view::npos ? in.size() : end + 3;
      out.Separate(' ');
      continue;
    }
    if (any && rest.size() > 1 && (rest[1] == '!' || rest[1] == '?')) {
      if (const size_t end = in.find('>', i); end != absl::string_view::npos) {
        i = end + 1;
        out.Separate(' ');
        continue;
      }
    }
    size_t j = i + 1;
    const bool closing = j < in.size() && in[j] == '/';
    if (closing) ++j;
    const size_t name_start = j;
    if (j < in.size() && absl::ascii_isalpha(in[j])) {
      while (j < in.size() && IsTagNameChar(in[j])) ++j;
    }
    const std::string name = absl::AsciiStrToLower(in.substr(name_start, j - name_start));
    size_t end = absl::string_view::npos;
    if (!name.empty() && j < in.size() &&
        (in[j] == '>' || in[j] == '/' || absl::ascii_isspace(static_cast<unsigned char>(in[j])))) {
      end = in.find('>', j);
      // Without the "<" escaping of real HTML, a tag must at least close on its own line.
      if (!any && end != absl::string_view::npos &&
          in.substr(j, end - j).find('\n') != absl::string_view::npos) {
        end = absl::string_view::npos;
      }
    }
    if (end == absl::string_view::npos || (!any && !IsKnownLowerCaseTag(name))) {
      out.Append(in[i++]);
      continue;
    }
    i = end + 1;
    if (!closing && (name == "script" || name == "style") && in[end - 1] != '/') {
      const size_t close = FindIgnoringCase(in, "</" + name, i);
      const size_t close_end = close == absl::string_view::npos ? close : in.find('>', close);
      i = close_end == absl::string_view::npos ? in.size() : close_end + 1;
    }
    if (IsBlockTag(name)) {
      out.Separate('\n');
    } else if (!IsInlineTag(name)) {
      out.Separate(' ');
    }
  }
  return out.Take();
}

bool IsKnownHtmlTag(absl::string_view name) {
  return IsKnownLowerCaseTag(absl::AsciiStrToLower(name));
}

std::string HtmlToText(absl::string_view html) {
  return std::string(absl::StripAsciiWhitespace(
      DecodeEntities(StripTags(SanitizeUtf8(html), TagPolicy::kAnyTag))));
}

}  // namespace tandem::index_builder
