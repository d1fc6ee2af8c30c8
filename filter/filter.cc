// File: filter.cc
//
// Filter nodes, their index-free checks, and evaluation: the filter is first bound to the index
// (every field, value and bound resolved to dictionary entries, every error found) and only then
// evaluated, so that errors never depend on the data and evaluation may stop early on an empty
// intermediate result.
#include "filter/filter.h"

#include <algorithm>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "base/enum_names.h"
#include "base/status_macros.h"

namespace tandem::filter {
namespace {

using Kind = FilterNode::Kind;

absl::Status Invalid(absl::string_view what) {
  return absl::InvalidArgumentError(absl::StrCat("filter: ", what));
}

bool IsFieldName(const std::string& name) {
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '-';
  });
}

struct Counts {
  size_t nodes = 0;
  size_t in_values = 0;
};

absl::Status Validate(const FilterNode& node, size_t depth, Counts* counts) {
  if (depth > kMaxFilterDepth) {
    return Invalid(absl::StrCat("nested deeper than ", kMaxFilterDepth, " levels"));
  }
  if (++counts->nodes > kMaxFilterNodes) {
    return Invalid(absl::StrCat("more than ", kMaxFilterNodes, " nodes"));
  }
  const std::string kind(FilterKindName(node.kind));
  switch (node.kind) {
    case Kind::kTerm:
    case Kind::kIn:
    case Kind::kRange:
      if (!IsFieldName(node.field)) {
        return Invalid(absl::StrCat("a ", kind, " node's field name \"",
                                    absl::CHexEscape(node.field),
                                    "\" is not letters, digits, '_', '.' and '-'"));
      }
      if (!node.children.empty()) return Invalid(absl::StrCat("a ", kind, " node with children"));
      if (node.kind == Kind::kRange) {
        if (!node.values.empty()) return Invalid("a range node with values");
        if (node.lo && node.hi && *node.lo > *node.hi) {
          return Invalid(absl::StrCat("the range on \"", node.field, "\" has its lower bound ",
                                      *node.lo, " above its upper bound ", *node.hi));
        }
        return absl::OkStatus();
      }
      if (node.lo || node.hi) return Invalid(absl::StrCat("a ", kind, " node with range bounds"));
      if (node.kind == Kind::kTerm && node.values.size() != 1) {
        return Invalid(absl::StrCat("a term node on \"", node.field, "\" with ", node.values.size(),
                                    " values; it takes one"));
      }
      if (node.values.empty()) {
        return Invalid(absl::StrCat("an IN node on \"", node.field, "\" without values"));
      }
      counts->in_values += node.kind == Kind::kIn ? node.values.size() : 0;
      if (counts->in_values > kMaxFilterInValues) {
        return Invalid(absl::StrCat("more than ", kMaxFilterInValues, " IN values"));
      }
      return absl::OkStatus();
    case Kind::kAnd:
    case Kind::kOr:
    case Kind::kNot:
      if (!node.field.empty() || !node.values.empty() || node.lo || node.hi) {
        return Invalid(absl::StrCat("an ", kind, " node with a field, values or bounds"));
      }
      if (node.kind == Kind::kNot && node.children.size() != 1) {
        return Invalid(
            absl::StrCat("a not node with ", node.children.size(), " children; it takes one"));
      }
      if (node.children.empty())
        return Invalid(absl::StrCat("an ", kind, " node without children"));
      for (const FilterNode& child : node.children) {
        TANDEM_RETURN_IF_ERROR(Validate(child, depth + 1, counts));
      }
      return absl::OkStatus();
  }
  return Invalid(absl::StrCat("unknown node kind ", static_cast<int>(node.kind)));
}

// A filter resolved against an index: a leaf is the OR of dictionary entries' bitmaps.
struct Bound {
  Kind kind = Kind::kIn;  // kIn for every leaf, kAnd, kOr or kNot
  std::vector<BitmapView> columns;
  std::vector<uint32_t> column_numbers;  // the same columns' FilterColumnNumber order
  std::vector<Bound> children;
};

// The number of the first column of field f in FilterColumnNumber order.
uint32_t FirstColumnNumber(const AttributeIndex& attributes, const AttributeField* field) {
  uint32_t first = 0;
  for (const AttributeField& f : attributes.fields()) {
    if (&f == field) break;
    first += static_cast<uint32_t>(f.columns.num_columns());
  }
  return first;
}

absl::Status UnknownField(const FilterNode& node, const AttributeIndex& attributes) {
  if (attributes.fields().empty()) {
    return Invalid(
        absl::StrCat("unknown field \"", node.field, "\": this index stores no attributes"));
  }
  std::string fields;
  for (const AttributeField& f : attributes.fields()) {
    absl::StrAppend(&fields, fields.empty() ? "" : ", ", f.name, " (",
                    std::string(AttributeKindName(f.kind)), ")");
  }
  return Invalid(
      absl::StrCat("unknown field \"", node.field, "\"; this index's fields are ", fields));
}

// The entries of a term or IN on an integer field: each value an integer in a bucket of one value.
// `part`: the index is one part of a collection, where a value no document of this part has
// matches nothing here (EvaluateFilterOnPart).
absl::Status BindIntegers(const FilterNode& node, const AttributeField& field, bool part,
                          std::vector<uint32_t>* ids) {
  for (const std::string& text : node.values) {
    const std::optional<int64_t> value = ParseFilterInteger(text);
    if (!value) {
      return Invalid(absl::StrCat("\"", absl::CHexEscape(text), "\" is not an integer (field \"",
                                  field.name, "\" is an integer field)"));
    }
    const std::optional<uint32_t> id = field.BucketOf(*value);
    if (!id && part) continue;
    if (!id) {
      return Invalid(absl::StrCat("unknown value ", *value, " of integer field \"", field.name,
                                  "\": no document has it"));
    }
    const IntegerBucket& b = field.buckets[*id];
    if (b.lo != b.hi) {
      return Invalid(absl::StrCat(field.name, " = ", *value, " cuts through bucket ",
                                  field.BucketText(*id), " of integer field \"", field.name,
                                  "\"; terms and ranges must follow its buckets: the nearest is ",
                                  field.name, " = ", b.lo, "..", b.hi));
    }
    ids->push_back(*id);
  }
  return absl::OkStatus();
}

// The buckets of a range: each bound an edge of a bucket or outside every bucket.
absl::Status BindRange(const FilterNode& node, const AttributeField& field,
                       std::vector<uint32_t>* ids) {
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  auto cut = [&](bool lower, uint32_t id) {
    const IntegerBucket& b = field.buckets[id];
    std::vector<std::string> nearest;
    if (lower) {
      nearest.push_back(absl::StrCat(b.lo));
      if (b.hi < kMax) nearest.push_back(absl::StrCat(b.hi + 1));
    } else {
      if (b.lo > kMin) nearest.push_back(absl::StrCat(b.lo - 1));
      nearest.push_back(absl::StrCat(b.hi));
    }
    return Invalid(absl::StrCat(
        "the range ", FilterToText(node), " cuts through bucket ", field.BucketText(id),
        " of integer field \"", field.name, "\"; ranges must follow its buckets: the nearest ",
        lower ? "lower" : "upper", " bounds are ", absl::StrJoin(nearest, " and ")));
  };
  if (node.lo) {
    const std::optional<uint32_t> id = field.BucketOf(*node.lo);
    if (id && field.buckets[*id].lo != *node.lo) return cut(true, *id);
  }
  if (node.hi) {
    const std::optional<uint32_t> id = field.BucketOf(*node.hi);
    if (id && field.buckets[*id].hi != *node.hi) return cut(false, *id);
  }
  const auto& buckets = field.buckets;
  const auto first =
      std::partition_point(buckets.begin(), buckets.end(),
                           [&](const IntegerBucket& b) { return node.lo && b.lo < *node.lo; });
  const auto last = std::partition_point(
      first, buckets.end(), [&](const IntegerBucket& b) { return !node.hi || b.hi <= *node.hi; });
  for (auto it = first; it != last; ++it) ids->push_back(uint32_t(it - buckets.begin()));
  return absl::OkStatus();
}

absl::StatusOr<Bound> Bind(const FilterNode& node, const AttributeIndex& attributes,
                           bool part = false) {
  Bound bound;
  bound.kind = node.kind;
  if (node.kind == Kind::kAnd || node.kind == Kind::kOr || node.kind == Kind::kNot) {
    for (const FilterNode& child : node.children) {
      TANDEM_ASSIGN_OR_RETURN(bound.children.emplace_back(), Bind(child, attributes, part));
    }
    return bound;
  }
  bound.kind = Kind::kIn;
  const AttributeField* field = attributes.Find(node.field);
  if (field == nullptr) return UnknownField(node, attributes);
  std::vector<uint32_t> ids;
  if (field->kind == AttributeKind::kKeyword) {
    if (node.kind == Kind::kRange) {
      return Invalid(absl::StrCat("the range ", FilterToText(node), " is on keyword field \"",
                                  field->name, "\"; ranges take integer fields"));
    }
    for (const std::string& value : node.values) {
      const std::optional<uint32_t> id = field->ValueId(value);
      if (!id && part) continue;
      if (!id) {
        return Invalid(absl::StrCat("unknown value \"", absl::CHexEscape(value),
                                    "\" of keyword field \"", field->name, "\""));
      }
      ids.push_back(*id);
    }
  } else if (node.kind == Kind::kRange) {
    TANDEM_RETURN_IF_ERROR(BindRange(node, *field, &ids));
  } else {
    TANDEM_RETURN_IF_ERROR(BindIntegers(node, *field, part, &ids));
  }
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  const uint32_t first = FirstColumnNumber(attributes, field);
  for (const uint32_t id : ids) {
    const BitmapView column = attributes.Column(*field, id);
    if (column.words().empty()) continue;
    bound.columns.push_back(column);
    bound.column_numbers.push_back(first + static_cast<uint32_t>(field->columns.Find(id)));
  }
  return bound;
}

bool IsEmpty(BitmapView view) { return view.words().empty(); }  // the canonical empty bitmap

// The OR of a field's entries (OrMany: dense when they are large, else a pairwise tree).
absl::StatusOr<Bitmap> OrAll(std::vector<BitmapView> views, const AttributeIndex& attributes) {
  if (views.empty()) return NoRows(attributes.codec(), attributes.num_docs());
  return OrMany(views);
}

absl::StatusOr<Bitmap> Evaluate(const Bound& node, const AttributeIndex& attributes) {
  switch (node.kind) {
    case Kind::kNot:
      // NOT NOT x is x.
      if (node.children[0].kind == Kind::kNot) {
        return Evaluate(node.children[0].children[0], attributes);
      }
      {
        TANDEM_ASSIGN_OR_RETURN(Bitmap child, Evaluate(node.children[0], attributes));
        return Not(child);
      }
    case Kind::kOr: {
      // Every leaf's columns and every other child's bitmap in one pairwise OR.
      std::vector<Bitmap> evaluated;
      evaluated.reserve(node.children.size());
      std::vector<BitmapView> views;
      for (const Bound& child : node.children) {
        if (child.kind == Kind::kIn) {
          views.insert(views.end(), child.columns.begin(), child.columns.end());
        } else {
          TANDEM_ASSIGN_OR_RETURN(evaluated.emplace_back(), Evaluate(child, attributes));
        }
      }
      views.insert(views.end(), evaluated.begin(), evaluated.end());
      return OrAll(std::move(views), attributes);
    }
    case Kind::kAnd: {
      // a AND b AND NOT c AND NOT d: the positive children intersected smallest first, then each
      // negative one removed by AndNot; with no positive child, NOT (c OR d).
      std::vector<Bitmap> positive;
      std::vector<const Bound*> negative;
      for (const Bound& child : node.children) {
        if (child.kind == Kind::kNot) {
          negative.push_back(&child.children[0]);
          continue;
        }
        TANDEM_ASSIGN_OR_RETURN(positive.emplace_back(), Evaluate(child, attributes));
        if (IsEmpty(positive.back())) return std::move(positive.back());
      }
      if (positive.empty()) {
        std::vector<Bitmap> evaluated;
        evaluated.reserve(negative.size());
        for (const Bound* child : negative) {
          TANDEM_ASSIGN_OR_RETURN(evaluated.emplace_back(), Evaluate(*child, attributes));
        }
        TANDEM_ASSIGN_OR_RETURN(
            Bitmap any,
            OrAll(std::vector<BitmapView>(evaluated.begin(), evaluated.end()), attributes));
        return Not(any);
      }
      std::sort(positive.begin(), positive.end(), [](const Bitmap& a, const Bitmap& b) {
        return a.words().size() < b.words().size();
      });
      Bitmap result = std::move(positive[0]);
      for (size_t i = 1; i < positive.size() && !IsEmpty(result); ++i) {
        TANDEM_ASSIGN_OR_RETURN(result, And(result, positive[i]));
      }
      for (const Bound* child : negative) {
        if (IsEmpty(result)) break;
        TANDEM_ASSIGN_OR_RETURN(Bitmap removed, Evaluate(*child, attributes));
        TANDEM_ASSIGN_OR_RETURN(result, AndNot(result, removed));
      }
      return result;
    }
    default:
      return OrAll(node.columns, attributes);
  }
}

// Emits `node` in postfix: every node leaves one word on the stack. `depth`: the stack below it.
void Emit(const Bound& node, uint32_t depth, FilterProgram* program) {
  using Code = FilterOp::Code;
  auto op = [&](Code code, uint32_t column = 0) { program->ops.push_back({code, column}); };
  auto grow = [&](uint32_t size) { program->max_stack = std::max(program->max_stack, size); };
  switch (node.kind) {
    case Kind::kNot:
      Emit(node.children[0], depth, program);
      op(Code::kNot);
      return;
    case Kind::kOr:
    case Kind::kAnd:
      for (size_t i = 0; i < node.children.size(); ++i) {
        const Bound& child = node.children[i];
        const bool and_not = node.kind == Kind::kAnd && i > 0 && child.kind == Kind::kNot;
        Emit(and_not ? child.children[0] : child, depth + (i > 0 ? 1 : 0), program);
        if (i > 0) op(and_not ? Code::kAndNot : node.kind == Kind::kAnd ? Code::kAnd : Code::kOr);
      }
      return;
    default:
      if (node.column_numbers.empty()) {
        op(Code::kEmpty);
        grow(depth + 1);
        return;
      }
      for (size_t i = 0; i < node.column_numbers.size(); ++i) {
        op(Code::kColumn, node.column_numbers[i]);
        grow(depth + 1 + (i > 0 ? 1 : 0));
        if (i > 0) op(Code::kOr);
      }
  }
}

constexpr base::EnumName<Kind> kKindNames[] = {{Kind::kTerm, "term"},   {Kind::kIn, "in"},
                                               {Kind::kRange, "range"}, {Kind::kAnd, "and"},
                                               {Kind::kOr, "or"},       {Kind::kNot, "not"}};

}  // namespace

FilterNode FilterNode::Term(std::string field, std::string value) {
  FilterNode node;
  node.kind = Kind::kTerm;
  node.field = std::move(field);
  node.values.push_back(std::move(value));
  return node;
}

FilterNode FilterNode::In(std::string field, std::vector<std::string> values) {
  FilterNode node;
  node.kind = Kind::kIn;
  node.field = std::move(field);
  node.values = std::move(values);
  return node;
}

FilterNode FilterNode::Range(std::string field, std::optional<int64_t> lo,
                             std::optional<int64_t> hi) {
  FilterNode node;
  node.kind = Kind::kRange;
  node.field = std::move(field);
  node.lo = lo;
  node.hi = hi;
  return node;
}

FilterNode FilterNode::And(std::vector<FilterNode> children) {
  FilterNode node;
  node.kind = Kind::kAnd;
  node.children = std::move(children);
  return node;
}

FilterNode FilterNode::Or(std::vector<FilterNode> children) {
  FilterNode node;
  node.kind = Kind::kOr;
  node.children = std::move(children);
  return node;
}

FilterNode FilterNode::Not(FilterNode child) {
  FilterNode node;
  node.kind = Kind::kNot;
  node.children.push_back(std::move(child));
  return node;
}

std::string_view FilterKindName(FilterNode::Kind kind) { return base::NameOf(kKindNames, kind); }

std::optional<int64_t> ParseFilterInteger(std::string_view text) {
  size_t i = 0;
  const bool negative = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) i = 1;
  if (i == text.size()) return std::nullopt;
  // Accumulated as a negative number, whose range includes int64's minimum.
  int64_t value = 0;
  for (; i < text.size(); ++i) {
    if (!absl::ascii_isdigit(text[i])) return std::nullopt;
    const int digit = text[i] - '0';
    if (value < (std::numeric_limits<int64_t>::min() + digit) / 10) return std::nullopt;
    value = value * 10 - digit;
  }
  if (!negative) {
    if (value == std::numeric_limits<int64_t>::min()) return std::nullopt;
    value = -value;
  }
  return value;
}

absl::Status ValidateFilter(const FilterNode& filter) {
  Counts counts;
  return Validate(filter, 1, &counts);
}

absl::StatusOr<Bitmap> EvaluateFilter(const FilterNode& filter, const AttributeIndex& attributes) {
  TANDEM_RETURN_IF_ERROR(ValidateFilter(filter));
  TANDEM_ASSIGN_OR_RETURN(Bound bound, Bind(filter, attributes));
  return Evaluate(bound, attributes);
}

absl::StatusOr<Bitmap> EvaluateFilterOnPart(const FilterNode& filter,
                                            const AttributeIndex& attributes) {
  TANDEM_RETURN_IF_ERROR(ValidateFilter(filter));
  TANDEM_ASSIGN_OR_RETURN(Bound bound, Bind(filter, attributes, /*part=*/true));
  return Evaluate(bound, attributes);
}

absl::StatusOr<FilterProgram> CompileFilter(const FilterNode& filter,
                                            const AttributeIndex& attributes) {
  TANDEM_RETURN_IF_ERROR(ValidateFilter(filter));
  TANDEM_ASSIGN_OR_RETURN(Bound bound, Bind(filter, attributes));
  FilterProgram program;
  Emit(bound, 0, &program);
  // Depth 64 bounds the stack at 65 words plus one for a leaf's second column.
  if (program.max_stack > kMaxFilterProgramStack) {
    return Invalid(absl::StrCat("needs a stack of ", program.max_stack, " words, at most ",
                                kMaxFilterProgramStack));
  }
  return program;
}

BitmapView FilterColumn(const AttributeIndex& attributes, uint32_t number) {
  for (const AttributeField& f : attributes.fields()) {
    if (number < f.columns.num_columns()) return f.columns.Column(number);
    number -= static_cast<uint32_t>(f.columns.num_columns());
  }
  return BitmapView(attributes.codec(), attributes.num_docs(), {});
}

uint64_t FilterProgramWords(const FilterProgram& program, const AttributeIndex& attributes) {
  uint64_t words = 0;
  for (const FilterOp& op : program.ops) {
    if (op.code == FilterOp::Code::kColumn) {
      words += FilterColumn(attributes, op.column).words().size();
    }
  }
  return words;
}

std::vector<uint32_t> RunFilterProgram(const FilterProgram& program,
                                       const AttributeIndex& attributes) {
  const uint32_t num_docs = attributes.num_docs();
  const size_t num_words = (uint64_t{num_docs} + 31) / 32;
  std::vector<std::vector<uint32_t>> stack;
  for (const FilterOp& op : program.ops) {
    switch (op.code) {
      case FilterOp::Code::kColumn: {
        std::vector<uint64_t> dense((uint64_t{num_docs} + 63) / 64);
        FilterColumn(attributes, op.column).ToDense(dense);
        std::vector<uint32_t>& words = stack.emplace_back(num_words);
        for (size_t j = 0; j < num_words; ++j) words[j] = uint32_t(dense[j / 2] >> (32 * (j % 2)));
        break;
      }
      case FilterOp::Code::kEmpty:
        stack.emplace_back(num_words);
        break;
      case FilterOp::Code::kNot:
        for (uint32_t& w : stack.back()) w = ~w;
        break;
      default: {
        std::vector<uint32_t> b = std::move(stack.back());
        stack.pop_back();
        std::vector<uint32_t>& a = stack.back();
        for (size_t j = 0; j < num_words; ++j) {
          a[j] = op.code == FilterOp::Code::kAnd  ? a[j] & b[j]
                 : op.code == FilterOp::Code::kOr ? a[j] | b[j]
                                                  : a[j] & ~b[j];
        }
      }
    }
  }
  std::vector<uint32_t> out = stack.empty() ? std::vector<uint32_t>(num_words) : stack.back();
  if (num_docs % 32 != 0) out.back() &= (uint32_t{1} << (num_docs % 32)) - 1;
  return out;
}

double FilterSelectivity(BitmapView docs) {
  return docs.num_rows() == 0 ? 0.0 : double(docs.Count()) / double(docs.num_rows());
}

}  // namespace tandem::filter
