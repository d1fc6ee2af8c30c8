// File: readers_internal.h
//
// What the format readers share, kept out of document_reader.h so the inverter sees only the
// interface: the list of input files, a streaming line source, a scanner for SGML elements that may
// span lines (<DOC>, <REUTERS>, <doc>), and FileSequenceReader, the base that walks the files and
// reports bad documents. Each *_reader.cc defines one FormatSpec; document_reader.cc lists them.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "index_builder/document_reader.h"

namespace tandem::index_builder::internal {

struct InputFile {
  std::filesystem::path path;
  // The path as messages show it: the "file" of "file:line".
  std::string name;
  // The path relative to the input directory, '/'-separated; the file name for a single-file input.
  std::string relative;
  // The part of the file read: bytes [begin, end), begin at the start of line `first_line`. A
  // whole file by default; a chunk of it when a large file is parsed in parallel (ListInputUnits).
  uint64_t begin = 0;
  uint64_t end = kToEnd;
  int64_t first_line = 1;

  static constexpr uint64_t kToEnd = UINT64_MAX;
  bool whole() const { return begin == 0 && end == kToEnd; }
};

struct InputFiles {
  // True when the input was a directory; readers that number documents per file then qualify ids
  // with the file's relative path, so ids stay unique across files.
  bool from_directory = false;
  std::vector<InputFile> files;
};

// One input format: its name, which files of a directory it reads, and how to build its reader.
struct FormatSpec {
  absl::string_view name;
  // Which files of a directory input are read, for error messages ("*.sgm").
  absl::string_view files_wanted = "every file";
  // Whether a file found while walking a directory holds documents of this format. A file named
  // directly as PATH is always read. nullptr: every file, for formats whose directories hold
  // nothing but their documents.
  bool (*selects)(const std::filesystem::path& file) = nullptr;
  std::unique_ptr<DocumentReader> (*make)(InputFiles files, ReaderOptions options);
  // Whether a file's first bytes (up to kSniffBytes) look like this format, for --format auto.
  bool (*recognizes)(absl::string_view head);
  // For formats whose files can be cut into chunks parsed apart: whether a line (without its line
  // end) opens a record, so a chunk may start there and a reader of the chunk alone reads exactly
  // what a reader of the whole file reads from that line on. nullptr: files are parsed whole.
  bool (*starts_record)(absl::string_view line) = nullptr;
  // Drops, from a directory's files, those the format reads through others (an e-mail's raw .txt
  // copy beside its .json record), so that every reader of a part of the input agrees on the
  // files. nullptr: none.
  void (*drop_files)(std::vector<InputFile>* files) = nullptr;
  // The attribute fields its documents may carry (DocumentAttributeFields). nullptr: none.
  std::vector<AttributeField> (*attribute_fields)() = nullptr;

  bool Selects(const std::filesystem::path& file) const {
    return selects == nullptr || selects(file);
  }
};

inline constexpr size_t kSniffBytes = 64 << 10;

// The first line of `text` that is not blank, without its line end ("" when there is none).
absl::string_view FirstNonBlankLine(absl::string_view text);

// Whether JSON text holds the member name `key` ("\"key\"" followed by a colon).
bool HasJsonMember(absl::string_view json, absl::string_view key);

extern const FormatSpec kBeirFormat;
extern const FormatSpec kEmailFormat;
extern const FormatSpec kLinesFormat;
extern const FormatSpec kNplFormat;
extern const FormatSpec kReutersFormat;
extern const FormatSpec kSmartFormat;
extern const FormatSpec kTrecFormat;
extern const FormatSpec kWikiExtractorFormat;

// Lists PATH (a file, or a directory walked recursively in sorted path order, hidden entries
// skipped) for `format`. NOT_FOUND when PATH does not exist or a directory holds no wanted file.
absl::StatusOr<InputFiles> ListInputFiles(const std::string& path, const FormatSpec& format);

// Whether `line` opens an element <TAG ...> the way ElementScanner finds one at its start: "<TAG"
// followed by ">", white space or the line's end.
bool StartsElement(absl::string_view line, absl::string_view tag);

// FormatSpec::starts_record for formats of one record a line: a chunk may start at any line.
inline bool StartsAnyLine(absl::string_view) { return true; }

// FormatSpec::starts_record for a format of <kTag ...> elements that an ElementReader reads: a line
// opening one ends any element before it (ElementScanner), so a chunk may start there.
template <const char* kTag>
bool StartsElementOf(absl::string_view line) {
  return StartsElement(line, kTag);
}

// "file:line", the prefix of every bad-document message and Document::location.
std::string Location(const InputFile& file, int64_t line);

// Reads a whole file; for formats whose units are small files (e-mail messages, JSON records).
absl::StatusOr<std::string> ReadFile(const InputFile& file);

// Streams a file line by line, so multi-gigabyte TREC bundles never sit in memory whole. Lines come
// without their "\n" or "\r\n".
class LineSource {
 public:
  absl::Status Open(const InputFile& file);
  // Reads the next line into *line; false at the end of the file. Check status() after false.
  bool Next(std::string* line);
  // 1-based number of the line Next returned last.
  int64_t line_number() const { return line_number_; }
  // Bytes of the file read so far, line ends included.
  uint64_t bytes_read() const { return bytes_read_; }
  // Not OK when reading failed (as opposed to reaching the end).
  absl::Status status() const;

 private:
  std::ifstream in_;
  std::string name_;
  int64_t line_number_ = 0;
  uint64_t bytes_read_ = 0;
  uint64_t bytes_wanted_ = InputFile::kToEnd;  // the file's range: end - begin
};

// One element found by ElementScanner.
struct Element {
  // From the "<" of the open tag to the ">" of the close tag; lines joined with "\n".
  std::string text;
  // Line of the open tag.
  int64_t line = 0;
  // False when the file ended, or another open tag came, before the close tag: a bad document.
  bool complete = false;
};

// Finds successive <TAG ...> ... </TAG> elements in a LineSource, ignoring what lies between them
// (DOCTYPE lines, blank lines). An open tag is "<TAG" followed by ">" or white space, so <DOC> is
// not mistaken for <DOCNO>. Tag names are matched exactly (case-sensitively).
class ElementScanner {
 public:
  ElementScanner(LineSource* lines, absl::string_view tag);
  // Next element; false at the end of the file.
  absl::StatusOr<bool> Next(Element* element);

 private:
  size_t FindOpen(absl::string_view text, size_t from) const;

  LineSource* lines_;
  std::string open_;
  std::string close_;
  // Unconsumed rest of a line after a close tag, or an open tag that cut an element short.
  std::string pending_;
  int64_t pending_line_ = 0;
  bool has_pending_ = false;
};

// Walks the input files, opening each in turn, and hands out their documents. Subclasses parse one
// file; bad documents go through ReportBadDocument and are skipped inside NextInFile.
class FileSequenceReader : public DocumentReader {
 public:
  // Public so that a format's reader may inherit it; the class itself is abstract.
  FileSequenceReader(InputFiles files, ReaderOptions options);

  absl::StatusOr<bool> Next(Document* doc) final;
  ReadProgress Progress() const final;

 protected:
  // Bytes of the current file read so far; 0 for readers that take a file whole.
  virtual uint64_t BytesReadInFile() const { return 0; }

  // Starts reading `file`.
  virtual absl::Status OpenFile(const InputFile& file) = 0;
  // Fills *doc (already cleared) with the next good document of `file`; false at its end.
  virtual absl::StatusOr<bool> NextInFile(const InputFile& file, Document* doc) = 0;

  void ReportBadDocument(const InputFile& file, int64_t line, absl::string_view what) const;
  bool from_directory() const { return files_.from_directory; }

 private:
  InputFiles files_;
  ReaderOptions options_;
  size_t next_file_ = 0;
  const InputFile* current_ = nullptr;
  std::vector<uint64_t> file_bytes_;  // each file's size (0 when it cannot be read)
  uint64_t total_bytes_ = 0;
  uint64_t finished_bytes_ = 0;  // of the files read to their end
};

// A FileSequenceReader that streams each file line by line (lines, BEIR, NPL, SMART); subclasses
// read their documents from lines().
class LineStreamReader : public FileSequenceReader {
 public:
  using FileSequenceReader::FileSequenceReader;

 protected:
  absl::Status OpenFile(const InputFile& file) override { return lines_.Open(file); }
  LineSource& lines() { return lines_; }

 private:
  uint64_t BytesReadInFile() const final { return lines_.bytes_read(); }

  LineSource lines_;
};

// A LineStreamReader for formats whose records each start at a line (lines, BEIR, NPL): it hands
// every line to ReadRecord until one yields a document.
class LineRecordReader : public LineStreamReader {
 public:
  using LineStreamReader::LineStreamReader;

 protected:
  // Reads the record that starts with `line` (a record of several lines reads the rest from
  // lines()) into *doc (already cleared). Returns false to skip it: a blank line, or a bad record
  // reported with ReportBadDocument, after which *doc must be cleared again.
  virtual absl::StatusOr<bool> ReadRecord(const InputFile& file, const std::string& line,
                                          Document* doc) = 0;

 private:
  absl::StatusOr<bool> NextInFile(const InputFile& file, Document* doc) final;
};

// A FileSequenceReader for files that hold a sequence of <TAG ...> ... </TAG> elements, one
// document each (TREC <DOC>, Reuters <REUTERS>, WikiExtractor <doc>). It scans the elements and
// reports unclosed ones; subclasses only turn one complete element into a document.
class ElementReader : public FileSequenceReader {
 protected:
  ElementReader(InputFiles files, ReaderOptions options, absl::string_view tag);

  // Fills *doc (already cleared) from one complete element. Returns false to skip the element,
  // after reporting why with ReportBadDocument.
  virtual bool ParseElement(const InputFile& file, const Element& element, Document* doc) = 0;

 private:
  absl::Status OpenFile(const InputFile& file) final;
  absl::StatusOr<bool> NextInFile(const InputFile& file, Document* doc) final;
  uint64_t BytesReadInFile() const final { return lines_.bytes_read(); }

  std::string tag_;
  LineSource lines_;
  ElementScanner scanner_;
};

// FormatSpec::make for a reader constructed from the input's files and the options alone.
template <typename Reader>
std::unique_ptr<DocumentReader> MakeReader(InputFiles files, ReaderOptions options) {
  return std::make_unique<Reader>(std::move(files), std::move(options));
}

// A reader of one format over one unit of its input (a file, or a chunk of one, with the input's
// from_directory), for parallel parsing.
std::unique_ptr<DocumentReader> OpenUnitReader(const FormatSpec& format, bool from_directory,
                                               const InputFile& unit, ReaderOptions options);

// The parallel reader (parallel_reader.cc): parses the input's units on options.threads threads
// and hands their documents out in the input's order.
std::unique_ptr<DocumentReader> MakeParallelReader(const FormatSpec& format, InputFiles files,
                                                   ReaderOptions options);

}  // namespace tandem::index_builder::internal
