#include "index_builder/html_entities.h"

#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "index_builder/utf8.h"

namespace tandem::index_builder {
namespace {

// HTML 4 names of U+00A0..U+00FF, in code point order.
constexpr std::array<absl::string_view, 96> kLatin1EntityNames = {
    "nbsp",   "iexcl",  "cent",   "pound",  "curren", "yen",    "brvbar", "sect",   "uml",
    "copy",   "ordf",   "laquo",  "not",    "shy",    "reg",    "macr",   "deg",    "plusmn",
    "sup2",   "sup3",   "acute",  "micro",  "para",   "middot", "cedil",  "sup1",   "ordm",
    "raquo",  "frac14", "frac12", "frac34", "iquest", "Agrave", "Aacute", "Acirc",  "Atilde",
    "Auml",   "Aring",  "AElig",  "Ccedil", "Egrave", "Eacute", "Ecirc",  "Euml",   "Igrave",
    "Iacute", "Icirc",  "Iuml",   "ETH",    "Ntilde", "Ograve", "Oacute", "Ocirc",  "Otilde",
    "Ouml",   "times",  "Oslash", "Ugrave", "Uacute", "Ucirc",  "Uuml",   "Yacute", "THORN",
    "szlig",  "agrave", "aacute", "acirc",  "atilde", "auml",   "aring",  "aelig",  "ccedil",
    "egrave", "eacute", "ecirc",  "euml",   "igrave", "iacute", "icirc",  "iuml",   "eth",
    "ntilde", "ograve", "oacute", "ocirc",  "otilde", "ouml",   "divide", "oslash", "ugrave",
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
    {"hellip", 0x2026}, {"permil", 0x2030}, {"prime", 0x2032}, {"Prime", 0x2033},
    {"lsaquo", 0x2039}, {"rsaquo", 0x203A}, {"euro", 0x20AC}, {"trade", 0x2122}, {"larr", 0x2190},
    {"rarr", 0x2192}, {"minus", 0x2212}, {"le", 0x2264}, {"ge", 0x2265}, {"ne", 0x2260},
    {"infin", 0x221E}, {"sigmaf", 0x3C2},
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
    if (g.size() == name.size() && g.substr(1) == name.substr(1) &&
        g[0] == absl::ascii_tolower(name[0])) {
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
      code_point = DecodeWindows1252(static_cast<unsigned char>(value));
    } else {
      code_point = value;
    }
  } else {
    const size_t name_start = j;
    while (j < in.size() && j - name_start < 10 && absl::ascii_isalnum(in[j])) ++j;
    if (j == name_start || j >= in.size() || in[j] != ';') return 0;
    if (!LookupEntity(in.substr(name_start, j - name_start), &code_point)) return 0;
  }
  AppendUtf8(IsNonTextControl(code_point) ? ' ' : code_point, out);
  return j + 1;
}

}  // namespace

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

}  // namespace tandem::index_builder
