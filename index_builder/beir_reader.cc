// BEIR corpus reader: JSON Lines, one {"_id", "title", "text"} object per line (Thakur et al.,
// BEIR, NeurIPS 2021 datasets track). The indexed text is title + "\n" + text, the single-field
// ("flat") layout of Anserini's BEIR baselines; the title is also stored.
//
// Every other scalar member is an attribute of its name (a string as it is, an integral number in
// decimal, a boolean "true" or "false"), and so is each scalar member of an object member, named
// "outer.inner" (BEIR's "metadata": {"url": ...}); values past kMaxAttributeValueBytes (abstracts,
// URLs) are none, and arrays and deeper objects are skipped.
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "index_builder/reader_attributes.h"
#include "index_builder/readers_internal.h"
#include "index_builder/utf8.h"
#include "index_builder/whitespace.h"
#include "nlohmann/json.hpp"

namespace tandem::index_builder::internal {
namespace {

// Members in the order the line writes them, the order of Document::attributes.
using json = nlohmann::ordered_json;

// BEIR keeps queries.jsonl beside corpus.jsonl, so a directory contributes only its corpus files
// (corpus.jsonl, or shards such as corpus-00.jsonl).
bool SelectsBeirFile(const std::filesystem::path& file) {
  const std::string name = file.filename().string();
  return name.starts_with("corpus") && name.ends_with(".jsonl");
}

// A string member, or a number written as text (some corpora number their ids). Any other type is
// an error; an absent member is empty.
absl::StatusOr<std::string> StringMember(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_number_integer()) return it->dump();
  return absl::InvalidArgumentError(
      absl::StrCat("\"", key, "\" is a JSON ", it->type_name(), ", not a string"));
}

// A scalar member's value as an attribute value; none for null, a fraction, an array or an object.
std::optional<std::string> ScalarText(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return value.dump();
  if (value.is_number_float()) {
    // 2.0 is the integer 2; past 2^53 a double no longer tells integers apart.
    const double number = value.get<double>();
    if (std::trunc(number) == number && std::fabs(number) <= 9007199254740992.0) {
      return absl::StrCat(static_cast<int64_t>(number));
    }
  }
  return std::nullopt;
}

void AddScalarAttribute(const std::string& name, const json& value, Document* doc) {
  if (name.empty()) return;
  if (std::optional<std::string> text = ScalarText(value)) {
    AddAttribute(SanitizeUtf8(name), *text, doc, kMaxAttributeValueBytes);
  }
}

// The members other than _id, title and text, one object level deep.
void AddMemberAttributes(const json& object, Document* doc) {
  for (const auto& member : object.items()) {
    const std::string& key = member.key();
    if (key == "_id" || key == "title" || key == "text") continue;
    if (!member.value().is_object()) {
      AddScalarAttribute(key, member.value(), doc);
      continue;
    }
    for (const auto& inner : member.value().items()) {
      AddScalarAttribute(absl::StrCat(key, ".", inner.key()), inner.value(), doc);
    }
  }
}

class BeirReader : public LineRecordReader {
 public:
  using LineRecordReader::LineRecordReader;

 protected:
  absl::StatusOr<bool> ReadRecord(const InputFile& file, const std::string& line,
                                  Document* doc) override {
    absl::string_view view = line;
    if (lines().line_number() == 1) absl::ConsumePrefix(&view, "\xEF\xBB\xBF");  // byte-order mark
    if (absl::StripAsciiWhitespace(view).empty()) return false;
    if (!Parse(view, doc, &error_)) {
      ReportBadDocument(file, lines().line_number(), error_);
      doc->Clear();
      return false;
    }
    doc->location = Location(file, lines().line_number());
    return true;
  }

 private:
  // Fills *doc from one JSON line, or says in *error what is wrong with it.
  static bool Parse(absl::string_view line, Document* doc, std::string* error) {
    // Bytes that are not UTF-8 would make the JSON parser reject the whole line; read them as
    // windows-1252 instead, which leaves the JSON syntax (all ASCII) untouched.
    const json object = json::parse(SanitizeUtf8(line), /*cb=*/nullptr, /*allow_exceptions=*/false);
    if (object.is_discarded()) {
      *error = "not valid JSON";
      return false;
    }
    if (!object.is_object()) {
      *error = absl::StrCat("a JSON ", object.type_name(), ", not an object");
      return false;
    }
    if (!object.contains("_id")) {
      *error = "no \"_id\"";
      return false;
    }
    absl::StatusOr<std::string> id = StringMember(object, "_id");
    absl::StatusOr<std::string> title = StringMember(object, "title");
    absl::StatusOr<std::string> text = StringMember(object, "text");
    for (const absl::StatusOr<std::string>* member : {&id, &title, &text}) {
      if (!member->ok()) {
        *error = std::string(member->status().message());
        return false;
      }
    }
    if (id->empty()) {
      *error = "empty \"_id\"";
      return false;
    }
    // JSON escapes can spell control characters (\u0000); SanitizeUtf8 turns them into spaces.
    doc->external_id = SanitizeUtf8(*id);
    const std::string clean_title = SanitizeUtf8(*title);
    AppendParagraph(clean_title, &doc->text);
    AppendParagraph(SanitizeUtf8(*text), &doc->text);
    if (!clean_title.empty()) doc->fields.emplace_back("title", clean_title);
    AddMemberAttributes(object, doc);
    return true;
  }

  std::string error_;
};

std::vector<AttributeField> BeirAttributeFields() {
  return {{"<member>", AttributeType::kKeyword,
           "each scalar JSON member other than _id, title and text, and each scalar member of an "
           "object member as <member>.<inner>: strings are keywords, integral numbers integers, "
           "booleans true / false; the fields depend on the corpus"}};
}

}  // namespace

// JSON lines whose first object has an "_id" member.
bool RecognizesBeir(absl::string_view head) {
  const absl::string_view line = FirstNonBlankLine(head);
  return absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "{") &&
         HasJsonMember(line, "_id");
}

// One record a line: a file may be cut at any line (the byte-order mark is only on line 1).
const FormatSpec kBeirFormat = {.name = "beir",
                                .files_wanted = "corpus*.jsonl",
                                .selects = &SelectsBeirFile,
                                .make = &MakeReader<BeirReader>,
                                .recognizes = &RecognizesBeir,
                                .starts_record = &StartsAnyLine,
                                .attribute_fields = &BeirAttributeFields};

}  // namespace tandem::index_builder::internal
