// File: satisfies.h
//
// Whether one attribute value satisfies one constraint: the `sat` function that Margara & Cugola
// leave out of Algorithm 1 (CCM, section 4.2, footnote 2). Plain structs and one inline function
// that compiles for the host and the device, so the brute-force evaluator, the CPU matcher and the
// CCM kernel share one definition of a match and give identical match sets by construction.
//
// Semantics (model.h states them for users):
//   - numbers: an int64 against an int64 compares exactly; any comparison involving a double
//     compares as doubles (the int64 converted). NaN never reaches here (rejected when parsed);
//   - strings: bytes, with =, !=, prefix and substring; an empty prefix or substring always holds;
//   - a number never satisfies a string constraint and a string never a numeric one, != included;
//   - `contains` (terms) is decided by the term's presence, not here.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define TANDEM_MATCH_HD __host__ __device__ __forceinline__
#else
#define TANDEM_MATCH_HD inline
#endif

namespace tandem::match {

enum class ValueType : uint8_t { kInt = 0, kDouble = 1, kString = 2 };

// `kContains` is the terms operator; the rest apply to named attributes.
enum class Op : uint8_t {
  kEq = 0,
  kNe = 1,
  kLt = 2,
  kGt = 3,
  kLe = 4,
  kGe = 5,
  kPrefix = 6,
  kSubstring = 7,
  kContains = 8,
};
inline constexpr int kNumOps = 9;

// A value as both engines see it: strings point into a pool owned elsewhere.
struct ValueRef {
  ValueType type = ValueType::kInt;
  int64_t i = 0;
  double d = 0;
  const char* s = nullptr;
  uint32_t len = 0;
};

namespace internal {

// -1, 0 or 1; numbers only.
TANDEM_MATCH_HD int CompareNumbers(const ValueRef& a, const ValueRef& b) {
  if (a.type == ValueType::kInt && b.type == ValueType::kInt) {
    return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
  }
  const double x = a.type == ValueType::kInt ? static_cast<double>(a.i) : a.d;
  const double y = b.type == ValueType::kInt ? static_cast<double>(b.i) : b.d;
  return x < y ? -1 : (x > y ? 1 : 0);
}

TANDEM_MATCH_HD bool BytesEqual(const char* a, const char* b, uint32_t n) {
  for (uint32_t i = 0; i < n; ++i) {
    if (a[i] != b[i]) return false;
  }
  return true;
}

// Naive search: constraint values are short (bounded by a flag), and each CCM thread checks one.
TANDEM_MATCH_HD bool ContainsBytes(const char* hay, uint32_t hay_len, const char* needle,
                                   uint32_t needle_len) {
  if (needle_len > hay_len) return false;
  for (uint32_t start = 0; start + needle_len <= hay_len; ++start) {
    if (BytesEqual(hay + start, needle, needle_len)) return true;
  }
  return false;
}

}  // namespace internal

// Whether `attribute` satisfies `op constraint` (the attribute on the left: `price < 10` holds for
// price 5). `kContains` is never satisfied here: term constraints match by presence (model.h).
TANDEM_MATCH_HD bool Satisfies(Op op, const ValueRef& constraint, const ValueRef& attribute) {
  const bool constraint_string = constraint.type == ValueType::kString;
  const bool attribute_string = attribute.type == ValueType::kString;
  if (constraint_string != attribute_string) return false;
  if (constraint_string) {
    switch (op) {
      case Op::kEq:
        return constraint.len == attribute.len &&
               internal::BytesEqual(constraint.s, attribute.s, constraint.len);
      case Op::kNe:
        return constraint.len != attribute.len ||
               !internal::BytesEqual(constraint.s, attribute.s, constraint.len);
      case Op::kPrefix:
        return constraint.len <= attribute.len &&
               internal::BytesEqual(constraint.s, attribute.s, constraint.len);
      case Op::kSubstring:
        return internal::ContainsBytes(attribute.s, attribute.len, constraint.s, constraint.len);
      default:
        return false;
    }
  }
  const int c = internal::CompareNumbers(attribute, constraint);
  switch (op) {
    case Op::kEq:
      return c == 0;
    case Op::kNe:
      return c != 0;
    case Op::kLt:
      return c < 0;
    case Op::kGt:
      return c > 0;
    case Op::kLe:
      return c <= 0;
    case Op::kGe:
      return c >= 0;
    default:
      return false;
  }
}

}  // namespace tandem::match
