// Plain-text reader: one document per line, identified by its 1-based line number. Blank lines are
// skipped, not reported: they are how such files separate nothing. When PATH is a directory the id
// is "relative/path:line", since line numbers alone repeat from file to file.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "index_builder/readers_internal.h"
#include "index_builder/utf8.h"

namespace tandem::index_builder::internal {
namespace {

class LinesReader : public LineRecordReader {
 public:
  using LineRecordReader::LineRecordReader;

 protected:
  absl::StatusOr<bool> ReadRecord(const InputFile& file, const std::string& line,
                                  Document* doc) override {
    std::string text = SanitizeUtf8(line);
    if (absl::StripAsciiWhitespace(text).empty()) return false;
    const int64_t number = lines().line_number();
    doc->external_id =
        from_directory() ? absl::StrCat(file.relative, ":", number) : absl::StrCat(number);
    doc->text = std::move(text);
    doc->location = Location(file, number);
    return true;
  }
};

}  // namespace

// Text that does not open with markup or JSON: any such file is taken for one of the other
// formats or refused, never read line by line by guess.
bool RecognizesLines(absl::string_view head) {
  const absl::string_view line = absl::StripLeadingAsciiWhitespace(FirstNonBlankLine(head));
  return !line.empty() && line[0] != '<' && line[0] != '{' && line[0] != '[' &&
         line.find('\0') == absl::string_view::npos;
}

// Every line is a document, known by its number, which a chunk's reader starts from.
const FormatSpec kLinesFormat = {.name = "lines",
                                 .make = &MakeReader<LinesReader>,
                                 .recognizes = &RecognizesLines,
                                 .starts_record = &StartsAnyLine};

}  // namespace tandem::index_builder::internal
