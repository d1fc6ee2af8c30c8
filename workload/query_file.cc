#include "workload/query_file.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/enum_names.h"
#include "base/utf8.h"

namespace tandem::workload {
namespace {

bool IsIdChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

bool IsId(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsIdChar(c)) return false;
  }
  return true;
}

bool IsDigits(absl::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// Splits `line` (not blank) in `format`; nullopt when it does not fit.
std::optional<QueryRecord> SplitLine(absl::string_view line, QueryFileFormat format,
                                     size_t line_number) {
  const auto record = [](absl::string_view id, absl::string_view text) {
    return QueryRecord{std::string(absl::StripAsciiWhitespace(id)),
                       std::string(absl::StripAsciiWhitespace(text))};
  };
  switch (format) {
    case QueryFileFormat::kTsv: {
      const size_t tab = line.find('\t');
      if (tab == absl::string_view::npos) return std::nullopt;
      absl::string_view id = absl::StripAsciiWhitespace(line.substr(0, tab));
      if (id.empty() || id.find_first_of(" \t") != absl::string_view::npos) return std::nullopt;
      return record(id, line.substr(tab + 1));
    }
    case QueryFileFormat::kColonPriority: {
      std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits(':', 2));
      if (parts.size() != 3 || !IsId(absl::StripAsciiWhitespace(parts[0])) ||
          !IsDigits(absl::StripAsciiWhitespace(parts[1]))) {
        return std::nullopt;
      }
      return record(parts[0], parts[2]);
    }
    case QueryFileFormat::kColon: {
      const size_t colon = line.find(':');
      if (colon == absl::string_view::npos ||
          !IsId(absl::StripAsciiWhitespace(line.substr(0, colon)))) {
        return std::nullopt;
      }
      return record(line.substr(0, colon), line.substr(colon + 1));
    }
    case QueryFileFormat::kPlain:
      return record(absl::StrCat(line_number), line);
    case QueryFileFormat::kAuto:
      break;
  }
  return std::nullopt;
}

struct Line {
  size_t number;     // 1-based
  std::string text;  // UTF-8, not blank
};

std::vector<Line> NonBlankLines(absl::string_view contents) {
  if (absl::StartsWith(contents, "\xEF\xBB\xBF")) contents.remove_prefix(3);
  std::vector<Line> lines;
  size_t number = 0;
  for (absl::string_view raw : absl::StrSplit(contents, '\n')) {
    ++number;
    if (absl::EndsWith(raw, "\r")) raw.remove_suffix(1);
    if (absl::StripAsciiWhitespace(raw).empty()) continue;
    // Untrimmed: a kTsv line may end in its separator ("id<TAB>" has an empty query); SplitLine
    // trims id and text.
    lines.push_back(Line{number, ToUtf8(raw)});
  }
  return lines;
}

constexpr base::EnumName<QueryFileFormat> kQueryFileFormatNames[] = {
    {QueryFileFormat::kAuto, "auto"},
    {QueryFileFormat::kColon, "colon"},
    {QueryFileFormat::kColonPriority, "colon-priority"},
    {QueryFileFormat::kTsv, "tsv"},
    {QueryFileFormat::kPlain, "plain"}};

}  // namespace

std::string ToUtf8(absl::string_view line) {
  if (base::IsValidUtf8(line)) return std::string(line);
  std::string out;
  out.reserve(line.size() * 2);
  for (char ch : line) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x80) {
      out.push_back(ch);
    } else {  // ISO-8859-1 byte c is code point U+00XX with XX = c: two UTF-8 bytes
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

absl::StatusOr<std::vector<QueryRecord>> ParseQueries(absl::string_view contents,
                                                      QueryFileFormat format,
                                                      absl::string_view source) {
  const std::vector<Line> lines = NonBlankLines(contents);
  const bool auto_detected = format == QueryFileFormat::kAuto;
  if (auto_detected) {
    format = QueryFileFormat::kPlain;
    for (QueryFileFormat candidate :
         {QueryFileFormat::kTsv, QueryFileFormat::kColonPriority, QueryFileFormat::kColon}) {
      bool fits = !lines.empty();
      for (const Line& line : lines) {
        if (!SplitLine(line.text, candidate, line.number)) {
          fits = false;
          break;
        }
      }
      if (fits) {
        format = candidate;
        break;
      }
    }
  }
  // The Million Query file mixes "id:query" (2007-2008) with "id:priority:query" (2009): when the
  // file reads as kColon, lines that also fit kColonPriority lose their priority.
  const bool mixed_priorities = auto_detected && format == QueryFileFormat::kColon;
  std::vector<QueryRecord> records;
  records.reserve(lines.size());
  for (const Line& line : lines) {
    std::optional<QueryRecord> record;
    if (mixed_priorities)
      record = SplitLine(line.text, QueryFileFormat::kColonPriority, line.number);
    if (!record) record = SplitLine(line.text, format, line.number);
    if (!record) {
      return absl::InvalidArgumentError(absl::StrCat(source, ":", line.number, ": not a ",
                                                     QueryFileFormatName(format), " query line"));
    }
    records.push_back(std::move(*record));
  }
  return records;
}

absl::StatusOr<std::vector<QueryRecord>> LoadQueryFile(const std::string& path,
                                                       QueryFileFormat format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string message =
        absl::StrCat("cannot open query file ", path, ": ", std::strerror(err));
    return err == ENOENT   ? absl::NotFoundError(message)
           : err == EACCES ? absl::PermissionDeniedError(message)
                           : absl::UnavailableError(message);
  }
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading query file ", path));
  return ParseQueries(contents.str(), format, path);
}

absl::StatusOr<QueryFileFormat> ParseQueryFileFormat(absl::string_view name) {
  if (const std::optional<QueryFileFormat> format =
          base::ValueOfName(kQueryFileFormatNames, name)) {
    return *format;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown query file format \"", name,
                   "\"; expected auto, colon, colon-priority, tsv or plain"));
}

absl::string_view QueryFileFormatName(QueryFileFormat format) {
  return base::NameOf(kQueryFileFormatNames, format);
}

}  // namespace tandem::workload
