// NPL reader (the National Physical Laboratory collection's doc-text): each document is a line
// holding its number, its text lines, and a line "   /" that ends it. The text is lower-case title
// and abstract run together, without punctuation.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "index_builder/readers_internal.h"
#include "index_builder/utf8.h"
#include "index_builder/whitespace.h"

namespace tandem::index_builder::internal {
namespace {

// query-text and rlv-ass use the same block syntax beside doc-text, so a directory contributes only
// doc-text.
bool SelectsNplFile(const std::filesystem::path& file) {
  return file.filename().string().starts_with("doc-text");
}

bool IsEndOfBlock(absl::string_view line) { return absl::StripAsciiWhitespace(line) == "/"; }

class NplReader : public LineRecordReader {
 public:
  using LineRecordReader::LineRecordReader;

 protected:
  absl::StatusOr<bool> ReadRecord(const InputFile& file, const std::string& first_line,
                                  Document* doc) override {
    const absl::string_view first = absl::StripAsciiWhitespace(first_line);
    if (first.empty()) return false;
    const int64_t start_line = lines().line_number();
    const bool numbered = std::all_of(first.begin(), first.end(), absl::ascii_isdigit);
    const std::string id(first);
    // Collect the block up to its "/" line whether or not it is good, so a bad one is skipped
    // whole.
    bool ended = IsEndOfBlock(first_line);
    std::string text;
    std::string line;
    while (!ended && lines().Next(&line)) {
      if (IsEndOfBlock(line)) {
        ended = true;
      } else if (numbered) {
        AppendParagraph(absl::StripTrailingAsciiWhitespace(line), &text);
      }
    }
    TANDEM_RETURN_IF_ERROR(lines().status());
    if (!numbered) {
      ReportBadDocument(file, start_line,
                        absl::StrCat("a block must start with its document number, got \"",
                                     SanitizeUtf8(id), "\""));
      return false;
    }
    if (!ended) {
      ReportBadDocument(file, start_line,
                        absl::StrCat("document ", id, " does not end with a \"/\" line"));
      return false;
    }
    doc->external_id = id;
    doc->text = SanitizeUtf8(text);
    doc->location = Location(file, start_line);
    return true;
  }
};

}  // namespace

// A number alone on the first line, and a block end ("/" alone) further on.
bool RecognizesNpl(absl::string_view head) {
  uint64_t number = 0;
  if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(FirstNonBlankLine(head)), &number)) return false;
  for (absl::string_view line : absl::StrSplit(head, '\n')) {
    if (IsEndOfBlock(line)) return true;
  }
  return false;
}

const FormatSpec kNplFormat = {"npl", "doc-text", &SelectsNplFile, &MakeReader<NplReader>,
                               &RecognizesNpl};

}  // namespace tandem::index_builder::internal
