// SMART reader for the classic test collections (Cranfield, CISI, MEDLINE, CACM, ...): each
// document opens with ".I <number>" and is split into sections by lines ".T" (title), ".A"
// (author), ".B" (bibliographic source), ".W" (abstract), ".X" (citations) and others. As in
// Anserini's baselines the indexed text is the title and the abstract; authors and sources are
// stored. Sections other than T, A, B and W (.X, and CISI's one-off .K and .C) are ignored. The
// files differ: Cranfield has .T .A .B .W with LF endings, CISI .T .A (several per document) .B
// (rarely) .W .X with CRLF, MEDLINE only .W with CRLF and lines padded with blanks; Cranfield
// document 576 has two .W sections, which are both kept, in order.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "index_builder/readers_internal.h"
#include "index_builder/utf8.h"
#include "index_builder/whitespace.h"

namespace tandem::index_builder::internal {
namespace {

// The collections ship queries (cran.qry, CISI.QRY) in the same syntax beside the documents
// (cran.all.1400, CISI.ALL, MED.ALL), so a directory contributes only files named "*.all*".
bool SelectsSmartFile(const std::filesystem::path& file) {
  return absl::StrContains(absl::AsciiStrToLower(file.filename().string()), ".all");
}

// A section line is "." and a capital letter, alone or followed by white space: ".W", ".T ", ".I
// 12". Returns the letter, or 0 for a text line.
char SectionLetter(absl::string_view line) {
  if (line.size() < 2 || line[0] != '.' || !absl::ascii_isupper(line[1])) return 0;
  if (line.size() > 2 && !absl::ascii_isspace(static_cast<unsigned char>(line[2]))) return 0;
  return line[1];
}

class SmartReader : public LineStreamReader {
 public:
  using LineStreamReader::LineStreamReader;

 protected:
  absl::Status OpenFile(const InputFile& file) override {
    has_next_start_ = false;
    return LineStreamReader::OpenFile(file);
  }

  absl::StatusOr<bool> NextInFile(const InputFile& file, Document* doc) override {
    // Find the ".I" line that starts the document: read ahead by the previous call, or the first
    // one.
    std::string line;
    if (!has_next_start_) {
      bool reported = false;
      while (true) {
        if (!lines().Next(&line)) {
          TANDEM_RETURN_IF_ERROR(lines().status());
          return false;
        }
        if (SectionLetter(line) == 'I') break;
        if (!reported && !absl::StripAsciiWhitespace(line).empty()) {
          ReportBadDocument(file, lines().line_number(), "text before the first .I line");
          reported = true;
        }
      }
      next_start_ = std::move(line);
      next_start_line_ = lines().line_number();
    }
    while (true) {
      const std::string start = std::move(next_start_);
      const int64_t start_line = next_start_line_;
      TANDEM_ASSIGN_OR_RETURN(const Sections sections, ReadSections());
      const std::string id(absl::StripAsciiWhitespace(absl::string_view(start).substr(2)));
      if (!id.empty() && std::all_of(id.begin(), id.end(), absl::ascii_isdigit)) {
        Fill(sections, doc);
        doc->external_id = id;
        doc->location = Location(file, start_line);
        return true;
      }
      ReportBadDocument(file, start_line,
                        absl::StrCat("\".I\" needs a document number, got \"", start, "\""));
      if (!has_next_start_) return false;
    }
  }

 private:
  struct Sections {
    std::vector<std::string> title_lines;
    std::vector<std::vector<std::string>> authors;  // one entry per .A section, one string per line
    std::vector<std::string> sources;
    std::string abstract;
  };

  // Reads up to the next ".I" line (kept in next_start_) or the end of the file.
  absl::StatusOr<Sections> ReadSections() {
    Sections sections;
    has_next_start_ = false;
    char section = 0;
    std::string line;
    while (lines().Next(&line)) {
      const char letter = SectionLetter(line);
      if (letter == 'I') {
        next_start_ = std::move(line);
        next_start_line_ = lines().line_number();
        has_next_start_ = true;
        break;
      }
      absl::string_view content = line;
      if (letter != 0) {
        section = letter;
        if (section == 'A') sections.authors.emplace_back();
        if (section == 'B') sections.sources.emplace_back();
        content = content.substr(2);  // text on the section line itself, usually none
      }
      content = absl::StripTrailingAsciiWhitespace(content);  // MEDLINE pads lines with blanks
      if (absl::StripAsciiWhitespace(content).empty()) continue;
      std::string clean = SanitizeUtf8(content);
      switch (section) {
        case 'T':
          sections.title_lines.push_back(std::string(absl::StripAsciiWhitespace(clean)));
          break;
        case 'A':
          sections.authors.back().push_back(std::string(absl::StripAsciiWhitespace(clean)));
          break;
        case 'B':
          if (!sections.sources.back().empty()) sections.sources.back().push_back(' ');
          absl::StrAppend(&sections.sources.back(), absl::StripAsciiWhitespace(clean));
          break;
        case 'W':
          AppendParagraph(clean, &sections.abstract);
          break;
        default:
          break;
      }
    }
    TANDEM_RETURN_IF_ERROR(lines().status());
    return sections;
  }

  static void Fill(const Sections& sections, Document* doc) {
    AppendParagraph(absl::StrJoin(sections.title_lines, "\n"), &doc->text);
    AppendParagraph(sections.abstract, &doc->text);
    // Stored values are for display: a title wrapped over lines reads as one line.
    if (!sections.title_lines.empty())
      doc->fields.emplace_back("title", absl::StrJoin(sections.title_lines, " "));
    for (const std::vector<std::string>& author : sections.authors) {
      for (const std::string& name : author) doc->fields.emplace_back("author", name);
    }
    for (const std::string& source : sections.sources) {
      if (!source.empty()) doc->fields.emplace_back("source", source);
    }
  }

  std::string next_start_;
  int64_t next_start_line_ = 0;
  bool has_next_start_ = false;
};

}  // namespace

// The first line is ".I" and a number.
bool RecognizesSmart(absl::string_view head) {
  const absl::string_view line = absl::StripAsciiWhitespace(FirstNonBlankLine(head));
  uint64_t number = 0;
  return SectionLetter(line) == 'I' &&
         absl::SimpleAtoi(absl::StripAsciiWhitespace(line.substr(2)), &number);
}

const FormatSpec kSmartFormat = {"smart", "*.all* files such as cran.all.1400, CISI.ALL, MED.ALL",
                                 &SelectsSmartFile, &MakeReader<SmartReader>, &RecognizesSmart};

}  // namespace tandem::index_builder::internal
