// Feeds arbitrary bytes as a query file to workload::ParseQueries in every layout (auto, colon,
// colon-priority, tsv, plain), then turns each query's text (as auto-detection reads it) into an
// engine Query the way the benchmarks and the server do: the default (Anserini English) analyzer
// gives the terms, each of weight 1, MergeRepeatedTerms merges repeats and ValidateQuery checks it.
// The whole input also goes through ParseQueryMode and ToUtf8.
//
// Checks, besides no crash and no read out of bounds:
//   - auto and plain never fail, and plain gives one query per non-blank line;
//   - every id is non-empty and trimmed, every id and text is valid UTF-8;
//   - a query built from analyzed terms always validates; merging keeps each distinct term once,
//     in first-occurrence order, with the number of its occurrences as its weight;
//   - ToUtf8 gives valid UTF-8 and keeps valid UTF-8 as it is; a mode that parses has a name
//     that parses back to it.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "fuzz/fuzz_util.h"
#include "index/analyzer.h"
#include "index/query.h"
#include "workload/query_file.h"

namespace {

using tandem::workload::QueryFileFormat;
using tandem::workload::QueryRecord;

const tandem::index::Analyzer& DefaultAnalyzer() {
  static const auto* analyzer =
      tandem::index::Analyzer::Create(tandem::index::AnalyzerConfig{})->release();
  return *analyzer;
}

size_t NonBlankLines(absl::string_view text) {
  size_t lines = 0;
  while (true) {
    const size_t eol = text.find('\n');
    if (!absl::StripAsciiWhitespace(text.substr(0, eol)).empty()) ++lines;
    if (eol == text.npos) return lines;
    text.remove_prefix(eol + 1);
  }
}

void CheckRecord(const QueryRecord& record) {
  TANDEM_FUZZ_CHECK(!record.id.empty());
  TANDEM_FUZZ_CHECK(absl::StripAsciiWhitespace(record.id) == record.id);
  TANDEM_FUZZ_CHECK(tandem::fuzz::IsValidUtf8(record.id));
  TANDEM_FUZZ_CHECK(tandem::fuzz::IsValidUtf8(record.text));
}

void CheckQuery(const QueryRecord& record) {
  std::vector<std::string> terms;
  DefaultAnalyzer().Analyze(record.text, &terms);
  tandem::index::Query query;
  for (std::string& term : terms) query.terms.push_back({.term = term, .weight = 1.0f});
  TANDEM_FUZZ_CHECK(tandem::index::ValidateQuery(query).ok());

  const std::vector<tandem::index::QueryTerm> merged =
      tandem::index::MergeRepeatedTerms(query.terms);
  std::map<std::string, size_t> counts;
  std::vector<std::string> first_seen;
  for (const std::string& term : terms) {
    if (counts[term]++ == 0) first_seen.push_back(term);
  }
  TANDEM_FUZZ_CHECK(merged.size() == first_seen.size());
  for (size_t i = 0; i < merged.size(); ++i) {
    TANDEM_FUZZ_CHECK(merged[i].term == first_seen[i]);
    TANDEM_FUZZ_CHECK(merged[i].weight == static_cast<float>(counts[merged[i].term]));
  }
  query.terms = merged;
  TANDEM_FUZZ_CHECK(tandem::index::ValidateQuery(query).ok());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tandem::fuzz::Bytes input({reinterpret_cast<const char*>(data), size});
  const absl::string_view text = input.view();

  for (QueryFileFormat format :
       {QueryFileFormat::kAuto, QueryFileFormat::kColon, QueryFileFormat::kColonPriority,
        QueryFileFormat::kTsv, QueryFileFormat::kPlain}) {
    absl::StatusOr<std::vector<QueryRecord>> queries =
        tandem::workload::ParseQueries(text, format, "fuzz-queries");
    if (format == QueryFileFormat::kAuto || format == QueryFileFormat::kPlain) {
      TANDEM_FUZZ_CHECK(queries.ok());
    }
    if (!queries.ok()) continue;
    // A leading byte-order mark is dropped before lines are counted.
    const absl::string_view body = absl::StartsWith(text, "\xEF\xBB\xBF") ? text.substr(3) : text;
    if (format == QueryFileFormat::kPlain)
      TANDEM_FUZZ_CHECK(queries->size() == NonBlankLines(body));
    for (const QueryRecord& record : *queries) {
      CheckRecord(record);
      // The other layouts' texts are pieces of the same lines: analyzing the detected one's is
      // enough, and keeps the target fast.
      if (format == QueryFileFormat::kAuto) CheckQuery(record);
    }
  }

  const std::string utf8 = tandem::workload::ToUtf8(text);
  TANDEM_FUZZ_CHECK(tandem::fuzz::IsValidUtf8(utf8));
  if (tandem::fuzz::IsValidUtf8(text)) TANDEM_FUZZ_CHECK(utf8 == text);

  tandem::index::QueryMode mode;
  if (tandem::index::ParseQueryMode(text, &mode)) {
    tandem::index::QueryMode again;
    TANDEM_FUZZ_CHECK(tandem::index::ParseQueryMode(tandem::index::QueryModeName(mode), &again));
    TANDEM_FUZZ_CHECK(again == mode);
  }
  return 0;
}
