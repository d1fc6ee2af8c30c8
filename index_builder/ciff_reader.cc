#include "index_builder/ciff_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/zero_copy_stream_impl.h"
#include "google/protobuf/wire_format_lite.h"

namespace tandem::index_builder {
namespace {

using google::protobuf::internal::WireFormatLite;
using google::protobuf::io::CodedInputStream;
namespace ciff = io::anserini::index::proto;

template <typename... Args>
absl::Status Bad(const absl::FormatSpec<Args...>& format, const Args&... args) {
  return absl::InvalidArgumentError(absl::StrCat("ciff: ", absl::StrFormat(format, args...)));
}

std::string ListName(uint32_t ordinal, const std::string& term) {
  return absl::StrFormat("postings list %d (term '%s')", ordinal, absl::Utf8SafeCHexEscape(term));
}

// The wire types PostingsList's fields are written with.
bool IsPostingsListTag(uint32_t tag) {
  switch (tag) {
    case WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):  // term
    case WireFormatLite::MakeTag(2, WireFormatLite::WIRETYPE_VARINT):            // df
    case WireFormatLite::MakeTag(3, WireFormatLite::WIRETYPE_VARINT):            // cf
    case WireFormatLite::MakeTag(4, WireFormatLite::WIRETYPE_LENGTH_DELIMITED):  // postings
      return true;
    default:
      return false;
  }
}

bool HasUnknownFields(const google::protobuf::Message& message) {
  return !message.GetReflection()->GetUnknownFields(message).empty();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CiffReader>> CiffReader::Open(const std::string& path) {
  std::unique_ptr<CiffReader> reader(new CiffReader());
  reader->path_ = path;
  reader->fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (reader->fd_ < 0) {
    return absl::NotFoundError(absl::StrCat("cannot open '", path, "': ", std::strerror(errno)));
  }
  struct stat st;
  if (::fstat(reader->fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "ciff: '", path, "' is not a regular file (CIFF is read twice: a file, not a pipe)"));
  }
  reader->file_bytes_ = static_cast<uint64_t>(st.st_size);
  TANDEM_RETURN_IF_ERROR(reader->Seek(0));
  TANDEM_RETURN_IF_ERROR(reader->ReadMessage(&reader->header_, "header"));
  const ciff::Header& h = reader->header_;
  if (h.version() != 1) {
    return Bad("header: version %d; this reader knows CIFF version 1", h.version());
  }
  if (h.num_postings_lists() < 0 || h.num_docs() < 0) {
    return Bad("header: num_postings_lists %d and num_docs %d must not be negative",
               h.num_postings_lists(), h.num_docs());
  }
  reader->num_lists_ = static_cast<uint32_t>(h.num_postings_lists());
  reader->num_docs_ = static_cast<uint32_t>(h.num_docs());
  return reader;
}

CiffReader::~CiffReader() {
  stream_.reset();
  if (fd_ >= 0) ::close(fd_);
}

uint64_t CiffReader::offset() const {
  return stream_base_ + static_cast<uint64_t>(stream_->ByteCount());
}

absl::Status CiffReader::Seek(uint64_t offset) {
  if (stream_ != nullptr && offset == this->offset()) return absl::OkStatus();
  stream_.reset();
  if (::lseek(fd_, static_cast<off_t>(offset), SEEK_SET) < 0) {
    return absl::InternalError(
        absl::StrCat("cannot seek in '", path_, "': ", std::strerror(errno)));
  }
  stream_base_ = offset;
  stream_ = std::make_unique<google::protobuf::io::FileInputStream>(fd_, 1 << 16);
  return absl::OkStatus();
}

absl::Status CiffReader::ReadLengthPrefix(CodedInputStream& in, uint64_t start,
                                          const std::string& what, uint32_t* size,
                                          uint64_t* body) const {
  if (start >= file_bytes_) {
    return Bad(
        "%s: the file ends at byte %d, before it; the header promises %d postings lists and %d doc "
        "records (truncated?)",
        what, file_bytes_, num_lists_, num_docs_);
  }
  if (!in.ReadVarint32(size)) {
    return Bad("%s: no length prefix at byte %d (a bad varint, or the file ends inside it)", what,
               start);
  }
  *body = start + static_cast<uint64_t>(in.CurrentPosition());
  if (*size > file_bytes_ - *body) {
    return Bad("%s: its length prefix at byte %d says %d bytes, past the end of the file (%d left)",
               what, start, *size, file_bytes_ - *body);
  }
  if (*size > INT_MAX) {
    return Bad("%s: %d bytes at byte %d; a message holds at most 2 GiB", what, *size, start);
  }
  return absl::OkStatus();
}

absl::Status CiffReader::ReadMessage(google::protobuf::Message* message, const std::string& what) {
  const uint64_t start = offset();
  CodedInputStream in(stream_.get());
  uint32_t size = 0;
  uint64_t body = 0;
  TANDEM_RETURN_IF_ERROR(ReadLengthPrefix(in, start, what, &size, &body));
  const CodedInputStream::Limit limit = in.PushLimit(static_cast<int>(size));
  if (!message->ParseFromCodedStream(&in) || !in.ConsumedEntireMessage() ||
      in.BytesUntilLimit() != 0) {
    return Bad("%s: the %d bytes at byte %d are not a %s message", what, size, body,
               message->GetDescriptor()->name());
  }
  in.PopLimit(limit);
  if (HasUnknownFields(*message)) {
    return Bad(
        "%s: the message at byte %d has fields a %s does not have (does the header count more "
        "records than the file holds?)",
        what, body, message->GetDescriptor()->name());
  }
  return absl::OkStatus();
}

absl::Status CiffReader::CheckList(const ciff::PostingsList& message, uint32_t ordinal,
                                   CiffPostingsList* list) const {
  const std::string name = ListName(ordinal, message.term());
  if (message.term().empty()) return Bad("postings list %d has an empty term", ordinal);
  const int n = message.postings_size();
  if (message.df() != n) return Bad("%s: df %d, but it holds %d postings", name, message.df(), n);
  if (n == 0) return Bad("%s has no postings", name);
  list->term = message.term();
  list->docids.resize(n);
  list->freqs.resize(n);
  int64_t docid = 0;
  int64_t cf = 0;
  for (int i = 0; i < n; ++i) {
    const ciff::Posting& p = message.postings(i);
    if (i == 0) {
      if (p.docid() < 0) return Bad("%s: posting 0 has docid %d", name, p.docid());
    } else if (p.docid() <= 0) {
      return Bad("%s: posting %d has d-gap %d; postings must increase", name, i, p.docid());
    }
    docid += p.docid();
    if (docid >= num_docs_) {
      return Bad("%s: posting %d has docid %d, not below the header's num_docs %d", name, i, docid,
                 num_docs_);
    }
    if (p.tf() <= 0) {
      return Bad("%s: posting %d (docid %d) has tf %d; a term occurs at least once", name, i, docid,
                 p.tf());
    }
    list->docids[i] = static_cast<uint32_t>(docid);
    list->freqs[i] = static_cast<uint32_t>(p.tf());
    cf += p.tf();
  }
  if (message.cf() != cf) {
    return Bad("%s: cf %d, but its postings' tfs sum to %d", name, message.cf(), cf);
  }
  return absl::OkStatus();
}

absl::Status CiffReader::NextPostingsList(CiffPostingsList* list) {
  if (lists_read_ >= num_lists_) {
    return absl::FailedPreconditionError("CiffReader: every postings list has been read");
  }
  const uint32_t ordinal = lists_read_++;
  TANDEM_RETURN_IF_ERROR(ReadMessage(&list_message_, absl::StrCat("postings list ", ordinal)));
  return CheckList(list_message_, ordinal, list);
}

absl::Status CiffReader::SkipPostingsList(std::string* term, uint64_t* offset) {
  if (lists_read_ >= num_lists_) {
    return absl::FailedPreconditionError("CiffReader: every postings list has been read");
  }
  const uint32_t ordinal = lists_read_++;
  const std::string what = absl::StrCat("postings list ", ordinal);
  const uint64_t start = this->offset();
  *offset = start;
  CodedInputStream in(stream_.get());
  uint32_t size = 0;
  uint64_t body = 0;
  TANDEM_RETURN_IF_ERROR(ReadLengthPrefix(in, start, what, &size, &body));
  in.PushLimit(static_cast<int>(size));
  term->clear();
  // Only the term is kept; the other fields are stepped over (their contents are checked when
  // ReadPostingsListAt parses the list).
  while (true) {
    const uint32_t tag = in.ReadTag();
    if (tag == 0) break;
    if (!IsPostingsListTag(tag)) {
      return Bad(
          "%s: the message at byte %d has fields a PostingsList does not have (does the header "
          "count more records than the file holds?)",
          what, body);
    }
    const bool ok = tag == WireFormatLite::MakeTag(1, WireFormatLite::WIRETYPE_LENGTH_DELIMITED)
                        ? WireFormatLite::ReadString(&in, term)
                        : WireFormatLite::SkipField(&in, tag);
    if (!ok) break;
  }
  if (!in.ConsumedEntireMessage() || in.BytesUntilLimit() != 0) {
    return Bad("%s: the %d bytes at byte %d are not a PostingsList message", what, size, body);
  }
  if (term->empty()) return Bad("postings list %d has an empty term", ordinal);
  return absl::OkStatus();
}

absl::Status CiffReader::ReadPostingsListAt(uint64_t offset, uint32_t ordinal,
                                            CiffPostingsList* list) {
  TANDEM_RETURN_IF_ERROR(Seek(offset));
  TANDEM_RETURN_IF_ERROR(ReadMessage(&list_message_, absl::StrCat("postings list ", ordinal)));
  return CheckList(list_message_, ordinal, list);
}

absl::Status CiffReader::NextDocRecord(CiffDocRecord* doc) {
  if (lists_read_ < num_lists_) {
    return absl::FailedPreconditionError("CiffReader: doc records come after the postings lists");
  }
  if (docs_read_ >= num_docs_) {
    return absl::FailedPreconditionError("CiffReader: every doc record has been read");
  }
  const uint32_t ordinal = docs_read_++;
  TANDEM_RETURN_IF_ERROR(ReadMessage(&doc_message_, absl::StrCat("doc record ", ordinal)));
  const ciff::DocRecord& m = doc_message_;
  if (m.docid() != static_cast<int64_t>(ordinal)) {
    return Bad("doc record %d has docid %d; doc records must come in docid order 0..%d", ordinal,
               m.docid(), num_docs_ - 1);
  }
  if (m.collection_docid().empty()) return Bad("doc record %d has no collection_docid", ordinal);
  if (m.doclength() < 0) {
    return Bad("doc record %d ('%s') has doclength %d", ordinal,
               absl::Utf8SafeCHexEscape(m.collection_docid()), m.doclength());
  }
  doc->docid = ordinal;
  doc->collection_docid = m.collection_docid();
  doc->length = static_cast<uint32_t>(m.doclength());
  return absl::OkStatus();
}

absl::Status CiffReader::Finish() {
  if (lists_read_ < num_lists_ || docs_read_ < num_docs_) {
    return absl::FailedPreconditionError("CiffReader::Finish before the last record");
  }
  const uint64_t end = offset();
  if (end != file_bytes_) {
    return Bad(
        "%d bytes follow the last of the header's %d postings lists and %d doc records, at byte "
        "%d (does the header count fewer records than the file holds?)",
        file_bytes_ - end, num_lists_, num_docs_, end);
  }
  return absl::OkStatus();
}

}  // namespace tandem::index_builder
