#include "cost_model/m5_text.h"

#include <cmath>
#include <cstdint>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace tandem::cost_model {

TextLines::TextLines(absl::string_view text, absl::string_view source)
    : rest_(text), source_(source) {}

bool TextLines::Next(std::vector<absl::string_view>* fields) {
  fields->clear();
  while (!rest_.empty()) {
    const size_t end = rest_.find('\n');
    raw_ = rest_.substr(0, end);
    rest_ = end == absl::string_view::npos ? absl::string_view() : rest_.substr(end + 1);
    ++line_;
    if (!raw_.empty() && raw_.back() == '\r') raw_.remove_suffix(1);
    for (absl::string_view f : absl::StrSplit(raw_, absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      fields->push_back(f);
    }
    if (!fields->empty()) return true;
  }
  ended_ = true;
  raw_ = {};
  return false;
}

bool TextLines::AtEnd() {
  // Blank lines at the end do not count as content.
  size_t i = 0;
  while (i < rest_.size() &&
         (rest_[i] == ' ' || rest_[i] == '\t' || rest_[i] == '\n' || rest_[i] == '\r')) {
    ++i;
  }
  return i == rest_.size();
}

absl::Status TextLines::ErrorAt(absl::string_view message) const {
  if (ended_) {
    return absl::InvalidArgumentError(absl::StrCat(source_, ": end of text: ", message));
  }
  return absl::InvalidArgumentError(absl::StrCat(source_, ": line ", line_, ": ", message));
}

std::string FormatDouble(double value) { return absl::StrFormat("%.17g", value); }

bool ParseFinite(absl::string_view text, double* value) {
  return absl::SimpleAtod(text, value) && std::isfinite(*value);
}

bool ParseCount(absl::string_view text, size_t* value) {
  uint64_t v = 0;
  if (text.empty() || text[0] == '-' || text[0] == '+' || !absl::SimpleAtoi(text, &v)) return false;
  *value = static_cast<size_t>(v);
  return true;
}

void AppendAttributes(const std::vector<std::string>& attributes, std::string* out) {
  absl::StrAppend(out, "attributes ", attributes.size());
  for (const std::string& a : attributes) absl::StrAppend(out, " ", a);
  absl::StrAppend(out, "\n");
}

absl::Status ReadAttributes(TextLines& lines, std::vector<std::string>* attributes) {
  std::vector<absl::string_view> f;
  if (!lines.Next(&f)) return lines.Error("expected 'attributes <count> <names>'");
  size_t d = 0;
  if (f[0] != "attributes" || f.size() < 2 || !ParseCount(f[1], &d) || f.size() != d + 2) {
    return lines.Error("expected 'attributes <count> <names>', got '", lines.raw(), "'");
  }
  attributes->clear();
  for (size_t i = 2; i < f.size(); ++i) attributes->emplace_back(f[i]);
  return absl::OkStatus();
}

void AppendModel(const LinearModel& model, std::string* out) {
  absl::StrAppend(out, " ", FormatDouble(model.intercept));
  for (double c : model.coef) absl::StrAppend(out, " ", FormatDouble(c));
}

absl::Status ParseModel(const TextLines& lines, absl::Span<const absl::string_view> fields,
                        size_t d, LinearModel* model) {
  if (fields.size() != d + 1) {
    return lines.Error("a linear model needs ", d + 1, " numbers (intercept and ", d,
                       " coefficients), got ", fields.size());
  }
  model->coef.assign(d, 0.0);
  for (size_t i = 0; i <= d; ++i) {
    double v;
    if (!ParseFinite(fields[i], &v)) return lines.Error("not a finite number: '", fields[i], "'");
    (i == 0 ? model->intercept : model->coef[i - 1]) = v;
  }
  return absl::OkStatus();
}

absl::Status ReadHeader(TextLines& lines, absl::string_view keyword, absl::string_view version) {
  std::vector<absl::string_view> f;
  if (!lines.Next(&f)) return lines.Error("empty; expected '", keyword, " ", version, "'");
  if (f[0] != keyword)
    return lines.Error("expected '", keyword, " ", version, "', got '", lines.raw(), "'");
  if (f.size() != 2 || f[1] != version) {
    return lines.Error("unsupported ", keyword, " version '", lines.raw(), "' (this build reads ",
                       version, ")");
  }
  return absl::OkStatus();
}

absl::Status ReadEnd(TextLines& lines) {
  std::vector<absl::string_view> f;
  if (!lines.Next(&f) || f.size() != 1 || f[0] != "end") return lines.Error("expected 'end'");
  return absl::OkStatus();
}

}  // namespace tandem::cost_model
