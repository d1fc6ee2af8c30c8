// File: ciff_import.h
//
// Builds a Tandem index from a CIFF file (ciff_reader.h; Lin et al., SIGIR 2020), the format in
// which Anserini, PISA and Terrier exchange inverted indexes. The document table comes from the
// doc records (external id = collection_docid, length = doclength), the lists from the postings
// lists, and the BM25 statistics (N, average document length) from the documents, as a Tandem
// build computes them.
//
// The file is read twice, each time one message at a time: first the terms and the doc records,
// then the lists, in the lexicon's order (strictly increasing bytes). A file whose terms come in
// another order is imported all the same, by reading its lists in that order; two lists of one term
// are refused. Memory holds the terms and one list at a time. Any bad record fails the import with
// a message naming it, and an index already at the output stays as it was.
//
// CIFF does not say which analyzer made its terms: the index records the one given in the writer
// options (Tandem's default is Anserini's DefaultEnglishAnalyzer, which Anserini's CIFF exports
// use), and the server analyzes queries with it.
//
//   index::IndexWriterOptions options;  // codec, analyzer
//   TANDEM_ASSIGN_OR_RETURN(CiffImportSummary s, ImportCiff("robust04.ciff", "/srv/idx", options));
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "index/index_writer.h"

namespace tandem::index_builder {

struct CiffImportSummary {
  uint64_t documents = 0;
  uint64_t terms = 0;
  uint64_t postings = 0;
  bool terms_reordered = false;  // the file's lists were not in the lexicon's order
  double header_average_doclength = 0;
  float average_doclength = 0;  // what the index stores, from the doc records
  std::string description;      // the header's
  uint64_t index_bytes = 0;
  double seconds = 0;

  // "documents 5183, terms 26914 (in the lexicon's order), postings 481020, average length
  // 87.21 (the header's: 87.21), index 1900.2 KB, 0.4 s"
  std::string Describe() const;
};

// Writes the index of the CIFF file at `path` to `output`. `options` gives the codec and the
// analyzer to record; its source_format becomes "ciff" and source_input `path`.
absl::StatusOr<CiffImportSummary> ImportCiff(const std::string& path, const std::string& output,
                                             index::IndexWriterOptions options);

}  // namespace tandem::index_builder
