#include "clients/cli/match_input.h"

#include <cstdint>
#include <limits>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace tandem::cli {
namespace {

absl::Status LineError(size_t line_number, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat("line ", line_number, ": ", message));
}

// A JSON value as a typed attribute value, by its JSON form.
absl::Status ToValue(const nlohmann::json& json, tandem::v1::Value* value) {
  switch (json.type()) {
    case nlohmann::json::value_t::number_integer:
      value->set_int_value(json.get<int64_t>());
      return absl::OkStatus();
    case nlohmann::json::value_t::number_unsigned: {
      const uint64_t v = json.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return absl::InvalidArgumentError("integer out of the int64 range");
      }
      value->set_int_value(static_cast<int64_t>(v));
      return absl::OkStatus();
    }
    case nlohmann::json::value_t::number_float:
      value->set_double_value(json.get<double>());
      return absl::OkStatus();
    case nlohmann::json::value_t::string:
      value->set_string_value(json.get<std::string>());
      return absl::OkStatus();
    default:
      break;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("must be a number or a string, not ", json.type_name()));
}

}  // namespace

absl::StatusOr<tandem::v1::Document> ParseDocumentLine(absl::string_view line, size_t line_number) {
  nlohmann::json json = nlohmann::json::parse(line.begin(), line.end(), nullptr,
                                              /*allow_exceptions=*/false);
  if (json.is_discarded()) return LineError(line_number, "not valid JSON");
  if (!json.is_object()) return LineError(line_number, "a document is a JSON object");
  tandem::v1::Document document;
  for (const auto& [key, value] : json.items()) {
    if (key == "id") {
      if (value.is_string()) {
        document.set_id(value.get<std::string>());
      } else if (value.is_number_integer()) {
        document.set_id(value.dump());
      } else {
        return LineError(line_number, "\"id\" must be a string or an integer");
      }
    } else if (key == "text") {
      if (!value.is_string()) return LineError(line_number, "\"text\" must be a string");
      document.set_text(value.get<std::string>());
    } else if (key == "attributes") {
      if (!value.is_object()) {
        return LineError(line_number, "\"attributes\" must be an object of name: value");
      }
      for (const auto& [name, attribute] : value.items()) {
        tandem::v1::Attribute* a = document.add_attributes();
        a->set_name(name);
        if (absl::Status s = ToValue(attribute, a->mutable_value()); !s.ok()) {
          return LineError(line_number, absl::StrCat("attribute \"", name, "\": ", s.message()));
        }
      }
    } else {
      return LineError(line_number, absl::StrCat("unknown key \"", key,
                                                 "\" (a document has id, text and attributes)"));
    }
  }
  if (!json.contains("id")) document.set_id(absl::StrCat(line_number));
  return document;
}

absl::StatusOr<std::vector<tandem::v1::Document>> ReadDocuments(std::istream& in) {
  std::vector<tandem::v1::Document> documents;
  std::string line;
  for (size_t n = 1; std::getline(in, line); ++n) {
    if (absl::StripAsciiWhitespace(line).empty()) continue;
    absl::StatusOr<tandem::v1::Document> document = ParseDocumentLine(line, n);
    if (!document.ok()) return document.status();
    documents.push_back(*std::move(document));
  }
  return documents;
}

}  // namespace tandem::cli
