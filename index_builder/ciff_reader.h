// File: ciff_reader.h
//
// Reads a Common Index File Format file (CIFF: Lin et al., "Supporting Interoperability Between
// Open-Source Search Engines with the Common Index File Format", SIGIR 2020), one message at a
// time, so memory stays bounded by the longest postings list whatever the file's size. The file is
// a stream of varint-length-delimited protobuf messages
// (proto/ciff/common_index_file_format.proto): a Header, then Header.num_postings_lists
// PostingsList messages, then Header.num_docs DocRecord messages, and nothing after them.
//
// Every record is checked as it is read; a bad one is INVALID_ARGUMENT naming it, e.g.
//   "ciff: postings list 17 (term 'protein'): posting 3 has d-gap 0; postings must increase".
// Lists and records are numbered from 0 in file order. A list's postings must have strictly
// increasing docids below Header.num_docs and term frequencies of at least 1, and its df and cf
// must equal the number of its postings and the sum of their tfs; doc records must carry docids
// 0, 1, 2, ... in order, each with a non-empty collection_docid and a length of at least 0. A
// message with a field its type does not define is refused too: it is most often a record of the
// next section, read because the header counts more records than the file holds.
//
//   TANDEM_ASSIGN_OR_RETURN(auto reader, CiffReader::Open("robust04.ciff"));
//   CiffPostingsList list;
//   for (uint32_t i = 0; i < reader->num_postings_lists(); ++i)
//     TANDEM_RETURN_IF_ERROR(reader->NextPostingsList(&list));
//   CiffDocRecord doc;
//   for (uint32_t i = 0; i < reader->num_docs(); ++i)
//   TANDEM_RETURN_IF_ERROR(reader->NextDocRecord(&doc)); TANDEM_RETURN_IF_ERROR(reader->Finish());
//   // no bytes after the last record
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ciff/common_index_file_format.pb.h"
#include "google/protobuf/io/coded_stream.h"

namespace google::protobuf::io {
class FileInputStream;
}

namespace tandem::index_builder {

// One postings list, checked, with absolute docids.
struct CiffPostingsList {
  std::string term;
  std::vector<uint32_t> docids;  // strictly increasing, each below the header's num_docs
  std::vector<uint32_t> freqs;   // each at least 1
};

struct CiffDocRecord {
  uint32_t docid = 0;
  std::string collection_docid;
  uint32_t length = 0;
};

class CiffReader {
 public:
  // Opens a regular file and reads its header. INVALID_ARGUMENT when it is not one or the header
  // is bad (a version other than 1, negative counts); NOT_FOUND when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<CiffReader>> Open(const std::string& path);
  ~CiffReader();

  const io::anserini::index::proto::Header& header() const { return header_; }
  uint32_t num_postings_lists() const { return num_lists_; }
  uint32_t num_docs() const { return num_docs_; }

  // The next postings list in file order (there must be one: the header counts them).
  absl::Status NextPostingsList(CiffPostingsList* list);
  // Passes over the next postings list, reading only its term and where it starts (for
  // ReadPostingsListAt); its postings are checked when it is read.
  absl::Status SkipPostingsList(std::string* term, uint64_t* offset);
  // Reads the list that starts at `offset` (from SkipPostingsList), list `ordinal` in file order.
  // Moves the read position; after it only more ReadPostingsListAt calls make sense.
  absl::Status ReadPostingsListAt(uint64_t offset, uint32_t ordinal, CiffPostingsList* list);

  // The next doc record, once every postings list has been read or skipped.
  absl::Status NextDocRecord(CiffDocRecord* doc);
  // After the last doc record: the file must end there.
  absl::Status Finish();

  // Bytes read so far, and the file's size.
  uint64_t offset() const;
  uint64_t file_bytes() const { return file_bytes_; }

 private:
  CiffReader() = default;
  absl::Status Seek(uint64_t offset);
  // Reads the length prefix at the read position and parses the message after it into *message.
  // `what` names the record in messages ("postings list 17").
  absl::Status ReadMessage(google::protobuf::Message* message, const std::string& what);
  // Reads the length prefix of the message at byte `start` (the stream's position): its size, and
  // where its body begins. The errors name `what` and say how the prefix is wrong.
  absl::Status ReadLengthPrefix(google::protobuf::io::CodedInputStream& in, uint64_t start,
                                const std::string& what, uint32_t* size, uint64_t* body) const;
  absl::Status CheckList(const io::anserini::index::proto::PostingsList& message, uint32_t ordinal,
                         CiffPostingsList* list) const;

  std::string path_;
  int fd_ = -1;
  uint64_t file_bytes_ = 0;
  uint64_t stream_base_ = 0;  // the file offset stream_ started at
  std::unique_ptr<google::protobuf::io::FileInputStream> stream_;
  io::anserini::index::proto::Header header_;
  io::anserini::index::proto::PostingsList list_message_;
  io::anserini::index::proto::DocRecord doc_message_;
  uint32_t num_lists_ = 0;
  uint32_t num_docs_ = 0;
  uint32_t lists_read_ = 0;
  uint32_t docs_read_ = 0;
};

}  // namespace tandem::index_builder
