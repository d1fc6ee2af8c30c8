// File: m5_text.h
//
// The line-oriented text that M5 trees, M5 rules and cost-model files are saved as: one record per
// line, fields separated by spaces, numbers written with 17 significant digits so a round trip is
// exact. Readers name the source and the line in every error, so a damaged model file says where:
//
//   TextLines lines(text, "model.txt");
//   std::vector<absl::string_view> fields;
//   if (!lines.Next(&fields)) return lines.Error("unexpected end of file");
//   double x;
//   if (!ParseFinite(fields[1], &x)) return lines.Error("not a number: ", fields[1]);
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cost_model/m5_linear_model.h"

namespace tandem::cost_model {

class TextLines {
 public:
  // `source` names the text in errors ("model.txt", "<m5rules>").
  TextLines(absl::string_view text, absl::string_view source);

  // The next line that is not blank, split at runs of spaces and tabs; false at the end.
  bool Next(std::vector<absl::string_view>* fields);
  // The last line Next returned, without its line ending.
  absl::string_view raw() const { return raw_; }
  int line() const { return line_; }
  bool AtEnd();

  // INVALID_ARGUMENT "source: line N: <message>" for the last line read ("end of text" past it).
  template <typename... Args>
  absl::Status Error(const Args&... message) const {
    return ErrorAt(absl::StrCat(message...));
  }

 private:
  absl::Status ErrorAt(absl::string_view message) const;

  absl::string_view rest_;
  std::string source_;
  absl::string_view raw_;
  int line_ = 0;
  bool ended_ = false;
};

// "%.17g": the shortest form that reads back to the same double.
std::string FormatDouble(double value);

// Parses a finite double / a non-negative integer; false on anything else (never throws).
bool ParseFinite(absl::string_view text, double* value);
bool ParseCount(absl::string_view text, size_t* value);

// What M5 trees and rules share in their text form.
//   "attributes <d> <name 1> ... <name d>"
//   a model: "<intercept> <coef 1> ... <coef d>" (appended after a line's leading fields)
void AppendAttributes(const std::vector<std::string>& attributes, std::string* out);
absl::Status ReadAttributes(TextLines& lines, std::vector<std::string>* attributes);
void AppendModel(const LinearModel& model, std::string* out);
// Reads the model from `fields` (exactly d + 1 numbers).
absl::Status ParseModel(const TextLines& lines, absl::Span<const absl::string_view> fields,
                        size_t d, LinearModel* model);
// Reads the next line, which must be `keyword` followed by `version` (e.g. "m5tree 1").
absl::Status ReadHeader(TextLines& lines, absl::string_view keyword, absl::string_view version);
// Reads the next line, which must be "end", the last of a tree or a rule set.
absl::Status ReadEnd(TextLines& lines);

// What `read` (M5Tree::Read, M5Rules::Read) makes of `text`, named `source` in errors; text left
// after what it reads is an error, since Parse takes one tree or rule set alone.
template <typename T>
absl::StatusOr<T> ParseWhole(absl::string_view text, absl::string_view source,
                             absl::StatusOr<T> (*read)(TextLines& lines)) {
  TextLines lines(text, source);
  absl::StatusOr<T> parsed = read(lines);
  if (parsed.ok() && !lines.AtEnd()) {
    std::vector<absl::string_view> f;
    lines.Next(&f);  // so that the error names the line
    return lines.Error("unexpected text after 'end'");
  }
  return parsed;
}

}  // namespace tandem::cost_model
