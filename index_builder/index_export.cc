#include "index_builder/index_export.h"

#include <bit>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "base/status_macros.h"
#include "ciff/common_index_file_format.pb.h"
#include "google/protobuf/io/coded_stream.h"

namespace tandem::index_builder {
namespace {

namespace ciff = io::anserini::index::proto;
namespace fs = std::filesystem;

static_assert(std::endian::native == std::endian::little,
              "PISA's collections are little-endian uint32, written here as they lie in memory");

constexpr uint64_t kInt32Max = std::numeric_limits<int32_t>::max();

// A file written under a temporary name and renamed to `path` by Commit; removed if not committed.
class OutputFile {
 public:
  explicit OutputFile(std::string path)
      : path_(std::move(path)), tmp_(absl::StrCat(path_, ".tmp")) {
    out_.open(tmp_, std::ios::binary | std::ios::trunc);
  }
  ~OutputFile() {
    if (!committed_) {
      out_.close();
      std::error_code ec;
      fs::remove(tmp_, ec);
    }
  }
  absl::Status status() const {
    if (out_) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("cannot write '", tmp_, "'"));
  }
  void Write(absl::string_view bytes) {
    out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  }
  // One PISA binary sequence: its length, then the values.
  void WriteSequence(absl::Span<const uint32_t> values) {
    const uint32_t n = static_cast<uint32_t>(values.size());
    out_.write(reinterpret_cast<const char*>(&n), 4);
    out_.write(reinterpret_cast<const char*>(values.data()),
               static_cast<std::streamsize>(4 * values.size()));
  }
  absl::Status Commit() {
    out_.close();
    if (!out_) return absl::InternalError(absl::StrCat("cannot write '", tmp_, "'"));
    std::error_code ec;
    fs::rename(tmp_, path_, ec);
    if (ec) {
      return absl::InternalError(
          absl::StrCat("cannot rename '", tmp_, "' to '", path_, "': ", ec.message()));
    }
    committed_ = true;
    return absl::OkStatus();
  }

 private:
  std::string path_, tmp_;
  std::ofstream out_;
  bool committed_ = false;
};

// Calls visit(term, docids, freqs) for every list in lexicon order.
absl::Status ForEachList(
    const index::Index& index,
    const std::function<absl::Status(const index::TermInfo&, absl::Span<const uint32_t>,
                                     absl::Span<const uint32_t>)>& visit) {
  std::vector<uint32_t> docids, freqs;
  for (uint64_t i = 0; i < index.num_terms(); ++i) {
    const index::TermInfo t = index.term_at(i);
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView list, index.postings(t));
    docids.resize(list.num_postings());
    freqs.resize(list.num_postings());
    for (uint32_t b = 0; b < list.num_blocks(); ++b) {
      const size_t at = size_t{b} * index::kBlockSize;
      TANDEM_RETURN_IF_ERROR(list.DecodeDocids(index.codec(), b, docids.data() + at));
      TANDEM_RETURN_IF_ERROR(list.DecodeFreqs(index.codec(), b, freqs.data() + at));
    }
    TANDEM_RETURN_IF_ERROR(visit(t, docids, freqs));
  }
  return absl::OkStatus();
}

// A varint-length-delimited message, as protobuf's writeDelimitedTo writes it.
absl::Status WriteDelimited(const google::protobuf::Message& message, OutputFile& out) {
  const size_t size = message.ByteSizeLong();
  if (size > kInt32Max) {
    return absl::ResourceExhaustedError(
        absl::StrCat("ciff: a ", message.GetDescriptor()->name(), " of ", size,
                     " bytes; protobuf messages hold at most 2 GiB"));
  }
  uint8_t prefix[5];  // a varint32 takes at most 5 bytes
  uint8_t* end = google::protobuf::io::CodedOutputStream::WriteVarint32ToArray(
      static_cast<uint32_t>(size), prefix);
  out.Write(absl::string_view(reinterpret_cast<const char*>(prefix), end - prefix));
  out.Write(message.SerializeAsString());
  return out.status();
}

absl::Status CheckLine(absl::string_view what, absl::string_view text) {
  if (text.find('\n') == absl::string_view::npos) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("pisa: %s '%s' holds a line feed; the %ss file is one a line", what,
                      absl::Utf8SafeCHexEscape(text), what));
}

}  // namespace

absl::Status ExportCiff(const index::Index& index, const std::string& path,
                        const std::string& description) {
  const index::IndexStats& stats = index.stats();
  if (index.num_terms() > kInt32Max || stats.num_docs > kInt32Max) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ciff: %d terms and %d documents; CIFF counts and docids are int32",
                        index.num_terms(), stats.num_docs));
  }
  OutputFile out(path);
  TANDEM_RETURN_IF_ERROR(out.status());
  ciff::Header header;
  header.set_version(1);
  header.set_num_postings_lists(static_cast<int32_t>(index.num_terms()));
  header.set_num_docs(static_cast<int32_t>(stats.num_docs));
  header.set_total_postings_lists(static_cast<int32_t>(index.num_terms()));
  header.set_total_docs(static_cast<int32_t>(stats.num_docs));
  header.set_total_terms_in_collection(static_cast<int64_t>(stats.total_doc_length));
  header.set_average_doclength(stats.avg_doc_length);
  const index::IndexManifest& m = index.manifest();
  header.set_description(
      !description.empty()
          ? description
          : absl::StrFormat(
                "Tandem index %s (id %s, from %s input %s), analyzer %s; exported by tandem-index",
                index.directory(), m.index_id, m.source_format, m.source_input,
                m.analyzer.Describe()));
  TANDEM_RETURN_IF_ERROR(WriteDelimited(header, out));

  ciff::PostingsList list;
  TANDEM_RETURN_IF_ERROR(
      ForEachList(index,
                  [&](const index::TermInfo& t, absl::Span<const uint32_t> docids,
                      absl::Span<const uint32_t> freqs) -> absl::Status {
                    list.Clear();
                    list.set_term(std::string(t.term));
                    list.set_df(t.df);
                    list.set_cf(static_cast<int64_t>(t.cf));
                    list.mutable_postings()->Reserve(static_cast<int>(docids.size()));
                    uint32_t previous = 0;
                    for (size_t i = 0; i < docids.size(); ++i) {
                      if (freqs[i] > kInt32Max) {
                        return absl::InvalidArgumentError(absl::StrFormat(
                            "ciff: term '%s' occurs %d times in document %d; CIFF's tf is int32",
                            t.term, freqs[i], docids[i]));
                      }
                      ciff::Posting* p = list.add_postings();
                      p->set_docid(static_cast<int32_t>(docids[i] - previous));
                      p->set_tf(static_cast<int32_t>(freqs[i]));
                      previous = docids[i];
                    }
                    return WriteDelimited(list, out);
                  }));

  ciff::DocRecord doc;
  for (uint32_t d = 0; d < stats.num_docs; ++d) {
    if (index.doc_length(d) > kInt32Max) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ciff: document %d has %d terms; CIFF's doclength is int32", d, index.doc_length(d)));
    }
    doc.set_docid(static_cast<int32_t>(d));
    doc.set_collection_docid(std::string(index.external_id(d)));
    doc.set_doclength(static_cast<int32_t>(index.doc_length(d)));
    TANDEM_RETURN_IF_ERROR(WriteDelimited(doc, out));
  }
  return out.Commit();
}

absl::Status ExportPisa(const index::Index& index, const std::string& basename) {
  const uint32_t num_docs = index.num_docs();
  OutputFile docs(basename + ".docs"), freqs(basename + ".freqs"), sizes(basename + ".sizes"),
      terms(basename + ".terms"), documents(basename + ".documents");
  for (OutputFile* f : {&docs, &freqs, &sizes, &terms, &documents}) {
    TANDEM_RETURN_IF_ERROR(f->status());
  }
  docs.WriteSequence({num_docs});
  TANDEM_RETURN_IF_ERROR(
      ForEachList(index,
                  [&](const index::TermInfo& t, absl::Span<const uint32_t> list_docids,
                      absl::Span<const uint32_t> list_freqs) -> absl::Status {
                    TANDEM_RETURN_IF_ERROR(CheckLine("term", t.term));
                    docs.WriteSequence(list_docids);
                    freqs.WriteSequence(list_freqs);
                    terms.Write(t.term);
                    terms.Write("\n");
                    return docs.status().ok() ? freqs.status() : docs.status();
                  }));
  sizes.WriteSequence(absl::MakeConstSpan(index.doc_lengths(), num_docs));
  for (uint32_t d = 0; d < num_docs; ++d) {
    TANDEM_RETURN_IF_ERROR(CheckLine("document", index.external_id(d)));
    documents.Write(index.external_id(d));
    documents.Write("\n");
  }
  for (OutputFile* f : {&docs, &freqs, &sizes, &terms, &documents}) {
    TANDEM_RETURN_IF_ERROR(f->Commit());
  }
  return absl::OkStatus();
}

}  // namespace tandem::index_builder
