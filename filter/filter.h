// File: filter.h
//
// Filters: a boolean expression over an index's attribute fields (index/attribute_index.h) that
// selects documents without touching scores, as Lucene's `filter` clause beside a query. A filter
// is a tree of `FilterNode`s (the shape its protobuf form takes), written as text on the command
// line, and evaluated to the bitmap of its documents with the compressed-domain operations of
// index/bitmap.h only: a leaf is the OR of its dictionary entries' bitmaps, AND and OR combine
// children, NOT is `Not`, and `a AND NOT b` is `AndNot(a, b)`.
//
//   TANDEM_ASSIGN_OR_RETURN(FilterNode filter,
//                           ParseFilter("year >= 2002 AND domain:example.com"));
//   TANDEM_ASSIGN_OR_RETURN(Bitmap docs, EvaluateFilter(filter, *index.attributes()));
//   docs.ForEachRow([](uint32_t doc) { ... });
//
// Text form (keywords case-insensitive; AND binds tighter than OR, NOT tighter than both):
//
//   filter  := and ("OR" and)*
//   and     := unary ("AND" unary)*
//   unary   := "NOT" unary | "(" filter ")" | field op
//   op      := ("=" | ":") value             a term, or a range when value is lo..hi
//            | "!=" value                    NOT (field = value)
//            | (">=" | ">" | "<=" | "<") integer
//            | "IN" "(" value ("," value)* ")"
//   field   := [A-Za-z0-9_.-]+
//   value   := bare | "quoted"                quoted: any bytes, with \" and \\ escapes
//   bare    := ([A-Za-z0-9._\-@/+] | bytes >= 0x80)+
//   range   := a bare value lo..hi, lo.., ..hi or .. (inclusive; an empty side is open)
//   integer := [+-]?[0-9]+, in int64
//
// A bare value holding ".." is a range; a keyword value holding ".." is quoted. `>` and `<` become
// inclusive bounds (`year > 2001` is `year >= 2002`). A field named `not` is read as a field when
// an operator follows it. Limits: text of at most 64 KiB, at most 1,024 nodes, 1,024 IN values in
// all, and 64 levels of nesting.
//
// Binding to an index: a keyword field takes terms and IN of its dictionary's values; an integer
// field takes integers, and ranges whose bounds fall on its buckets' edges or between buckets (a
// bucket of one value is exact), so the bitmaps answer every filter exactly. A document matches a
// term when any of its values is that value; NOT and != keep every other document, those without
// a value of the field included (Lucene's must_not).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "filter/attribute_index.h"
#include "filter/bitmap.h"

namespace tandem::filter {

struct FilterNode {
  enum class Kind : uint8_t {
    kTerm,   // field = values[0]
    kIn,     // field IN (values...), at least one
    kRange,  // lo <= field <= hi, integer fields; either bound may be open
    kAnd,    // children, at least one
    kOr,     // children, at least one
    kNot,    // children[0], exactly one
  };

  Kind kind = Kind::kTerm;
  std::string field;
  std::vector<std::string> values;  // as text; integers in decimal
  std::optional<int64_t> lo, hi;
  std::vector<FilterNode> children;

  bool operator==(const FilterNode&) const = default;

  static FilterNode Term(std::string field, std::string value);
  static FilterNode In(std::string field, std::vector<std::string> values);
  static FilterNode Range(std::string field, std::optional<int64_t> lo, std::optional<int64_t> hi);
  static FilterNode And(std::vector<FilterNode> children);
  static FilterNode Or(std::vector<FilterNode> children);
  static FilterNode Not(FilterNode child);
};

// "term", "in", "range", "and", "or", "not".
std::string_view FilterKindName(FilterNode::Kind kind);

// A value as an integer of the filter language, [+-]?[0-9]+ within int64; nullopt otherwise.
std::optional<int64_t> ParseFilterInteger(std::string_view text);

inline constexpr size_t kMaxFilterTextBytes = 64 * 1024;
inline constexpr size_t kMaxFilterNodes = 1024;
inline constexpr size_t kMaxFilterInValues = 1024;  // over the whole filter
inline constexpr size_t kMaxFilterDepth = 64;       // nodes on the longest root-to-leaf path

// The text form above. INVALID_ARGUMENT naming the character offset and what was expected there,
// or the limit passed.
absl::StatusOr<FilterNode> ParseFilter(std::string_view text);

// The text form of a valid filter (ValidateFilter), which ParseFilter reads back to the same tree
// when every AND and OR has at least two children (as ParseFilter's trees do; one child is
// written as the child alone).
std::string FilterToText(const FilterNode& filter);

// The checks that need no index: each node's kind and the members it uses (the others empty), a
// field of [A-Za-z0-9_.-]+, lo <= hi, and the limits. INVALID_ARGUMENT naming the problem. Filters
// built in code or received in a request pass this before anything else; EvaluateFilter does it.
absl::Status ValidateFilter(const FilterNode& filter);

// The documents that match `filter`, a bitmap in the index's codec of num_docs() rows.
// INVALID_ARGUMENT naming the problem: what ValidateFilter refuses, an unknown field (naming the
// index's fields), a keyword value not in the field's dictionary, a range on a keyword field, a
// value of an integer field that is not an integer or is in no bucket, and a term or range bound
// that falls inside a bucket of several values (naming the bucket and the nearest bounds that
// follow it). A valid filter that no document matches gives an empty bitmap. Errors do not depend
// on which documents have which values.
absl::StatusOr<Bitmap> EvaluateFilter(const FilterNode& filter, const AttributeIndex& attributes);

// EvaluateFilter for an index that is one part of a collection (a live index's segment): a keyword
// or integer value that no document of this part has matches nothing here, as other parts may
// hold it. The other errors are EvaluateFilter's.
absl::StatusOr<Bitmap> EvaluateFilterOnPart(const FilterNode& filter,
                                            const AttributeIndex& attributes);

// A filter compiled for evaluation a few rows at a time straight from the compressed columns, as
// gpu/filter_eval.h does on the device (one thread per chunk of 31 rows): a postfix program over a
// stack of row words. kColumn pushes the rows of one column (numbered in attribute order: the
// columns of field 0, then field 1, ...; FilterColumn), kEmpty pushes no rows, kNot flips the top,
// kAnd, kOr and kAndNot (a AND NOT b) pop b and replace a. Rows past num_docs are cleared at the
// end.
struct FilterOp {
  enum class Code : uint8_t { kColumn, kEmpty, kNot, kAnd, kOr, kAndNot };
  Code code = Code::kEmpty;
  uint32_t column = 0;  // kColumn only
};
struct FilterProgram {
  std::vector<FilterOp> ops;
  uint32_t max_stack = 0;  // the deepest the stack gets, at most kMaxFilterProgramStack
};
inline constexpr uint32_t kMaxFilterProgramStack = kMaxFilterDepth + 2;

// `filter` bound to `attributes` and compiled, with EvaluateFilter's errors.
absl::StatusOr<FilterProgram> CompileFilter(const FilterNode& filter,
                                            const AttributeIndex& attributes);
// Column `number` of the program numbering; empty past the last.
BitmapView FilterColumn(const AttributeIndex& attributes, uint32_t number);
// The compressed words the program's columns hold, in all: what evaluating it reads.
uint64_t FilterProgramWords(const FilterProgram& program, const AttributeIndex& attributes);
// The program run on the CPU, through dense words (bit r % 32 of word r / 32): the reference the
// device evaluation is checked against.
std::vector<uint32_t> RunFilterProgram(const FilterProgram& program,
                                       const AttributeIndex& attributes);

// Something that evaluates filters as EvaluateFilter does (same bitmap, same errors): the CPU's
// EvaluateFilter itself, or a node's choice between it and the GPU (server/engine_factory.h).
using FilterEvaluator = std::function<absl::StatusOr<Bitmap>(const FilterNode& filter)>;

// The fraction of the rows that are set: docs.Count() / docs.num_rows() (0 when there are none).
double FilterSelectivity(BitmapView docs);

}  // namespace tandem::filter
