#include "index_builder/text_util.h"

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace tandem::index_builder {
namespace {

constexpr char32_t kReplacementCharacter = 0xFFFD;

// windows-1252 for bytes 0x80..0x9F. The five bytes it leaves undefined map to the C1 code point of the
// same value, as the WHATWG decoder does.
constexpr std::array<char32_t, 32> kWindows1252High = {
    0x20AC, 0x0081, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x008D, 0x017D, 0x008F, 0x0090, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x009D, 0x017E, 0x0178};

char32_t Windows1252(unsigned char byte) {
  if (byte >= 0x80 && byte <= 0x9F) return kWindows1252High[byte - 0x80];
  return byte;
}

bool IsControl(char32_t c) { return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F; }

bool IsContinuation(unsigned char byte) { return (byte & 0xC0) == 0x80; }

// Length of the well-formed UTF-8 sequence starting at in[i] (RFC 3629 table 3-7: no overlong forms,
// no surrogates, nothing past U+10FFFF), or 0 when in[i] does not start one.
size_t Utf8SequenceLength(absl::string_view in, size_t i) {
  const auto b0 = static_cast<unsigned char>(in[i]);
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    length = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    length = 3;
    if (b0 == 0xE0) low = 0xA0;
    if (b0 == 0xED) high = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    length = 4;
    if (b0 == 0xF0) low = 0x90;
    if (b0 == 0xF4) high = 0x8F;
  } else {
    return 0;
  }
  if (i + length > in.size()) return 0;
  const auto b1 = static_cast<unsigned char>(in[i + 1]);
  if (b1 < low || b1 > high) return 0;
  for (size_t k = 2; k < length; ++k) {
    if (!IsContinuation(static_cast<unsigned char>(in[i + k]))) return 0;
  }
  return length;
}

// HTML 4 names of U+00A0..U+00FF, in code point order.
constexpr std::array<absl::string_view, 96> kLatin1EntityNames = {
    "nbsp",   "iexcl",  "cent",   "pound",  "curren", "yen",    "brvbar", "sect",   "uml",    "copy",
    "ordf",   "laquo",  "not",    "shy",    "reg",    "macr",   "deg",    "plusmn", "sup2",   "sup3",
    "acute",  "micro",  "para",   "middot", "cedil",  "sup1",   "ordm",   "raquo",  "frac14", "frac12",
    "frac34", "iquest", "Agrave", "Aacute", "Acirc",  "Atilde", "Auml",   "Aring",  "AElig",  "Ccedil",
    "Egrave", "Eacute", "Ecirc",  "Euml",   "Igrave", "Iacute", "Icirc",  "Iuml",   "ETH",    "Ntilde",
    "Ograve", "Oacute", "Ocirc",  "Otilde", "Ouml",   "times",  "Oslash", "Ugrave", "Uacute", "Ucirc",
    "Uuml",   "Yacute", "THORN",  "szlig",  "agrave", "aacute", "acirc",  "atilde", "auml",   "aring",
    "aelig",  "ccedil", "egrave", "eacute", "ecirc",  "euml",   "igrave", "iacute", "icirc",  "iuml",
    "eth",    "ntilde", "ograve", "oacute", "ocirc",  "otilde", "ouml",   "divide", "oslash", "ugrave",
    "uacute", "ucirc",  "uuml",   "yacute", "thorn",  "yuml"};

// HTML 4 names of the Greek letters U+0391..U+03A9 and U+03B1..U+03C9 (U+03A2 is unassigned).
constexpr std::array<absl::string_view, 25> kGreekEntityNames = {
    "alpha", "beta",   "gamma",   "delta", "epsilon", "zeta",    "eta",  "theta", "iota",
    "kappa", "lambda", "mu",      "nu",    "xi",      "omicron", "pi",   "rho",   "",
    "sigma", "tau",    "upsilon", "phi",   "chi",     "psi",     "omega"};

struct NamedEntity {
  absl::string_view name;
  char32_t code_point;
};

// clang-format off
constexpr NamedEntity kOtherEntities[] = {
    {"amp", '&'}, {"lt", '<'}, {"gt", '>'}, {"quot", '"'}, {"apos", '\''}, {"OElig", 0x152},
    {"oelig", 0x153}, {"Scaron", 0x160}, {"scaron", 0x161}, {"Yuml", 0x178}, {"fnof", 0x192},
    {"circ", 0x2C6}, {"tilde", 0x2DC}, {"ensp", 0x2002}, {"emsp", 0x2003}, {"thinsp", 0x2009},
    {"zwnj", 0x200C}, {"zwj", 0x200D}, {"lrm", 0x200E}, {"rlm", 0x200F}, {"ndash", 0x2013},
    {"mdash", 0x2014}, {"lsquo", 0x2018}, {"rsquo", 0x2019}, {"sbquo", 0x201A}, {"ldquo", 0x201C},
    {"rdquo", 0x201D}, {"bdquo", 0x201E}, {"dagger", 0x2020}, {"Dagger", 0x2021}, {"bull", 0x2022},
    {"hellip", 0x2026}, {"permil", 0x2030}, {"prime", 0x2032}, {"Prime", 0x2033}, {"lsaquo", 0x2039},
    {"rsaquo", 0x203A}, {"euro", 0x20AC}, {"trade", 0x2122}, {"larr", 0x2190}, {"rarr", 0x2192},
    {"minus", 0x2212}, {"le", 0x2264}, {"ge", 0x2265}, {"ne", 0x2260}, {"infin", 0x221E},
    {"sigmaf", 0x3C2},
    // SGML entities of the TREC Federal Register documents.
    {"hyph", '-'}, {"blank", ' '}, {"space", ' '}, {"cir", 0x25CB},
};
// clang-format on

const std::unordered_map<std::string, char32_t>& EntityTable() {
  static const auto* table = [] {
    auto* t = new std::unordered_map<std::string, char32_t>();
    for (size_t i = 0; i < kLatin1EntityNames.size(); ++i)
      (*t)[std::string(kLatin1EntityNames[i])] = 0xA0 + i;
    // A no-break space separates words like a space; indexing has no use for the distinction.
    (*t)["nbsp"] = ' ';
    for (size_t i = 0; i < kGreekEntityNames.size(); ++i) {
      absl::string_view lower = kGreekEntityNames[i];
      if (lower.empty()) continue;
      (*t)[std::string(lower)] = 0x3B1 + i;
    }
    for (const NamedEntity& e : kOtherEntities) (*t)[std::string(e.name)] = e.code_point;
    return t;
  }();
  return *table;
}

// Upper-case Greek names ("Delta") are the lower-case ones capitalised, so they are matched here
// instead of doubling the table.
bool LookupEntity(absl::string_view name, char32_t* code_point) {
  const auto& table = EntityTable();
  if (auto it = table.find(std::string(name)); it != table.end()) {
    *code_point = it->second;
    return true;
  }
  if (name.size() < 2 || !absl::ascii_isupper(name[0])) return false;
  for (size_t i = 0; i < kGreekEntityNames.size(); ++i) {
    absl::string_view g = kGreekEntityNames[i];
    if (g.size() == name.size() && g.substr(1) == name.substr(1) && g[0] == absl::ascii_tolower(name[0])) {
      *code_point = 0x391 + i;
      return true;
    }
  }
  return false;
}

// Parses the reference starting at in[i] == '&'. On success appends its text and returns the index
// after the ';'; returns 0 when in[i] starts no reference this function knows.
size_t DecodeReference(absl::string_view in, size_t i, std::string* out) {
  size_t j = i + 1;
  char32_t code_point = 0;
  if (j < in.size() && in[j] == '#') {
    ++j;
    const bool hex = j < in.size() && (in[j] == 'x' || in[j] == 'X');
    if (hex) ++j;
    const size_t digits_start = j;
    uint32_t value = 0;
    while (j < in.size() && j - digits_start < 8 &&
           (hex ? absl::ascii_isxdigit(in[j]) : absl::ascii_isdigit(in[j]))) {
      const char c = absl::ascii_tolower(in[j]);
      value = value * (hex ? 16 : 10) + (absl::ascii_isdigit(c) ? c - '0' : c - 'a' + 10);
      ++j;
    }
    if (j == digits_start || j >= in.size() || in[j] != ';') return 0;
    // HTML reads &#128;..&#159; as windows-1252, as browsers do; NUL is never text.
    if (value == 0) {
      code_point = kReplacementCharacter;
    } else if (value >= 0x80 && value <= 0x9F) {
      code_point = Windows1252(static_cast<unsigned char>(value));
    } else {
      code_point = value;
    }
  } else {
    const size_t name_start = j;
    while (j < in.size() && j - name_start < 10 && absl::ascii_isalnum(in[j])) ++j;
    if (j == name_start || j >= in.size() || in[j] != ';') return 0;
    if (!LookupEntity(in.substr(name_start, j - name_start), &code_point)) return 0;
  }
  AppendUtf8(IsControl(code_point) ? ' ' : code_point, out);
  return j + 1;
}

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
bool IsKnownHtmlTag(const std::string& lower_name) {
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

// Builds the stripped text. A removed tag leaves a pending separator that is written only in front of
// the next non-space character, so separators never pile up or trail.
class TagStripper {
 public:
  explicit TagStripper(size_t capacity) { out_.reserve(capacity); }

  void Append(char c) {
    if (!absl::ascii_isspace(static_cast<unsigned char>(c))) {
      if (pending_ != 0 && !out_.empty() && !absl::ascii_isspace(static_cast<unsigned char>(out_.back()))) {
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

void AppendUtf8(char32_t c, std::string* out) {
  if ((c >= 0xD800 && c <= 0xDFFF) || c > 0x10FFFF) c = kReplacementCharacter;
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xC0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xE0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out->push_back(static_cast<char>(0xF0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out->push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

std::string SanitizeUtf8(absl::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto byte = static_cast<unsigned char>(in[i]);
    if (byte < 0x80) {
      out.push_back(IsControl(byte) ? ' ' : static_cast<char>(byte));
      ++i;
    } else if (const size_t length = Utf8SequenceLength(in, i); length > 0) {
      absl::StrAppend(&out, in.substr(i, length));
      i += length;
    } else {
      AppendUtf8(Windows1252(byte), &out);
      ++i;
    }
  }
  return out;
}

std::string DecodeEntities(absl::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const size_t amp = in.find('&', i);
    if (amp == absl::string_view::npos) {
      absl::StrAppend(&out, in.substr(i));
      break;
    }
    absl::StrAppend(&out, in.substr(i, amp - i));
    if (const size_t next = DecodeReference(in, amp, &out); next != 0) {
      i = next;
    } else {
      out.push_back('&');
      i = amp + 1;
    }
  }
  return out;
}

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
    if (end == absl::string_view::npos || (!any && !IsKnownHtmlTag(name))) {
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

std::string HtmlToText(absl::string_view html) {
  return std::string(
      absl::StripAsciiWhitespace(DecodeEntities(StripTags(SanitizeUtf8(html), TagPolicy::kAnyTag))));
}

void AppendParagraph(absl::string_view part, std::string* text) {
  if (part.empty()) return;
  if (!text->empty()) text->push_back('\n');
  absl::StrAppend(text, part);
}

std::string DecodeQuotedPrintable(absl::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c != '=') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 2 < in.size() && absl::ascii_isxdigit(in[i + 1]) && absl::ascii_isxdigit(in[i + 2])) {
      const auto nibble = [](char h) {
        return absl::ascii_isdigit(h) ? h - '0' : absl::ascii_tolower(h) - 'a' + 10;
      };
      out.push_back(static_cast<char>(nibble(in[i + 1]) * 16 + nibble(in[i + 2])));
      i += 3;
      continue;
    }
    // A soft line break: "=" then optional trailing blanks, then the end of the line.
    size_t j = i + 1;
    while (j < in.size() && (in[j] == ' ' || in[j] == '\t' || in[j] == '\r')) ++j;
    if (j == in.size() || in[j] == '\n') {
      i = j == in.size() ? j : j + 1;
      continue;
    }
    out.push_back('=');
    ++i;
  }
  return out;
}

std::string DecodeBase64(absl::string_view in) {
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t bits = 0;
  int bit_count = 0;
  for (const char c : in) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+' || c == '-') {  // "-" and "_": the URL-safe alphabet of RFC 4648
      value = 62;
    } else if (c == '/' || c == '_') {
      value = 63;
    } else if (c == '=') {
      break;
    } else {
      continue;
    }
    bits = (bits << 6) | static_cast<uint32_t>(value);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      out.push_back(static_cast<char>((bits >> bit_count) & 0xFF));
    }
  }
  return out;
}

std::string CollapseWhitespace(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool space = false;
  for (const char c : text) {
    if (absl::ascii_isspace(static_cast<unsigned char>(c))) {
      space = !out.empty();
      continue;
    }
    if (space) out.push_back(' ');
    space = false;
    out.push_back(c);
  }
  return out;
}

std::vector<absl::string_view> ElementContents(absl::string_view sgml, absl::string_view tag) {
  std::vector<absl::string_view> contents;
  const std::string open = absl::StrCat("<", tag);
  const std::string close = absl::StrCat("</", tag, ">");
  size_t from = 0;
  while (true) {
    const size_t start = sgml.find(open, from);
    if (start == absl::string_view::npos) break;
    const size_t after_name = start + open.size();
    if (after_name >= sgml.size()) break;
    if (sgml[after_name] != '>' && !absl::ascii_isspace(static_cast<unsigned char>(sgml[after_name]))) {
      from = after_name;  // a longer name such as <DOCNO> when looking for <DOC>
      continue;
    }
    const size_t gt = sgml.find('>', after_name);
    if (gt == absl::string_view::npos) break;
    const size_t end = sgml.find(close, gt + 1);
    if (end == absl::string_view::npos) break;
    contents.push_back(sgml.substr(gt + 1, end - gt - 1));
    from = end + close.size();
  }
  return contents;
}

absl::string_view FirstElementContent(absl::string_view sgml, absl::string_view tag) {
  std::vector<absl::string_view> contents = ElementContents(sgml, tag);
  return contents.empty() ? absl::string_view() : contents.front();
}

absl::string_view AttributeValue(absl::string_view open_tag, absl::string_view name) {
  const auto is_space = [](char c) { return absl::ascii_isspace(static_cast<unsigned char>(c)); };
  size_t from = 0;
  while (true) {
    const size_t at = open_tag.find(name, from);
    if (at == absl::string_view::npos) return {};
    from = at + name.size();
    if (at == 0 || !is_space(open_tag[at - 1])) continue;
    size_t i = from;
    while (i < open_tag.size() && is_space(open_tag[i])) ++i;
    if (i >= open_tag.size() || open_tag[i] != '=') continue;
    ++i;
    while (i < open_tag.size() && is_space(open_tag[i])) ++i;
    if (i >= open_tag.size()) return {};
    if (open_tag[i] == '"' || open_tag[i] == '\'') {
      const size_t end = open_tag.find(open_tag[i], i + 1);
      if (end == absl::string_view::npos) return {};
      return open_tag.substr(i + 1, end - i - 1);
    }
    size_t end = i;
    while (end < open_tag.size() && !is_space(open_tag[end]) && open_tag[end] != '>') ++end;
    return open_tag.substr(i, end - i);
  }
}

}  // namespace tandem::index_builder
