// File: index_export.h
//
// Writes a Tandem index in the formats other engines read:
//
//   CIFF, the Common Index File Format (Lin et al., "Supporting Interoperability Between
//   Open-Source Search Engines with the Common Index File Format", SIGIR 2020): a Header, every
//   list in lexicon order (docids as d-gaps), then one DocRecord per document in docid order.
//   Anserini, PISA and Terrier import it; tandem-index import reads it back (ciff_import.h).
//
//   PISA's uncompressed binary collection (pisa.readthedocs.io, "Indexes format"): sequences of
//   little-endian uint32, each prefixed by its length. BASE.docs holds the sequence [num_docs] and
//   then each term's docids, BASE.freqs each term's frequencies, BASE.sizes every document's
//   length; beside them BASE.terms (one term a line, in the lists' order) and BASE.documents (one
//   external id a line, in docid order), so that `compress_inverted_index -c BASE` builds a PISA
//   index and `lexicon build` maps query terms and results.
//
//   TANDEM_ASSIGN_OR_RETURN(auto idx, index::Index::Open("/srv/idx"));
//   TANDEM_RETURN_IF_ERROR(ExportCiff(*idx, "/tmp/idx.ciff"));
//   TANDEM_RETURN_IF_ERROR(ExportPisa(*idx, "/tmp/pisa/idx"));  // idx.docs, idx.freqs, ...
//
// Each file is written beside its name and renamed into place once complete.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "index/index.h"

namespace tandem::index_builder {

// `description` goes into the header; empty: one naming the index, its source and its analyzer.
absl::Status ExportCiff(const index::Index& index, const std::string& path,
                        const std::string& description = "");

// INVALID_ARGUMENT when a term or external id holds a line feed (the text files are one a line).
absl::Status ExportPisa(const index::Index& index, const std::string& basename);

}  // namespace tandem::index_builder
