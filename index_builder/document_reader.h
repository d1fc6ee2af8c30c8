// File: document_reader.h
//
// Readers turn a collection on disk into a stream of documents for the inverter. One reader per
// input format; OpenDocumentReader picks it by name. PATH may be one file or a directory, which is
// walked recursively in sorted path order so docIDs are deterministic.
//
//   ReaderOptions options;
//   options.on_bad_document = [](const absl::Status& s) { std::cerr << s.message() << "\n"; };
//   TANDEM_ASSIGN_OR_RETURN(auto reader, OpenDocumentReader("beir", "corpus.jsonl", options));
//   Document doc;
//   while (true) {
//     TANDEM_ASSIGN_OR_RETURN(bool more, reader->Next(&doc));
//     if (!more) break;
//     ...
//   }
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tandem::index_builder {

struct Document {
  // The collection's own identifier (BEIR "_id", TREC DOCNO, SMART .I number, Reuters NEWID, ...).
  std::string external_id;
  // Everything that is indexed, already joined (e.g. title + "\n" + text).
  std::string text;
  // Stored, not indexed, fields: e-mail headers, titles, URLs. Kept in the document table.
  std::vector<std::pair<std::string, std::string>> fields;
  // Filterable attributes, (field, value) pairs in the order found; a field may repeat when it is
  // multi-valued (Reuters TOPICS). Numbers are decimal integers. Stored as bitmap indexes when
  // the build selects the field (--attributes).
  std::vector<std::pair<std::string, std::string>> attributes;
  // Where the document starts, "file:line", for messages.
  std::string location;

  void Clear() {
    external_id.clear();
    text.clear();
    fields.clear();
    attributes.clear();
    location.clear();
  }
};

struct ReaderOptions {
  // Called once for each malformed document, which is then skipped. The status is
  // INVALID_ARGUMENT and its message starts with "file:line: ". When unset, bad documents are
  // skipped silently.
  std::function<void(const absl::Status&)> on_bad_document;

  // Parsing threads; 0: one per core. With more than one, the input's files, and chunks of its
  // large files where the format allows cutting them at record boundaries (beir, lines, trec,
  // reuters, wikiextractor), are parsed in parallel; Next still hands out the documents in the
  // order one thread reads them, and on_bad_document is still called from Next's thread, in that
  // order, with the same locations. Other formats (email, smart, npl) are parsed a whole file per
  // thread; a pipe, or a file of theirs too large to hold parsed, is read by Next's thread.
  int threads = 1;
  // Large files of formats that can be cut are parsed in chunks of about this many bytes (cut at
  // the next record start).
  uint64_t chunk_bytes = 256 << 10;
  // At most this many input bytes (of files or chunks) parsed or being parsed ahead of Next, and
  // at most 4 units per thread: what bounds the parsed text held before inversion. One unit is
  // always let through, however large.
  uint64_t max_bytes_in_flight = 64 << 20;
};

// How far a reader has got, in bytes of its input files, for progress reports.
struct ReadProgress {
  uint64_t bytes_read = 0;
  uint64_t bytes_total = 0;  // 0: unknown
};

class DocumentReader {
 public:
  virtual ~DocumentReader() = default;

  // Fills *doc with the next document and returns true, or returns false at the end of input.
  // Errors that stop reading (unreadable file) are returned as a status.
  virtual absl::StatusOr<bool> Next(Document* doc) = 0;

  // Bytes read so far of the input's bytes: exact within files read line by line, whole files
  // otherwise. From the reading thread only.
  virtual ReadProgress Progress() const { return {}; }
};

// Opens a reader of `format` over `path`. Formats, with the files a directory PATH contributes:
// clang-format off
//   beir           BEIR corpus JSONL (corpus*.jsonl); id "_id", text title + "\n" + text
//   trec           TREC SGML <DOC> files (all); id DOCNO, text headline and <TEXT> sections
//   smart          SMART .I/.T/.W collections (*.all*: cran.all.1400, CISI.ALL, MED.ALL); id .I
//                  number
//   npl            NPL doc-text blocks (doc-text); id the block number
//   reuters        Reuters-21578 (*.sgm); id NEWID, text TITLE + BODY
//   wikiextractor  WikiExtractor <doc> files (all); id the id attribute
//   email          RFC 5322 messages, one per file, or the npm SpamAssassin JSON records (all);
//                  id the path relative to PATH ("<group>/<id>" for JSON records)
//   lines          one document per non-blank line (all); id the line number ("file:line" in a
//                  directory)
// clang-format on
// Every Document::text is valid UTF-8 (stray bytes are read as windows-1252). Errors: NOT_FOUND
// when PATH does not exist or a directory holds none of the format's files, INVALID_ARGUMENT for an
// unknown format (the message lists the known ones).
absl::StatusOr<std::unique_ptr<DocumentReader>> OpenDocumentReader(std::string_view format,
                                                                   const std::string& path,
                                                                   ReaderOptions options);

struct DetectedFormat {
  std::string format;
  size_t files_recognized = 0;  // of the files sampled, those that look like `format`
  size_t files_sampled = 0;
};

// The format of the collection at `path` (--format auto), judged from the first 64 KiB of each of
// its first 16 files (sorted path order): the format that recognizes the most of them, among the
// files it would read from a directory; ties go to the earlier format of the list above. "lines"
// is chosen only for text that opens with no markup or JSON. INVALID_ARGUMENT, listing the
// formats, when no format recognizes any file.
absl::StatusOr<DetectedFormat> DetectDocumentFormat(const std::string& path);

// The names accepted by OpenDocumentReader, for help texts.
std::vector<std::string> DocumentFormatNames();

// What an attribute's values are: text matched whole, or decimal integers.
enum class AttributeType { kKeyword, kInteger };

struct AttributeField {
  std::string name;
  AttributeType type = AttributeType::kKeyword;
  std::string description;  // one line, for help texts
};

// The attribute fields a format's documents carry (Document::attributes); empty for smart, npl,
// lines and an unknown name. Where the data names the fields (trec and wikiextractor tags, beir
// JSON members), one entry stands for them: its name is in angle brackets ("<tag>", "<member>")
// and its description says how the fields are named.
// clang-format off
//   beir           every scalar JSON member other than _id, title and text, by its name, and each
//                  scalar member of an object member as "outer.inner" (BEIR's metadata): strings
//                  are keywords, integral numbers integers, booleans "true" / "false"
//   trec           each short element of a <DOC> that is neither indexed nor its id (<DATE>, <SO>,
//                  <DD>), by its tag in lower case; none in a document indexed whole (web pages)
//   wikiextractor  each short element of a <doc> body whose tag is no HTML or MediaWiki tag
//   reuters        topics, places (several a story), lewissplit (train, test, not-used)
//   email          domain (of From, lower case), year and month (of Date), label (spam / ham,
//                  from the path or the JSON record), attachment (yes / no)
// clang-format on
// Values are trimmed UTF-8 with white space collapsed, never empty. Of fields the data names (beir,
// trec, wikiextractor), a value longer than kMaxAttributeValueBytes is none, and so is an element
// whose text has several lines (<DOCHDR>).
std::vector<AttributeField> DocumentAttributeFields(std::string_view format);

inline constexpr size_t kMaxAttributeValueBytes = 64;

}  // namespace tandem::index_builder
