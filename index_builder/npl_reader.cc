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

class NplReader : public FileSequenceReader {
 public:
  NplReader(InputFiles files, ReaderOptions options)
      : FileSequenceReader(std::move(files), std::move(options)) {}

 protected:
  absl::Status OpenFile(const InputFile& file) override { return lines_.Open(file); }

  absl::StatusOr<bool> NextInFile(const InputFile& file, Document* doc) override {
    std::string line;
    while (lines_.Next(&line)) {
      const absl::string_view first = absl::StripAsciiWhitespace(line);
      if (first.empty()) continue;
      const int64_t start_line = lines_.line_number();
      const bool numbered = std::all_of(first.begin(), first.end(), absl::ascii_isdigit);
      const std::string id(first);
      // Collect the block up to its "/" line whether or not it is good, so a bad one is skipped
      // whole.
      bool ended = IsEndOfBlock(line);
      std::string text;
      while (!ended && lines_.Next(&line)) {
        if (IsEndOfBlock(line)) {
          ended = true;
        } else if (numbered) {
          AppendParagraph(absl::StripTrailingAsciiWhitespace(line), &text);
        }
      }
      TANDEM_RETURN_IF_ERROR(lines_.status());
      if (!numbered) {
        ReportBadDocument(file, start_line,
                          absl::StrCat("a block must start with its document number, got \"",
                                       SanitizeUtf8(id), "\""));
        continue;
      }
      if (!ended) {
        ReportBadDocument(file, start_line,
                          absl::StrCat("document ", id, " does not end with a \"/\" line"));
        continue;
      }
      doc->external_id = id;
      doc->text = SanitizeUtf8(text);
      doc->location = Location(file, start_line);
      return true;
    }
    TANDEM_RETURN_IF_ERROR(lines_.status());
    return false;
  }

 private:
  uint64_t BytesReadInFile() const override { return lines_.bytes_read(); }

  LineSource lines_;
};

std::unique_ptr<DocumentReader> MakeNplReader(InputFiles files, ReaderOptions options) {
  return std::make_unique<NplReader>(std::move(files), std::move(options));
}

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

const FormatSpec kNplFormat = {"npl", "doc-text", &SelectsNplFile, &MakeNplReader, &RecognizesNpl};

}  // namespace tandem::index_builder::internal
