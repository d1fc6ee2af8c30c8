// Plain-text reader: one document per line, identified by its 1-based line number. Blank lines are
// skipped, not reported: they are how such files separate nothing. When PATH is a directory the id
// is "relative/path:line", since line numbers alone repeat from file to file.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index_builder/readers_internal.h"
#include "index_builder/utf8.h"

namespace tandem::index_builder::internal {
namespace {

bool SelectsAnyFile(const std::filesystem::path&) { return true; }

class LinesReader : public FileSequenceReader {
 public:
  LinesReader(InputFiles files, ReaderOptions options)
      : FileSequenceReader(std::move(files), std::move(options)) {}

 protected:
  absl::Status OpenFile(const InputFile& file) override { return lines_.Open(file); }

  absl::StatusOr<bool> NextInFile(const InputFile& file, Document* doc) override {
    std::string line;
    while (lines_.Next(&line)) {
      std::string text = SanitizeUtf8(line);
      if (absl::StripAsciiWhitespace(text).empty()) continue;
      const int64_t number = lines_.line_number();
      doc->external_id =
          from_directory() ? absl::StrCat(file.relative, ":", number) : absl::StrCat(number);
      doc->text = std::move(text);
      doc->location = Location(file, number);
      return true;
    }
    TANDEM_RETURN_IF_ERROR(lines_.status());
    return false;
  }

 private:
  uint64_t BytesReadInFile() const override { return lines_.bytes_read(); }

  LineSource lines_;
};

std::unique_ptr<DocumentReader> MakeLinesReader(InputFiles files, ReaderOptions options) {
  return std::make_unique<LinesReader>(std::move(files), std::move(options));
}

}  // namespace

// Text that does not open with markup or JSON: any such file is taken for one of the other
// formats or refused, never read line by line by guess.
bool RecognizesLines(absl::string_view head) {
  const absl::string_view line = absl::StripLeadingAsciiWhitespace(FirstNonBlankLine(head));
  return !line.empty() && line[0] != '<' && line[0] != '{' && line[0] != '[' &&
         line.find('\0') == absl::string_view::npos;
}

// Every line is a document, known by its number, which a chunk's reader starts from.
bool StartsLinesRecord(absl::string_view) { return true; }

const FormatSpec kLinesFormat = {"lines",          "every file",     &SelectsAnyFile,
                                 &MakeLinesReader, &RecognizesLines, &StartsLinesRecord};

}  // namespace tandem::index_builder::internal
