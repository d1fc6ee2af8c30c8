#include "match/model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/enum_names.h"
#include "base/utf8.h"
#include "index/analyzer.h"

namespace tandem::match {
namespace {

bool IsNameChar(char c, bool first) {
  if (absl::ascii_isalpha(static_cast<unsigned char>(c)) || c == '_') return true;
  return !first && (absl::ascii_isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-');
}

// A name the parser reads bare, and that no keyword or operator word shadows.
bool IsBareName(absl::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (!IsNameChar(name[i], i == 0)) return false;
  }
  const std::string lower = absl::AsciiStrToLower(name);
  return lower != "and" && lower != "or" && lower != "prefix" && lower != "substring" &&
         lower != "contains";
}

// Well-formed UTF-8 sequences stay as they are; every other byte is written \xHH, so the text form
// is always valid UTF-8 (it travels in proto3 strings) and still parses back to the same bytes.
std::string QuoteBytes(absl::string_view bytes, char quote) {
  std::string out(1, quote);
  for (size_t i = 0; i < bytes.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x80) {
      const size_t length = base::Utf8SequenceLength(bytes, i);
      if (length == 0) {
        absl::StrAppendFormat(&out, "\\x%02x", c);
      } else {
        out.append(bytes.data() + i, length);
        i += length - 1;
      }
    } else if (c == static_cast<unsigned char>(quote) || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  out += quote;
  return out;
}

std::string FormatName(absl::string_view name) {
  return IsBareName(name) ? std::string(name) : QuoteBytes(name, '`');
}

// Where `bytes` stops being well-formed UTF-8, or npos.
size_t InvalidUtf8At(absl::string_view bytes) {
  for (size_t i = 0; i < bytes.size();) {
    const size_t length = base::Utf8SequenceLength(bytes, i);
    if (length == 0) return i;
    i += length;
  }
  return absl::string_view::npos;
}

// Names and strings are answered in proto3 string fields, which a conforming client refuses to
// parse unless they are UTF-8: one stored subscription that is not would break every listing.
absl::Status CheckUtf8(absl::string_view bytes, absl::string_view what, absl::string_view where) {
  const size_t at = InvalidUtf8At(bytes);
  if (at == absl::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("%s: the %s is not valid UTF-8 (byte %d: 0x%02x)", where, what, at + 1,
                      static_cast<unsigned char>(bytes[at])));
}

absl::Status CheckName(absl::string_view name, const Limits& limits, absl::string_view where) {
  if (name.empty())
    return absl::InvalidArgumentError(absl::StrCat(where, ": empty attribute name"));
  if (absl::Status s = CheckUtf8(name, "attribute name", where); !s.ok()) return s;
  if (name.size() > static_cast<size_t>(limits.max_value_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": attribute name of ", name.size(),
                                                   " bytes, above the limit of ",
                                                   limits.max_value_bytes));
  }
  return absl::OkStatus();
}

absl::Status CheckValue(const Value& value, const Limits& limits, absl::string_view where) {
  if (value.type == ValueType::kDouble && !std::isfinite(value.d)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": the value must be a finite number"));
  }
  if (value.type == ValueType::kString &&
      value.s.size() > static_cast<size_t>(limits.max_value_bytes)) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": string value of ", value.s.size(),
                                                   " bytes, above the limit of ",
                                                   limits.max_value_bytes));
  }
  if (value.type == ValueType::kString) return CheckUtf8(value.s, "string value", where);
  return absl::OkStatus();
}

absl::Status CheckLimits(const Limits& limits) {
  if (limits.max_constraints_per_filter < 1 ||
      limits.max_constraints_per_filter > kMaxConstraintsPerFilter) {
    return absl::InvalidArgumentError(
        absl::StrCat("max constraints per filter must be 1..", kMaxConstraintsPerFilter));
  }
  return absl::OkStatus();
}

}  // namespace

constexpr base::EnumName<Op> kOpNames[] = {{Op::kEq, "="},
                                           {Op::kNe, "!="},
                                           {Op::kLt, "<"},
                                           {Op::kGt, ">"},
                                           {Op::kLe, "<="},
                                           {Op::kGe, ">="},
                                           {Op::kPrefix, "prefix"},
                                           {Op::kSubstring, "substring"},
                                           {Op::kContains, "contains"}};
constexpr base::EnumName<ValueType> kValueTypeNames[] = {
    {ValueType::kInt, "int"}, {ValueType::kDouble, "double"}, {ValueType::kString, "string"}};

absl::string_view OpName(Op op) { return base::NameOf(kOpNames, op, "?"); }

absl::string_view ValueTypeName(ValueType type) { return base::NameOf(kValueTypeNames, type, "?"); }

absl::StatusOr<Predicate> NormalizePredicate(Predicate predicate, const index::Analyzer* analyzer,
                                             const Limits& limits) {
  if (absl::Status s = CheckLimits(limits); !s.ok()) return s;
  if (predicate.filters.empty()) {
    return absl::InvalidArgumentError("the predicate has no filter");
  }
  if (predicate.filters.size() > static_cast<size_t>(limits.max_filters_per_predicate)) {
    return absl::InvalidArgumentError(absl::StrCat("the predicate has ", predicate.filters.size(),
                                                   " filters, above the limit of ",
                                                   limits.max_filters_per_predicate));
  }
  std::vector<std::string> terms;
  for (size_t f = 0; f < predicate.filters.size(); ++f) {
    Filter& filter = predicate.filters[f];
    if (filter.constraints.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("filter ", f + 1, " has no constraint"));
    }
    std::vector<Constraint> out;
    out.reserve(filter.constraints.size());
    for (size_t c = 0; c < filter.constraints.size(); ++c) {
      Constraint& constraint = filter.constraints[c];
      const std::string where =
          absl::StrCat("filter ", f + 1, ", constraint ", c + 1, " (", FormatName(constraint.name),
                       " ", OpName(constraint.op), ")");
      if (absl::Status s = CheckName(constraint.name, limits, where); !s.ok()) return s;
      if (absl::Status s = CheckValue(constraint.value, limits, where); !s.ok()) return s;
      const bool is_terms = constraint.name == kTermsName;
      const bool is_string = constraint.value.type == ValueType::kString;
      switch (constraint.op) {
        case Op::kContains:
          if (!is_terms) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": contains applies only to `terms`"));
          }
          if (!is_string) {
            return absl::InvalidArgumentError(absl::StrCat(
                where, ": contains takes a string, not a ", ValueTypeName(constraint.value.type)));
          }
          break;
        case Op::kLt:
        case Op::kGt:
        case Op::kLe:
        case Op::kGe:
          if (is_string) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ": ", OpName(constraint.op),
                             " compares numbers; strings take =, !=, prefix or substring"));
          }
          break;
        case Op::kPrefix:
        case Op::kSubstring:
          if (!is_string) {
            return absl::InvalidArgumentError(absl::StrCat(where, ": ", OpName(constraint.op),
                                                           " takes a string, not a ",
                                                           ValueTypeName(constraint.value.type)));
          }
          break;
        case Op::kEq:
        case Op::kNe:
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat(where, ": unknown operator ", static_cast<int>(constraint.op)));
      }
      if (is_terms && constraint.op != Op::kContains) {
        return absl::InvalidArgumentError(absl::StrCat(where, ": `terms` takes only contains"));
      }
      if (constraint.op != Op::kContains) {
        out.push_back(std::move(constraint));
        continue;
      }
      if (analyzer == nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(where, ": no analyzer for contains"));
      }
      terms.clear();
      analyzer->Analyze(constraint.value.s, &terms);
      if (terms.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": ", QuoteBytes(constraint.value.s, '"'),
                         " analyzes to no term (only stop words or separators)"));
      }
      for (std::string& term : terms) {
        const bool seen = std::any_of(out.begin(), out.end(), [&](const Constraint& o) {
          return o.op == Op::kContains && o.value.s == term;
        });
        if (!seen)
          out.push_back(
              Constraint{std::string(kTermsName), Op::kContains, Value::String(std::move(term))});
      }
    }
    if (out.size() > static_cast<size_t>(limits.max_constraints_per_filter)) {
      return absl::InvalidArgumentError(
          absl::StrCat("filter ", f + 1, " has ", out.size(), " constraints", " (after analysis)",
                       ", above the limit of ", limits.max_constraints_per_filter));
    }
    filter.constraints = std::move(out);
  }
  return predicate;
}

absl::StatusOr<Event> MakeEvent(std::vector<Attribute> attributes, absl::string_view text,
                                const index::Analyzer* analyzer, const Limits& limits) {
  if (attributes.size() > static_cast<size_t>(limits.max_attributes_per_event)) {
    return absl::InvalidArgumentError(absl::StrCat("the document has ", attributes.size(),
                                                   " attributes, above the limit of ",
                                                   limits.max_attributes_per_event));
  }
  Event event;
  for (const Attribute& a : attributes) {
    const std::string where = absl::StrCat("attribute ", FormatName(a.name));
    if (absl::Status s = CheckName(a.name, limits, where); !s.ok()) return s;
    if (a.name == kTermsName) {
      return absl::InvalidArgumentError(
          "attribute `terms` is reserved: it holds the analyzed terms of the document's text");
    }
    if (absl::Status s = CheckValue(a.value, limits, where); !s.ok()) return s;
  }
  std::sort(attributes.begin(), attributes.end(),
            [](const Attribute& x, const Attribute& y) { return x.name < y.name; });
  for (size_t i = 1; i < attributes.size(); ++i) {
    if (attributes[i].name == attributes[i - 1].name) {
      return absl::InvalidArgumentError(
          absl::StrCat("attribute ", FormatName(attributes[i].name), " appears more than once"));
    }
  }
  event.attributes = std::move(attributes);
  if (!text.empty()) {
    if (analyzer == nullptr) return absl::FailedPreconditionError("no analyzer for the text");
    analyzer->Analyze(text, &event.terms);
    std::sort(event.terms.begin(), event.terms.end());
    event.terms.erase(std::unique(event.terms.begin(), event.terms.end()), event.terms.end());
    if (event.terms.size() > static_cast<size_t>(limits.max_terms_per_event)) {
      return absl::InvalidArgumentError(absl::StrCat("the document's text has ", event.terms.size(),
                                                     " distinct terms, above the limit of ",
                                                     limits.max_terms_per_event));
    }
  }
  return event;
}

std::string FormatValue(const Value& value) {
  switch (value.type) {
    case ValueType::kInt:
      return absl::StrCat(value.i);
    case ValueType::kDouble: {
      std::string s = absl::StrFormat("%.17g", value.d);
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // stays a double
      return s;
    }
    case ValueType::kString:
      return QuoteBytes(value.s, '"');
  }
  return "?";
}

std::string FormatPredicate(const Predicate& predicate) {
  std::string out;
  const bool group = predicate.filters.size() > 1;
  for (size_t f = 0; f < predicate.filters.size(); ++f) {
    const Filter& filter = predicate.filters[f];
    if (f > 0) out += " OR ";
    const bool paren = group && filter.constraints.size() > 1;
    if (paren) out += '(';
    for (size_t c = 0; c < filter.constraints.size(); ++c) {
      const Constraint& constraint = filter.constraints[c];
      if (c > 0) out += " AND ";
      absl::StrAppend(&out, FormatName(constraint.name), " ", OpName(constraint.op), " ",
                      FormatValue(constraint.value));
    }
    if (paren) out += ')';
  }
  return out;
}

bool FilterMatches(const Filter& filter, const Event& event) {
  for (const Constraint& c : filter.constraints) {
    if (c.op == Op::kContains) {
      if (!std::binary_search(event.terms.begin(), event.terms.end(), c.value.s)) return false;
      continue;
    }
    auto it =
        std::lower_bound(event.attributes.begin(), event.attributes.end(), c.name,
                         [](const Attribute& a, const std::string& name) { return a.name < name; });
    if (it == event.attributes.end() || it->name != c.name) return false;
    if (!Satisfies(c.op, c.value.ref(), it->value.ref())) return false;
  }
  return true;
}

bool PredicateMatches(const Predicate& predicate, const Event& event) {
  return std::any_of(predicate.filters.begin(), predicate.filters.end(),
                     [&](const Filter& f) { return FilterMatches(f, event); });
}

}  // namespace tandem::match
