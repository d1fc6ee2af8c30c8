#include "index_builder/ciff_import.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "index/index.h"
#include "index_builder/ciff_reader.h"

namespace tandem::index_builder {
namespace {

// Where one list is in the file.
struct ListPlace {
  std::string term;
  uint64_t offset = 0;
  uint32_t ordinal = 0;  // in file order
};

}  // namespace

std::string CiffImportSummary::Describe() const {
  return absl::StrFormat(
      "documents %d, terms %d (%s), postings %d, average length %.2f (the header's: %.2f), index "
      "%.1f KB, %.1f s",
      documents, terms, terms_reordered ? "read in the lexicon's order" : "in the lexicon's order",
      postings, average_doclength, header_average_doclength, index_bytes / 1e3, seconds);
}

absl::StatusOr<CiffImportSummary> ImportCiff(const std::string& path, const std::string& output,
                                             index::IndexWriterOptions options) {
  const auto start = std::chrono::steady_clock::now();
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<CiffReader> reader, CiffReader::Open(path));
  if (reader->num_docs() == 0) {
    return absl::InvalidArgumentError(
        "ciff: the header counts no doc records; an index needs documents. Nothing was written");
  }
  // First pass: where each list is, and its term.
  // Grown list by list: the header's count is not trusted before the lists are there.
  std::vector<ListPlace> places;
  for (uint32_t i = 0; i < reader->num_postings_lists(); ++i) {
    ListPlace& place = places.emplace_back();
    place.ordinal = i;
    TANDEM_RETURN_IF_ERROR(reader->SkipPostingsList(&place.term, &place.offset));
  }
  const auto by_term = [](const ListPlace& a, const ListPlace& b) { return a.term < b.term; };
  CiffImportSummary summary;
  summary.terms_reordered = !std::is_sorted(places.begin(), places.end(), by_term);
  if (summary.terms_reordered) std::stable_sort(places.begin(), places.end(), by_term);
  for (size_t i = 1; i < places.size(); ++i) {
    if (places[i].term == places[i - 1].term) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ciff: postings lists %d and %d both have term '%s'; a term has one list",
          places[i - 1].ordinal, places[i].ordinal, absl::Utf8SafeCHexEscape(places[i].term)));
    }
  }

  options.source_format = "ciff";
  options.source_input = path;
  TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<index::IndexWriter> writer,
                          index::IndexWriter::Create(output, options));
  CiffDocRecord doc;
  for (uint32_t d = 0; d < reader->num_docs(); ++d) {
    TANDEM_RETURN_IF_ERROR(reader->NextDocRecord(&doc));
    TANDEM_RETURN_IF_ERROR(writer->AddDocument(doc.collection_docid, doc.length));
  }
  TANDEM_RETURN_IF_ERROR(reader->Finish());

  // Second pass: the lists, in term order.
  CiffPostingsList list;
  for (const ListPlace& place : places) {
    TANDEM_RETURN_IF_ERROR(reader->ReadPostingsListAt(place.offset, place.ordinal, &list));
    TANDEM_RETURN_IF_ERROR(writer->AddPostingList(list.term, list.docids, list.freqs));
    summary.postings += list.docids.size();
  }
  TANDEM_RETURN_IF_ERROR(writer->Finish());

  summary.documents = reader->num_docs();
  summary.terms = places.size();
  summary.header_average_doclength = reader->header().average_doclength();
  summary.average_doclength = writer->manifest().stats.avg_doc_length;
  summary.description = reader->header().description();
  summary.index_bytes = index::MeasureIndexFiles(output).total;
  summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return summary;
}

}  // namespace tandem::index_builder
