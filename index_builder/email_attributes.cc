#include "index_builder/email_attributes.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace tandem::index_builder::internal {
namespace {

// `text` without RFC 5322 comments ("(PDT)", nested, with quoted pairs); each leaves a space.
// With `drop_quoted`, quoted strings go too (a display name "Doe, J." with its comma).
std::string WithoutComments(absl::string_view text, bool drop_quoted) {
  std::string out;
  out.reserve(text.size());
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
      if (!drop_quoted && i < text.size()) out.push_back(text[i]);
      continue;
    }
    if (depth > 0) {
      if (c == '\\') {
        ++i;
      } else if (c == '(') {
        ++depth;
      } else if (c == ')') {
        --depth;
      }
      continue;
    }
    if (c == '(') {
      depth = 1;
      out.push_back(' ');
    } else if (c == '"') {
      quoted = true;
      if (!drop_quoted) out.push_back(c);
    } else {
      out.push_back(c);
    }
  }
  return out;
}

bool IsDomainByte(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' ||
         static_cast<unsigned char>(c) >= 0x80;
}

constexpr std::array<absl::string_view, 12> kMonths = {
    "january", "february", "march",     "april",   "may",      "june",
    "july",    "august",   "september", "october", "november", "december"};

// 1..12 for a month's name or an abbreviation of three letters or more ("aug", "sept"); 0 else.
int MonthNumber(absl::string_view word) {
  if (word.size() < 3) return 0;
  for (size_t m = 0; m < kMonths.size(); ++m) {
    if (kMonths[m].substr(0, word.size()) == word) return static_cast<int>(m) + 1;
  }
  return 0;
}

// One piece of a date: a number (up to four digits), a word of letters, or anything else.
struct DatePiece {
  enum class Kind { kNumber, kWord, kOther } kind = Kind::kOther;
  int value = 0;   // of a number
  int digits = 0;  // of a number
  std::string word;
  int token = 0;  // which white-space-separated token it came from
};

std::vector<DatePiece> DatePieces(absl::string_view date) {
  const std::string text = absl::AsciiStrToLower(WithoutComments(date, /*drop_quoted=*/false));
  std::vector<DatePiece> pieces;
  int token = 0;
  size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() &&
           (absl::ascii_isspace(static_cast<unsigned char>(text[i])) || text[i] == ',')) {
      ++i;
    }
    size_t end = i;
    while (end < text.size() && !absl::ascii_isspace(static_cast<unsigned char>(text[end])) &&
           text[end] != ',') {
      ++end;
    }
    absl::string_view t = absl::string_view(text).substr(i, end - i);
    i = end;
    if (t.empty()) continue;
    ++token;
    if (t.size() > 10 && t[4] == '-' && t[10] == 't') t = t.substr(0, 10);  // ISO 8601's date-time
    // A time of day, or a zone offset such as "-0700": no date in them.
    if (t.find(':') != absl::string_view::npos) continue;
    if ((t[0] == '+' || t[0] == '-') && t.size() > 1 &&
        absl::ascii_isdigit(static_cast<unsigned char>(t[1]))) {
      continue;
    }
    // "22-aug-2002", "2002-08-22", "2002/08/22", "dec." split into their pieces.
    size_t p = 0;
    while (p < t.size()) {
      size_t q = p;
      while (q < t.size() && t[q] != '-' && t[q] != '/' && t[q] != '.') ++q;
      const absl::string_view s = t.substr(p, q - p);
      p = q + 1;
      if (s.empty()) continue;
      DatePiece piece;
      piece.token = token;
      if (std::all_of(s.begin(), s.end(),
                      [](char c) { return absl::ascii_isdigit(static_cast<unsigned char>(c)); })) {
        if (s.size() <= 4) {
          piece.kind = DatePiece::Kind::kNumber;
          piece.digits = static_cast<int>(s.size());
          for (const char c : s) piece.value = piece.value * 10 + (c - '0');
        }
      } else if (std::all_of(s.begin(), s.end(), [](char c) {
                   return absl::ascii_isalpha(static_cast<unsigned char>(c));
                 })) {
        piece.kind = DatePiece::Kind::kWord;
        piece.word = std::string(s);
      }
      pieces.push_back(std::move(piece));
    }
  }
  return pieces;
}

// A year as written: four digits as they are, and RFC 5322's obsolete forms (section 4.3): two
// digits from 1950 to 2049, three digits past 1900. 0 for anything outside 1900..2099.
int FullYear(const DatePiece& piece) {
  if (piece.kind != DatePiece::Kind::kNumber) return 0;
  int year = 0;
  if (piece.digits == 4) {
    year = piece.value;
  } else if (piece.digits == 3) {
    year = 1900 + piece.value;
  } else if (piece.digits == 2) {
    year = piece.value < 50 ? 2000 + piece.value : 1900 + piece.value;
  }
  return year >= 1900 && year <= 2099 ? year : 0;
}

}  // namespace

std::string SenderDomain(absl::string_view from) {
  const std::string plain = WithoutComments(from, /*drop_quoted=*/true);
  absl::string_view address = plain;
  if (const size_t lt = address.find('<'); lt != absl::string_view::npos) {
    address = address.substr(lt + 1);
    address = address.substr(0, address.find('>'));
  } else {
    address = address.substr(0, address.find(','));
  }
  const size_t at = address.rfind('@');
  if (at == absl::string_view::npos) return "";
  absl::string_view domain = absl::StripAsciiWhitespace(address.substr(at + 1));
  while (!domain.empty() && domain.back() == '.') domain.remove_suffix(1);  // "example.com."
  if (domain.empty() || domain.front() == '.' || domain.front() == '-' ||
      domain.find("..") != absl::string_view::npos ||
      !std::all_of(domain.begin(), domain.end(), IsDomainByte)) {
    return "";
  }
  return absl::AsciiStrToLower(domain);
}

std::optional<MailMonth> ParseMailDate(absl::string_view date) {
  const std::vector<DatePiece> pieces = DatePieces(date);
  size_t month_at = pieces.size();
  int month = 0;
  for (size_t i = 0; i < pieces.size() && month == 0; ++i) {
    if (pieces[i].kind == DatePiece::Kind::kWord) {
      month = MonthNumber(pieces[i].word);
      month_at = i;
    }
  }
  if (month == 0) {
    // ISO 8601: 2002-08-22, the year first in one token.
    for (size_t i = 0; i + 1 < pieces.size(); ++i) {
      const DatePiece& next = pieces[i + 1];
      if (pieces[i].digits == 4 && FullYear(pieces[i]) != 0 && next.token == pieces[i].token &&
          next.kind == DatePiece::Kind::kNumber && next.value >= 1 && next.value <= 12) {
        return MailMonth{.year = pieces[i].value, .month = next.value};
      }
    }
    return std::nullopt;
  }
  for (const DatePiece& piece : pieces) {
    if (piece.kind == DatePiece::Kind::kNumber && piece.digits == 4 && FullYear(piece) != 0) {
      return MailMonth{.year = piece.value, .month = month};
    }
  }
  // A short year: after the day, which comes before the month ("22 Aug 02") or after it
  // ("Aug 22 02", asctime's order).
  bool day_first = false;
  for (size_t i = 0; i < month_at; ++i) day_first |= pieces[i].kind == DatePiece::Kind::kNumber;
  int numbers_after = 0;
  for (size_t i = month_at + 1; i < pieces.size(); ++i) {
    if (pieces[i].kind != DatePiece::Kind::kNumber) continue;
    if (++numbers_after < (day_first ? 1 : 2)) continue;
    const int year = FullYear(pieces[i]);
    if (year == 0) return std::nullopt;
    return MailMonth{.year = year, .month = month};
  }
  return std::nullopt;
}

std::string SpamHamLabel(absl::string_view name) {
  bool spam = false;
  bool ham = false;
  size_t i = 0;
  while (i < name.size()) {
    while (i < name.size() && !absl::ascii_isalpha(static_cast<unsigned char>(name[i]))) ++i;
    size_t end = i;
    while (end < name.size() && absl::ascii_isalpha(static_cast<unsigned char>(name[end]))) ++end;
    const std::string word = absl::AsciiStrToLower(name.substr(i, end - i));
    spam |= word == "spam";
    ham |= word == "ham";
    i = end;
  }
  if (spam == ham) return "";
  return spam ? "spam" : "ham";
}

std::string SpamHamLabelOfPath(const InputFile& file) {
  namespace fs = std::filesystem;
  const fs::path relative(file.relative);
  int depth = 0;
  for (fs::path dir = relative.parent_path(); !dir.empty(); dir = dir.parent_path()) {
    if (std::string label = SpamHamLabel(dir.filename().string()); !label.empty()) return label;
    ++depth;
    if (dir == dir.parent_path()) break;
  }
  // The input directory: the file's path less its relative path's components.
  fs::path root = file.path;
  for (int up = 0; up <= depth; ++up) root = root.parent_path();
  return SpamHamLabel(root.filename().string());
}

}  // namespace tandem::index_builder::internal
