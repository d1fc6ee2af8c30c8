// File: enum_names.h
//
// The names of an enum's values (for flags, the command line, JSON and messages), kept in one
// table per enum, so that printing a value and parsing its name read the same list and cannot
// drift apart when a value is added. The first entry for a value is its name; later entries for the
// same value are further spellings that parsing accepts.
//
//   constexpr EnumName<QueryMode> kQueryModeNames[] = {
//       {QueryMode::kAnd, "and"}, {QueryMode::kOr, "or"}, {QueryMode::kAnd, "AND"}};
//   NameOf(kQueryModeNames, QueryMode::kOr);           // "or"
//   ValueOfName(kQueryModeNames, absl::string_view("AND"));  // QueryMode::kAnd
//
// Names are C strings so that the table converts to whichever string_view a caller speaks
// (absl::string_view and std::string_view are distinct types in this build).
#pragma once

#include <cstddef>
#include <optional>

namespace tandem::base {

template <typename Enum>
struct EnumName {
  Enum value;
  const char* name;
};

// The name of `value`: its first entry in `names`, or `unknown` when it has none.
template <typename Enum, size_t N>
constexpr const char* NameOf(const EnumName<Enum> (&names)[N], Enum value,
                             const char* unknown = "unknown") {
  for (const EnumName<Enum>& entry : names) {
    if (entry.value == value) return entry.name;
  }
  return unknown;
}

// The value named `name` (exactly, case included) in `names`; nullopt when none is.
template <typename Enum, size_t N, typename StringView>
std::optional<Enum> ValueOfName(const EnumName<Enum> (&names)[N], const StringView& name) {
  for (const EnumName<Enum>& entry : names) {
    if (name == entry.name) return entry.value;
  }
  return std::nullopt;
}

// The same for parsers that report success and leave *value alone when `name` names nothing.
template <typename Enum, size_t N, typename StringView>
bool ParseName(const EnumName<Enum> (&names)[N], const StringView& name, Enum* value) {
  const std::optional<Enum> parsed = ValueOfName(names, name);
  if (parsed) *value = *parsed;
  return parsed.has_value();
}

}  // namespace tandem::base
