// File: filter_text.cc
//
// The text form of filters (grammar in filter.h): a recursive-descent parser whose recursion is
// bounded by the nesting limit before it descends, and the printer that writes what it reads.
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "filter/filter.h"

namespace tandem::filter {
namespace {

using Kind = FilterNode::Kind;

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool IsFieldChar(char c) { return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-'; }
bool IsBareChar(char c) {
  return IsFieldChar(c) || c == '@' || c == '/' || c == '+' ||
         static_cast<unsigned char>(c) >= 0x80;
}
bool IsKeyword(absl::string_view word) {
  return absl::EqualsIgnoreCase(word, "and") || absl::EqualsIgnoreCase(word, "or") ||
         absl::EqualsIgnoreCase(word, "not") || absl::EqualsIgnoreCase(word, "in");
}

// A subtree and its height (nodes on its longest root-to-leaf path).
struct Parsed {
  FilterNode node;
  size_t height = 1;
};

// A value as written: its text (escapes resolved), whether it was quoted, and its offset.
struct Value {
  std::string text;
  bool quoted = false;
  size_t pos = 0;
};

class Parser {
 public:
  explicit Parser(absl::string_view text) : text_(text) {}

  absl::StatusOr<FilterNode> Parse() {
    SkipSpaces();
    if (AtEnd()) return Expected(pos_, "a filter");
    TANDEM_ASSIGN_OR_RETURN(Parsed parsed, ParseOr(0));
    SkipSpaces();
    if (!AtEnd()) {
      return Expected(pos_, text_[pos_] == ')' ? "AND, OR or the end (this ')' closes nothing)"
                                               : "AND, OR or the end of the filter");
    }
    return std::move(parsed.node);
  }

 private:
  bool AtEnd() const { return pos_ >= text_.size(); }
  void SkipSpaces() {
    while (!AtEnd() && IsSpace(text_[pos_])) ++pos_;
  }
  size_t SkipSpacesFrom(size_t p) const {
    while (p < text_.size() && IsSpace(text_[p])) ++p;
    return p;
  }
  size_t BareEnd(size_t p) const {
    while (p < text_.size() && IsBareChar(text_[p])) ++p;
    return p;
  }
  // Whether `word` (lower case) starts at p as a whole word.
  bool WordAt(size_t p, absl::string_view word) const {
    return BareEnd(p) - p == word.size() &&
           absl::EqualsIgnoreCase(text_.substr(p, word.size()), word);
  }
  // Consumes `word` after spaces when it is there.
  bool ConsumeKeyword(absl::string_view word) {
    const size_t p = SkipSpacesFrom(pos_);
    if (!WordAt(p, word)) return false;
    pos_ = p + word.size();
    return true;
  }

  // What stands at p, for messages.
  std::string Found(size_t p) const {
    if (p >= text_.size()) return "the end of the filter";
    if (IsBareChar(text_[p])) {
      const size_t end = std::min(BareEnd(p), p + 32);
      return absl::StrCat("\"", absl::CHexEscape(text_.substr(p, end - p)), "\"");
    }
    return absl::StrCat("'", absl::CHexEscape(text_.substr(p, 1)), "'");
  }
  absl::Status Expected(size_t p, absl::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrCat("filter, offset ", p, ": expected ", what, ", found ", Found(p)));
  }
  static absl::Status AtOffset(size_t p, absl::string_view what) {
    return absl::InvalidArgumentError(absl::StrCat("filter, offset ", p, ": ", what));
  }
  absl::Status CountNodes(size_t p, size_t n) {
    nodes_ += n;
    if (nodes_ > kMaxFilterNodes) {
      return AtOffset(p, absl::StrCat("more than ", kMaxFilterNodes, " nodes in the filter"));
    }
    return absl::OkStatus();
  }
  static absl::Status CheckHeight(size_t p, size_t height) {
    if (height > kMaxFilterDepth) {
      return AtOffset(p, absl::StrCat("nested deeper than ", kMaxFilterDepth, " levels"));
    }
    return absl::OkStatus();
  }

  // filter := and ("OR" and)*; and := unary ("AND" unary)*. `level` counts the parentheses and
  // NOTs around the text being read, which bounds the recursion.
  absl::StatusOr<Parsed> ParseOr(size_t level) { return ParseChain(level, Kind::kOr); }
  absl::StatusOr<Parsed> ParseChain(size_t level, Kind kind) {
    const size_t start = SkipSpacesFrom(pos_);
    auto operand = [&]() -> absl::StatusOr<Parsed> {
      return kind == Kind::kOr ? ParseChain(level, Kind::kAnd) : ParseUnary(level);
    };
    TANDEM_ASSIGN_OR_RETURN(Parsed first, operand());
    const absl::string_view keyword = kind == Kind::kOr ? "or" : "and";
    if (!ConsumeKeyword(keyword)) return first;
    Parsed chain;
    chain.node.kind = kind;
    chain.height = first.height;
    chain.node.children.push_back(std::move(first.node));
    do {
      TANDEM_ASSIGN_OR_RETURN(Parsed next, operand());
      chain.height = std::max(chain.height, next.height);
      chain.node.children.push_back(std::move(next.node));
    } while (ConsumeKeyword(keyword));
    chain.height += 1;
    TANDEM_RETURN_IF_ERROR(CountNodes(start, 1));
    TANDEM_RETURN_IF_ERROR(CheckHeight(start, chain.height));
    return chain;
  }

  // unary := "NOT" unary | "(" filter ")" | field op
  absl::StatusOr<Parsed> ParseUnary(size_t level) {
    SkipSpaces();
    const size_t start = pos_;
    if (AtEnd()) return Expected(pos_, "a field name, '(' or NOT");
    if (text_[pos_] == '(' || (WordAt(pos_, "not") && !OperatorFollows(pos_ + 3))) {
      if (level >= kMaxFilterDepth) {
        return AtOffset(pos_, absl::StrCat("nested deeper than ", kMaxFilterDepth, " levels"));
      }
      if (text_[pos_] == '(') {
        ++pos_;
        TANDEM_ASSIGN_OR_RETURN(Parsed inner, ParseOr(level + 1));
        SkipSpaces();
        if (AtEnd() || text_[pos_] != ')') {
          return Expected(pos_, absl::StrCat("AND, OR or ')' to close the '(' at offset ", start));
        }
        ++pos_;
        return inner;
      }
      pos_ += 3;
      TANDEM_ASSIGN_OR_RETURN(Parsed child, ParseUnary(level + 1));
      TANDEM_RETURN_IF_ERROR(CountNodes(start, 1));
      TANDEM_RETURN_IF_ERROR(CheckHeight(start, child.height + 1));
      return Parsed{FilterNode::Not(std::move(child.node)), child.height + 1};
    }
    return ParseComparison();
  }

  // Whether an operator starts at p (after spaces): the word NOT before it is then a field name.
  bool OperatorFollows(size_t p) const {
    p = SkipSpacesFrom(p);
    if (p >= text_.size()) return false;
    const char c = text_[p];
    if (c == '=' || c == ':' || c == '!' || c == '<' || c == '>') return true;
    // "not IN (": a field named `in` is never followed by '('.
    return WordAt(p, "in") && SkipSpacesFrom(p + 2) < text_.size() &&
           text_[SkipSpacesFrom(p + 2)] == '(';
  }

  absl::StatusOr<Parsed> ParseComparison() {
    const size_t start = pos_;
    while (!AtEnd() && IsFieldChar(text_[pos_])) ++pos_;
    if (pos_ == start) return Expected(start, "a field name, '(' or NOT");
    std::string field(text_.substr(start, pos_ - start));
    SkipSpaces();
    const absl::string_view rest = text_.substr(pos_);
    Parsed out;
    if (absl::StartsWith(rest, "!=")) {
      pos_ += 2;
      TANDEM_ASSIGN_OR_RETURN(Value value, ParseValue("!="));
      TANDEM_ASSIGN_OR_RETURN(FilterNode node, TermOrRange(std::move(field), std::move(value)));
      out = Parsed{FilterNode::Not(std::move(node)), 2};
    } else if (absl::StartsWith(rest, ">=") || absl::StartsWith(rest, "<=") ||
               absl::StartsWith(rest, ">") || absl::StartsWith(rest, "<")) {
      const bool greater = rest[0] == '>';
      const bool inclusive = rest.size() > 1 && rest[1] == '=';
      const std::string op = std::string(rest.substr(0, inclusive ? 2 : 1));
      pos_ += op.size();
      TANDEM_ASSIGN_OR_RETURN(Value value, ParseValue(op));
      std::optional<int64_t> bound = ParseFilterInteger(value.text);
      if (!bound) return Expected(value.pos, absl::StrCat("an integer after '", op, "'"));
      if (!inclusive) {
        const int64_t edge =
            greater ? std::numeric_limits<int64_t>::max() : std::numeric_limits<int64_t>::min();
        if (*bound == edge) {
          return AtOffset(value.pos, absl::StrCat("no integer is ", greater ? "greater" : "less",
                                                  " than ", *bound));
        }
        *bound += greater ? 1 : -1;
      }
      out.node = greater ? FilterNode::Range(std::move(field), bound, std::nullopt)
                         : FilterNode::Range(std::move(field), std::nullopt, bound);
    } else if (absl::StartsWith(rest, "=") || absl::StartsWith(rest, ":")) {
      const std::string op(1, rest[0]);
      pos_ += 1;
      TANDEM_ASSIGN_OR_RETURN(Value value, ParseValue(op));
      TANDEM_ASSIGN_OR_RETURN(out.node, TermOrRange(std::move(field), std::move(value)));
    } else if (WordAt(pos_, "in")) {
      pos_ += 2;
      SkipSpaces();
      if (AtEnd() || text_[pos_] != '(') return Expected(pos_, "'(' after IN");
      ++pos_;
      std::vector<std::string> values;
      while (true) {
        TANDEM_ASSIGN_OR_RETURN(Value value, ParseValue("IN ("));
        if (!value.quoted && absl::StrContains(value.text, "..")) {
          return AtOffset(value.pos, "a range (lo..hi) inside IN; write field = lo..hi OR ...");
        }
        if (++in_values_ > kMaxFilterInValues) {
          return AtOffset(value.pos, absl::StrCat("more than ", kMaxFilterInValues,
                                                  " IN values in the filter"));
        }
        values.push_back(std::move(value.text));
        SkipSpaces();
        if (!AtEnd() && text_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (!AtEnd() && text_[pos_] == ')') {
          ++pos_;
          break;
        }
        return Expected(pos_, "',' or ')' in the IN list");
      }
      out.node = FilterNode::In(std::move(field), std::move(values));
    } else if (IsKeyword(field)) {
      // `AND b = 1`, `a = 1 OR OR b = 2`: a keyword where a comparison should start.
      return Expected(start, "a field name, '(' or NOT");
    } else {
      return Expected(pos_, "an operator (=, :, !=, <, <=, >, >= or IN) after the field name");
    }
    TANDEM_RETURN_IF_ERROR(CountNodes(start, out.height));
    return out;
  }

  // A bare or quoted value after `op`.
  absl::StatusOr<Value> ParseValue(absl::string_view op) {
    SkipSpaces();
    Value value;
    value.pos = pos_;
    if (!AtEnd() && text_[pos_] == '"') {
      value.quoted = true;
      ++pos_;
      while (true) {
        if (AtEnd()) {
          return Expected(pos_, absl::StrCat("'\"' to close the string at offset ", value.pos));
        }
        const char c = text_[pos_];
        if (c == '"') {
          ++pos_;
          return value;
        }
        if (c == '\\') {
          if (pos_ + 1 >= text_.size() || (text_[pos_ + 1] != '"' && text_[pos_ + 1] != '\\')) {
            return Expected(pos_ + 1, "'\"' or '\\' after a backslash (the only escapes)");
          }
          ++pos_;
        }
        value.text.push_back(text_[pos_]);
        ++pos_;
      }
    }
    const size_t end = BareEnd(pos_);
    if (end == pos_) return Expected(pos_, absl::StrCat("a value after '", op, "'"));
    value.text = std::string(text_.substr(pos_, end - pos_));
    pos_ = end;
    return value;
  }

  // `field = value`: a term, or a range when the value is bare and holds "..".
  absl::StatusOr<FilterNode> TermOrRange(std::string field, Value value) const {
    const size_t dots = value.quoted ? std::string::npos : value.text.find("..");
    if (dots == std::string::npos) return FilterNode::Term(std::move(field), std::move(value.text));
    std::optional<int64_t> bounds[2];
    const absl::string_view sides[2] = {absl::string_view(value.text).substr(0, dots),
                                        absl::string_view(value.text).substr(dots + 2)};
    for (int i = 0; i < 2; ++i) {
      if (sides[i].empty()) continue;
      bounds[i] = ParseFilterInteger(std::string_view(sides[i].data(), sides[i].size()));
      if (!bounds[i]) {
        const size_t at = value.pos + (i == 0 ? 0 : dots + 2);
        return AtOffset(at, absl::StrCat("expected an integer range lo..hi (either side may be "
                                         "empty), found \"",
                                         absl::CHexEscape(value.text), "\""));
      }
    }
    if (bounds[0] && bounds[1] && *bounds[0] > *bounds[1]) {
      return AtOffset(value.pos, absl::StrCat("the range ", value.text,
                                              " has its lower bound above its upper bound"));
    }
    return FilterNode::Range(std::move(field), bounds[0], bounds[1]);
  }

  absl::string_view text_;
  size_t pos_ = 0;
  size_t nodes_ = 0;
  size_t in_values_ = 0;
};

void AppendValue(std::string* out, const std::string& value) {
  const bool bare = !value.empty() && std::all_of(value.begin(), value.end(), IsBareChar) &&
                    !absl::StrContains(value, "..") && !IsKeyword(value);
  if (bare) {
    out->append(value);
    return;
  }
  out->push_back('"');
  for (const char c : value) {
    if (c == '"' || c == '\\') out->push_back('\\');
    out->push_back(c);
  }
  out->push_back('"');
}

void Append(std::string* out, const FilterNode& node);

// A child of an AND, OR or NOT, in parentheses when it is a chain the parent would split (a chain
// of one child is that child).
void AppendOperand(std::string* out, const FilterNode* node, bool wrap_and, bool wrap_or) {
  while ((node->kind == Kind::kAnd || node->kind == Kind::kOr) && node->children.size() == 1) {
    node = &node->children[0];
  }
  const bool wrap = (node->kind == Kind::kAnd && wrap_and) || (node->kind == Kind::kOr && wrap_or);
  if (wrap) out->push_back('(');
  Append(out, *node);
  if (wrap) out->push_back(')');
}

void Append(std::string* out, const FilterNode& node) {
  switch (node.kind) {
    case Kind::kTerm:
      absl::StrAppend(out, node.field, " = ");
      AppendValue(out, node.values[0]);
      return;
    case Kind::kIn:
      absl::StrAppend(out, node.field, " IN (");
      for (size_t i = 0; i < node.values.size(); ++i) {
        if (i > 0) out->append(", ");
        AppendValue(out, node.values[i]);
      }
      out->push_back(')');
      return;
    case Kind::kRange:
      if (node.lo && node.hi) {
        absl::StrAppend(out, node.field, " = ", *node.lo, "..", *node.hi);
      } else if (node.lo) {
        absl::StrAppend(out, node.field, " >= ", *node.lo);
      } else if (node.hi) {
        absl::StrAppend(out, node.field, " <= ", *node.hi);
      } else {
        absl::StrAppend(out, node.field, " = ..");
      }
      return;
    case Kind::kAnd:
    case Kind::kOr: {
      const bool is_and = node.kind == Kind::kAnd;
      for (size_t i = 0; i < node.children.size(); ++i) {
        if (i > 0) out->append(is_and ? " AND " : " OR ");
        AppendOperand(out, &node.children[i], /*wrap_and=*/is_and, /*wrap_or=*/true);
      }
      return;
    }
    case Kind::kNot: {
      const FilterNode& child = node.children[0];
      if (child.kind == Kind::kTerm) {
        absl::StrAppend(out, child.field, " != ");
        AppendValue(out, child.values[0]);
        return;
      }
      out->append("NOT ");
      AppendOperand(out, &child, true, true);
      return;
    }
  }
}

}  // namespace

absl::StatusOr<FilterNode> ParseFilter(std::string_view text) {
  if (text.size() > kMaxFilterTextBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("filter text of ", text.size(), " bytes; at most ", kMaxFilterTextBytes));
  }
  return Parser(absl::string_view(text.data(), text.size())).Parse();
}

std::string FilterToText(const FilterNode& filter) {
  std::string out;
  Append(&out, filter);
  return out;
}

}  // namespace tandem::filter
