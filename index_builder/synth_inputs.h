// File: synth_inputs.h
//
// The real statistics a synthetic collection is drawn from (../shared/data/stats/):
//
//   term statistics   "term<TAB>df<TAB>cf" per line, '#' comment lines; plain or gzip-compressed.
//                     A comment such as "# English Wikipedia sample: 30729 articles, ..." declares
//                     the number of documents the statistics were counted over.
//   length histogram  "length<TAB>count" per line, '#' comment lines: how many documents have each
//                     length in tokens. The counts sum to the source collection's document count.
//
// Errors name the file and line ("stats.tsv:12: expected term<TAB>df<TAB>cf, got 'foo 3'").
//
//   TANDEM_ASSIGN_OR_RETURN(TermStats stats, LoadTermStats("wikipedia-termstats.tsv.gz"));
//   TANDEM_ASSIGN_OR_RETURN(LengthHistogram lengths,
//   LoadLengthHistogram("wikipedia-doclengths.tsv"));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace tandem::index_builder {

struct TermStat {
  std::string term;
  uint64_t df = 0;  // documents containing the term (>= 1)
  uint64_t cf = 0;  // occurrences (>= df)
};

struct TermStats {
  std::vector<TermStat> terms;      // in file order; no term twice
  uint64_t total_df = 0;            // sum of df over every term of the file
  uint64_t declared_documents = 0;  // from a "N articles" / "N documents" comment; 0 when absent
};

// NOT_FOUND when the file is missing; INVALID_ARGUMENT for a malformed line, df = 0, cf < df, a
// repeated term or a file without terms.
absl::StatusOr<TermStats> LoadTermStats(const std::string& path);

struct LengthHistogram {
  std::vector<uint32_t> lengths;  // in file order
  std::vector<uint64_t> counts;   // documents of lengths[i]
  uint64_t documents = 0;         // sum of counts
};

// NOT_FOUND when the file is missing; INVALID_ARGUMENT for a malformed line or no documents.
absl::StatusOr<LengthHistogram> LoadLengthHistogram(const std::string& path);

}  // namespace tandem::index_builder
