// File: live_ingest_xapian.h
//
// Xapian beside tandem-bench-live-ingest (built where pkg-config finds xapian-core): the same
// documents indexed with Xapian's TermGenerator (English stemmer, every term stemmed, no
// positions) and replace_document by id, committed every second, then the same queries
// (OP_AND and OP_OR, BM25Weight, top 10) with and without a writer at a fixed rate. Xapian takes
// one writer at a time, so its ingest is one thread; the figures that compare are per CPU second.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "index_builder/document_reader.h"
#include "nlohmann/json.hpp"

namespace tandem::bench {

struct XapianSideOptions {
  std::string dir;                                                 // the database's (created)
  size_t documents = 0;                                            // ingested: 0 .. documents-1
  std::function<void(size_t, index_builder::Document*)> document;  // the i-th document
  std::vector<std::string> queries;                                // their text, as in the log
  double write_rate = 50;    // documents per second of the writer beside the queries
  double query_seconds = 5;  // each measurement: passes over the queries at least this long
  size_t replace_every = 5;  // that writer replaces an old id every this many documents
};

// The ingest's figures and the queries' latencies, as JSON; an error where Xapian throws.
absl::StatusOr<nlohmann::json> RunXapianSide(const XapianSideOptions& options);

}  // namespace tandem::bench
