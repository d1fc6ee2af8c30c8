#include "index_builder/document_reader.h"

#include <algorithm>
#include <array>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string_view>
#include <system_error>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "index_builder/readers_internal.h"

namespace tandem::index_builder {
namespace internal {
namespace {

namespace fs = std::filesystem;

// Every format, in the order help texts list them.
constexpr std::array<const FormatSpec*, 8> kFormats = {
    &kBeirFormat,    &kTrecFormat,          &kSmartFormat, &kNplFormat,
    &kReutersFormat, &kWikiExtractorFormat, &kEmailFormat, &kLinesFormat};

bool IsHidden(const fs::path& path) { return path.filename().string().starts_with('.'); }

absl::Status FileSystemError(const std::error_code& error, absl::string_view what,
                             const fs::path& path) {
  return absl::Status(absl::ErrnoToStatusCode(error.value()),
                      absl::StrCat(what, " ", path.string(), ": ", error.message()));
}

}  // namespace

absl::StatusOr<InputFiles> ListInputFiles(const std::string& path, const FormatSpec& format) {
  std::error_code error;
  const fs::path root(path);
  const fs::file_status status = fs::status(root, error);
  if (error && error != std::errc::no_such_file_or_directory) {
    return FileSystemError(error, "cannot stat", root);
  }
  if (!fs::exists(status))
    return absl::NotFoundError(absl::StrCat("no such file or directory: ", path));

  InputFiles input;
  if (!fs::is_directory(status)) {
    input.files.push_back({root, root.string(), root.filename().string()});
    return input;
  }
  input.from_directory = true;
  fs::recursive_directory_iterator it(root, error);
  if (error) return FileSystemError(error, "cannot list", root);
  for (; it != fs::recursive_directory_iterator(); it.increment(error)) {
    const fs::path& entry = it->path();
    // An entry whose type cannot be read (a dangling symlink) is no input file; it is not an error.
    std::error_code type_error;
    if (IsHidden(entry)) {
      if (it->is_directory(type_error)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(type_error) || !format.Selects(entry)) continue;
    input.files.push_back({entry, entry.string(), entry.lexically_relative(root).generic_string()});
  }
  if (error) return FileSystemError(error, "cannot list", root);
  // Directory iteration order is unspecified; sorting makes docIDs the same on every machine.
  std::sort(input.files.begin(), input.files.end(),
            [](const InputFile& a, const InputFile& b) { return a.path < b.path; });
  if (format.drop_files != nullptr) format.drop_files(&input.files);
  if (input.files.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no ", format.name, " input files (", format.files_wanted, ") under ", path));
  }
  return input;
}

bool StartsElement(absl::string_view line, absl::string_view tag) {
  if (line.size() < tag.size() + 1 || line[0] != '<' || line.substr(1, tag.size()) != tag) {
    return false;
  }
  const size_t after = tag.size() + 1;
  return after == line.size() || line[after] == '>' || line[after] == ' ' || line[after] == '\t';
}

std::string Location(const InputFile& file, int64_t line) {
  return absl::StrCat(file.name, ":", line);
}

absl::StatusOr<std::string> ReadFile(const InputFile& file) {
  std::ifstream in(file.path, std::ios::binary);
  if (!in) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", file.name));
  std::string contents((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("error reading ", file.name));
  return contents;
}

absl::Status LineSource::Open(const InputFile& file) {
  in_.close();
  in_.clear();
  in_.open(file.path, std::ios::binary);
  name_ = file.name;
  line_number_ = file.first_line - 1;
  bytes_read_ = 0;
  bytes_wanted_ = file.end == InputFile::kToEnd ? InputFile::kToEnd : file.end - file.begin;
  if (!in_) return absl::ErrnoToStatus(errno, absl::StrCat("cannot open ", file.name));
  if (file.begin > 0 && !in_.seekg(static_cast<std::streamoff>(file.begin))) {
    return absl::DataLossError(absl::StrCat("cannot seek to byte ", file.begin, " of ", file.name));
  }
  return absl::OkStatus();
}

bool LineSource::Next(std::string* line) {
  // A chunk ends at a line start, so the last line read ends exactly at the chunk's end.
  if (bytes_read_ >= bytes_wanted_) return false;
  if (!std::getline(in_, *line)) return false;
  ++line_number_;
  bytes_read_ += line->size() + 1;
  if (!line->empty() && line->back() == '\r') line->pop_back();
  return true;
}

absl::Status LineSource::status() const {
  if (in_.bad())
    return absl::DataLossError(absl::StrCat("error reading ", name_, " after line ", line_number_));
  return absl::OkStatus();
}

ElementScanner::ElementScanner(LineSource* lines, absl::string_view tag)
    : lines_(lines), open_(absl::StrCat("<", tag)), close_(absl::StrCat("</", tag, ">")) {}

size_t ElementScanner::FindOpen(absl::string_view text, size_t from) const {
  while (true) {
    const size_t at = text.find(open_, from);
    if (at == absl::string_view::npos) return at;
    const size_t after = at + open_.size();
    if (after == text.size() || text[after] == '>' || text[after] == ' ' || text[after] == '\t')
      return at;
    from = after;
  }
}

absl::StatusOr<bool> ElementScanner::Next(Element* element) {
  // Find the open tag, in the pending rest of the last line first.
  std::string segment;
  size_t open = std::string::npos;
  int64_t line = 0;
  if (has_pending_) {
    segment = std::move(pending_);
    line = pending_line_;
    has_pending_ = false;
    open = FindOpen(segment, 0);
  }
  while (open == std::string::npos) {
    if (!lines_->Next(&segment)) {
      TANDEM_RETURN_IF_ERROR(lines_->status());
      return false;
    }
    line = lines_->line_number();
    open = FindOpen(segment, 0);
  }
  element->text.clear();
  element->line = line;
  element->complete = false;

  // Collect lines up to the close tag. An open tag before it means this element was never closed:
  // it is returned incomplete and the new one is kept for the next call.
  segment.erase(0, open);
  size_t from = open_.size();
  while (true) {
    const size_t close = segment.find(close_, from);
    const size_t reopen = FindOpen(segment, from);
    if (reopen != std::string::npos && reopen < close) {
      element->text.append(segment, 0, reopen);
      pending_ = segment.substr(reopen);
      pending_line_ = lines_->line_number();
      has_pending_ = true;
      return true;
    }
    if (close != std::string::npos) {
      const size_t end = close + close_.size();
      element->text.append(segment, 0, end);
      element->complete = true;
      pending_ = segment.substr(end);
      pending_line_ = lines_->line_number();
      has_pending_ = !pending_.empty();
      return true;
    }
    element->text.append(segment);
    element->text.push_back('\n');
    if (!lines_->Next(&segment)) {
      TANDEM_RETURN_IF_ERROR(lines_->status());
      return true;  // incomplete: the file ended inside the element
    }
    from = 0;
  }
}

FileSequenceReader::FileSequenceReader(InputFiles files, ReaderOptions options)
    : files_(std::move(files)), options_(std::move(options)) {
  file_bytes_.reserve(files_.files.size());
  for (const InputFile& file : files_.files) {
    std::error_code error;
    uint64_t size = file.end - file.begin;
    if (file.end == InputFile::kToEnd) {
      const uintmax_t whole = fs::file_size(file.path, error);
      size = error || whole < file.begin ? 0 : static_cast<uint64_t>(whole) - file.begin;
    }
    file_bytes_.push_back(size);
    total_bytes_ += file_bytes_.back();
  }
}

absl::StatusOr<bool> FileSequenceReader::Next(Document* doc) {
  while (true) {
    if (current_ == nullptr) {
      if (next_file_ == files_.files.size()) return false;
      const InputFile& file = files_.files[next_file_++];
      TANDEM_RETURN_IF_ERROR(OpenFile(file));
      current_ = &file;
    }
    doc->Clear();
    TANDEM_ASSIGN_OR_RETURN(const bool found, NextInFile(*current_, doc));
    if (found) return true;
    current_ = nullptr;
    finished_bytes_ += file_bytes_[next_file_ - 1];
  }
}

ReadProgress FileSequenceReader::Progress() const {
  uint64_t in_file = 0;
  if (current_ != nullptr) in_file = std::min(BytesReadInFile(), file_bytes_[next_file_ - 1]);
  return {.bytes_read = finished_bytes_ + in_file, .bytes_total = total_bytes_};
}

void FileSequenceReader::ReportBadDocument(const InputFile& file, int64_t line,
                                           absl::string_view what) const {
  if (options_.on_bad_document) {
    options_.on_bad_document(
        absl::InvalidArgumentError(absl::StrCat(Location(file, line), ": ", what)));
  }
}

absl::StatusOr<bool> LineRecordReader::NextInFile(const InputFile& file, Document* doc) {
  std::string line;
  while (lines().Next(&line)) {
    TANDEM_ASSIGN_OR_RETURN(const bool read, ReadRecord(file, line, doc));
    if (read) return true;
  }
  TANDEM_RETURN_IF_ERROR(lines().status());
  return false;
}

ElementReader::ElementReader(InputFiles files, ReaderOptions options, absl::string_view tag)
    : FileSequenceReader(std::move(files), std::move(options)), tag_(tag), scanner_(&lines_, tag) {}

absl::Status ElementReader::OpenFile(const InputFile& file) {
  scanner_ = ElementScanner(&lines_, tag_);
  return lines_.Open(file);
}

absl::StatusOr<bool> ElementReader::NextInFile(const InputFile& file, Document* doc) {
  Element element;
  while (true) {
    TANDEM_ASSIGN_OR_RETURN(const bool found, scanner_.Next(&element));
    if (!found) return false;
    if (!element.complete) {
      ReportBadDocument(file, element.line, absl::StrCat("<", tag_, "> without </", tag_, ">"));
      continue;
    }
    if (ParseElement(file, element, doc)) return true;
    doc->Clear();
  }
}

std::unique_ptr<DocumentReader> OpenUnitReader(const FormatSpec& format, bool from_directory,
                                               const InputFile& unit, ReaderOptions options) {
  InputFiles files;
  files.from_directory = from_directory;
  files.files.push_back(unit);
  return format.make(std::move(files), std::move(options));
}

absl::string_view FirstNonBlankLine(absl::string_view text) {
  while (!text.empty()) {
    const size_t eol = std::min(text.find('\n'), text.size());
    absl::string_view line = text.substr(0, eol);
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    if (!absl::StripAsciiWhitespace(line).empty()) return line;
    text.remove_prefix(std::min(eol + 1, text.size()));
  }
  return {};
}

bool HasJsonMember(absl::string_view json, absl::string_view key) {
  const std::string quoted = absl::StrCat("\"", key, "\"");
  for (size_t at = json.find(quoted); at != absl::string_view::npos;
       at = json.find(quoted, at + 1)) {
    const absl::string_view rest =
        absl::StripLeadingAsciiWhitespace(json.substr(at + quoted.size()));
    if (absl::StartsWith(rest, ":")) return true;
  }
  return false;
}

}  // namespace internal

absl::StatusOr<DetectedFormat> DetectDocumentFormat(const std::string& path) {
  // Every file counts, whatever a format would pick from a directory: kLinesFormat lists them all.
  TANDEM_ASSIGN_OR_RETURN(internal::InputFiles files,
                          internal::ListInputFiles(path, internal::kLinesFormat));
  constexpr size_t kSampledFiles = 16;
  std::array<size_t, internal::kFormats.size()> votes{};
  size_t sampled = 0;
  for (const internal::InputFile& file : files.files) {
    if (sampled == kSampledFiles) break;
    std::ifstream in(file.path, std::ios::binary);
    if (!in) {
      return absl::NotFoundError(absl::StrCat("cannot read ", file.name, " to tell its format"));
    }
    std::string head(internal::kSniffBytes, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(in.gcount()));
    if (head.starts_with("\xEF\xBB\xBF")) head.erase(0, 3);  // a UTF-8 byte order mark
    ++sampled;
    for (size_t f = 0; f < internal::kFormats.size(); ++f) {
      const internal::FormatSpec& spec = *internal::kFormats[f];
      if ((!files.from_directory || spec.Selects(file.path)) && spec.recognizes(head)) ++votes[f];
    }
  }
  // Most files recognized wins; on a tie the earlier format of kFormats. Lines, the last, takes
  // any text, so it wins only when no other format recognizes a file.
  size_t best = 0;
  for (size_t f = 1; f + 1 < votes.size(); ++f) {
    if (votes[f] > votes[best]) best = f;
  }
  if (votes[best] == 0) best = votes.size() - 1;
  if (votes[best] == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("cannot tell the format of ", path, " from its first ", sampled,
                     " file(s); give --format (", absl::StrJoin(DocumentFormatNames(), ", "), ")"));
  }
  return DetectedFormat{.format = std::string(internal::kFormats[best]->name),
                        .files_recognized = votes[best],
                        .files_sampled = sampled};
}

absl::StatusOr<std::unique_ptr<DocumentReader>> OpenDocumentReader(std::string_view format_name,
                                                                   const std::string& path,
                                                                   ReaderOptions options) {
  // The interface takes std::string_view; Debian's abseil has its own string_view type.
  const absl::string_view format(format_name.data(), format_name.size());
  for (const internal::FormatSpec* spec : internal::kFormats) {
    if (spec->name != format) continue;
    TANDEM_ASSIGN_OR_RETURN(internal::InputFiles files, internal::ListInputFiles(path, *spec));
    if (options.threads != 1) return internal::MakeParallelReader(*spec, std::move(files), options);
    return spec->make(std::move(files), std::move(options));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown document format \"", format,
                   "\"; known formats: ", absl::StrJoin(DocumentFormatNames(), ", ")));
}

std::vector<std::string> DocumentFormatNames() {
  std::vector<std::string> names;
  for (const internal::FormatSpec* spec : internal::kFormats) names.emplace_back(spec->name);
  return names;
}

std::vector<AttributeField> DocumentAttributeFields(std::string_view format_name) {
  const absl::string_view format(format_name.data(), format_name.size());
  for (const internal::FormatSpec* spec : internal::kFormats) {
    if (spec->name != format) continue;
    if (spec->attribute_fields == nullptr) return {};
    return spec->attribute_fields();
  }
  return {};
}

}  // namespace tandem::index_builder
