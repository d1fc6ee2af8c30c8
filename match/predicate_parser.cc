#include "match/predicate_parser.h"

#include <cerrno>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "base/utf8.h"

namespace tandem::match {
namespace {

// The character of a one-letter escape (\n, \t, \r, \\, \", \`); nullopt for any other letter.
std::optional<char> Unescape(char letter) {
  constexpr std::pair<char, char> kEscapes[] = {{'n', '\n'},  {'t', '\t'}, {'r', '\r'},
                                                {'\\', '\\'}, {'"', '"'},  {'`', '`'}};
  for (const auto& [escape, c] : kEscapes) {
    if (escape == letter) return c;
  }
  return std::nullopt;
}

// A recursive-descent parser over the grammar in the header; `pos_` is a byte offset.
class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<Predicate> Parse() {
    SkipSpace();
    if (AtEnd()) return Error("empty predicate");
    Predicate predicate;
    while (true) {
      Filter filter;
      if (absl::Status s = ParseFilter(/*depth=*/0, &filter); !s.ok()) return s;
      predicate.filters.push_back(std::move(filter));
      SkipSpace();
      if (AtEnd()) break;
      if (!ConsumeKeyword("or")) {
        if (Peek() == ')') return Error("unbalanced ')'");
        return Error("expected AND, OR or the end of the predicate");
      }
    }
    return predicate;
  }

 private:
  absl::Status ParseFilter(int depth, Filter* filter) {
    while (true) {
      SkipSpace();
      if (Peek() == '(') {
        if (depth >= 32) return Error("parentheses nested too deeply");
        ++pos_;
        if (absl::Status s = ParseFilter(depth + 1, filter); !s.ok()) return s;
        SkipSpace();
        if (PeekKeyword("or")) {
          return Error(
              "OR inside parentheses: a predicate is an OR of filters, each an AND of "
              "constraints; write the filters side by side");
        }
        if (Peek() != ')') return Error("expected ')'");
        ++pos_;
      } else {
        Constraint constraint;
        if (absl::Status s = ParseConstraint(&constraint); !s.ok()) return s;
        filter->constraints.push_back(std::move(constraint));
      }
      SkipSpace();
      if (!ConsumeKeyword("and")) return absl::OkStatus();
    }
  }

  absl::Status ParseConstraint(Constraint* constraint) {
    SkipSpace();
    if (AtEnd()) return Error("expected an attribute name");
    if (Peek() == '`') {
      if (absl::Status s = ParseQuoted('`', &constraint->name); !s.ok()) return s;
    } else {
      const size_t start = pos_;
      while (!AtEnd() && IsNameChar(Peek(), pos_ == start)) ++pos_;
      if (pos_ == start) return Error("expected an attribute name");
      constraint->name = std::string(text_.substr(start, pos_ - start));
    }
    SkipSpace();
    if (absl::Status s = ParseOp(&constraint->op); !s.ok()) return s;
    SkipSpace();
    return ParseValue(&constraint->value);
  }

  absl::Status ParseOp(Op* op) {
    static constexpr struct {
      absl::string_view text;
      Op op;
    } kSymbols[] = {{"!=", Op::kNe}, {"<=", Op::kLe}, {">=", Op::kGe}, {"==", Op::kEq},
                    {"=", Op::kEq},  {"<", Op::kLt},  {">", Op::kGt}};
    for (const auto& s : kSymbols) {
      if (text_.substr(pos_, s.text.size()) == s.text) {
        pos_ += s.text.size();
        *op = s.op;
        return absl::OkStatus();
      }
    }
    if (ConsumeKeyword("prefix"))
      *op = Op::kPrefix;
    else if (ConsumeKeyword("substring"))
      *op = Op::kSubstring;
    else if (ConsumeKeyword("contains"))
      *op = Op::kContains;
    else {
      const size_t start = pos_;
      size_t end = pos_;
      while (end < text_.size() && !absl::ascii_isspace(static_cast<unsigned char>(text_[end])) &&
             text_[end] != '"') {
        ++end;
      }
      if (end == start) return Error("expected an operator");
      return Error(absl::StrCat("unknown operator '", text_.substr(start, end - start),
                                "' (expected = != < > <= >= prefix substring contains)"));
    }
    return absl::OkStatus();
  }

  absl::Status ParseValue(Value* value) {
    if (AtEnd()) return Error("expected a value");
    if (Peek() == '"') {
      value->type = ValueType::kString;
      return ParseQuoted('"', &value->s);
    }
    const size_t start = pos_;
    if (Peek() == '-' || Peek() == '+') ++pos_;
    bool is_double = false;
    while (!AtEnd()) {
      const char c = Peek();
      if (absl::ascii_isdigit(static_cast<unsigned char>(c))) {
        ++pos_;
      } else if (c == '.' || c == 'e' || c == 'E') {
        is_double = true;
        ++pos_;
        if ((c == 'e' || c == 'E') && !AtEnd() && (Peek() == '-' || Peek() == '+')) ++pos_;
      } else {
        break;
      }
    }
    const std::string token(text_.substr(start, pos_ - start));
    if (token.empty() || token == "-" || token == "+") {
      pos_ = start;
      if (IsNameChar(Peek(), true)) {
        return Error("expected a value: a number or a \"string\" (strings take double quotes)");
      }
      return Error("expected a value: a number or a \"string\"");
    }
    if (!AtEnd() && IsNameChar(Peek(), false)) {
      pos_ = start;
      return Error("expected a value: a number or a \"string\" (strings take double quotes)");
    }
    if (!is_double) {
      int64_t v;
      if (!absl::SimpleAtoi(token, &v)) {
        pos_ = start;
        return Error(absl::StrCat("integer ", token, " is out of the 64-bit range"));
      }
      *value = Value::Int(v);
      return absl::OkStatus();
    }
    errno = 0;
    char* end = nullptr;
    const double d = std::strtod(token.c_str(), &end);
    if (end != token.c_str() + token.size() || errno == ERANGE) {
      pos_ = start;
      return Error(absl::StrCat("bad number ", token));
    }
    *value = Value::Double(d);
    return absl::OkStatus();
  }

  // A string between `quote`s with backslash escapes.
  absl::Status ParseQuoted(char quote, std::string* out) {
    const size_t start = pos_;
    ++pos_;
    out->clear();
    while (true) {
      if (AtEnd()) {
        pos_ = start;
        return Error("unterminated string");
      }
      const char c = text_[pos_++];
      if (c == quote) {
        // Names and strings are answered in proto3 string fields, which must be UTF-8; the text
        // itself arrives as one, so only \x escapes can break this.
        if (base::IsValidUtf8(*out)) return absl::OkStatus();
        pos_ = start;
        return Error(absl::StrCat(quote == '`' ? "the name" : "the string",
                                  " is not valid UTF-8 (\\x escapes must spell whole UTF-8 "
                                  "sequences)"));
      }
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (AtEnd()) {
        pos_ = start;
        return Error("unterminated string");
      }
      const char e = text_[pos_++];
      if (const std::optional<char> plain = Unescape(e)) {
        out->push_back(*plain);
        continue;
      }
      switch (e) {
        case 'x': {
          int v = 0;
          for (int k = 0; k < 2; ++k) {
            if (AtEnd() || !absl::ascii_isxdigit(static_cast<unsigned char>(Peek()))) {
              return Error("\\x takes two hex digits");
            }
            const char h = text_[pos_++];
            v = v * 16 + (absl::ascii_isdigit(static_cast<unsigned char>(h))
                              ? h - '0'
                              : absl::ascii_tolower(static_cast<unsigned char>(h)) - 'a' + 10);
          }
          out->push_back(static_cast<char>(v));
          break;
        }
        default:
          --pos_;
          return Error(absl::StrCat("unknown escape \\", std::string(1, e)));
      }
    }
  }

  static bool IsNameChar(char c, bool first) {
    if (absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_') return true;
    return !first && (absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-');
  }

  bool PeekKeyword(absl::string_view word) const {
    if (text_.size() - pos_ < word.size()) return false;
    if (!absl::EqualsIgnoreCase(text_.substr(pos_, word.size()), word)) return false;
    const size_t end = pos_ + word.size();
    return end == text_.size() || !IsNameChar(text_[end], false);
  }

  bool ConsumeKeyword(absl::string_view word) {
    if (!PeekKeyword(word)) return false;
    pos_ += word.size();
    return true;
  }

  void SkipSpace() {
    while (!AtEnd() && absl::ascii_isspace(static_cast<unsigned char>(Peek()))) ++pos_;
  }
  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  absl::Status Error(absl::string_view what) const {
    return absl::InvalidArgumentError(absl::StrCat("predicate, at byte ", pos_, ": ", what));
  }

  absl::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<Predicate> ParsePredicate(absl::string_view text) { return Parser(text).Parse(); }

}  // namespace tandem::match
