// File: synth.h
//
// The synthetic collection generator behind `tandem-index synth`: a web-scale index (GOV2's 25
// million documents by default) drawn from real term statistics and a real document-length
// histogram, written in the normal index format in minutes, so GPU benchmarks can create their
// collection on a freshly started machine.
//
// Calibration. With A source documents (the histogram's total), D = the sum of df over
// ALL terms of the statistics file and P = --postings-per-doc, the scale is s = P / (D / A) (s = 1
// when P = 0: raw ratios). A term's df becomes round(df / A * N * s), clamped to [1, N]; document
// lengths are the histogram's lengths times s; tf = 1 + geometric with mean cf/df - 1. Each list
// has exactly that df (uniform docIDs, see synth_lists.h), so the index's statistics are the
// formula's.
//
// Vocabulary. kQueryTerms: lists only for the analyzed terms of the query logs that the statistics
// know (Ao et al., seed 002 appendix E), plus the full document table; kAll: every term of the
// statistics file that the analyzer keeps (stop words have no list, as in a real index).
//
// The index records AnalyzerConfig{alnum, no possessive, lower-case, Lucene stop words, no
// stemmer}: the statistics are unstemmed [a-z0-9]+ tokens, so real query text analyzes to exactly
// these terms. There is no term co-occurrence: AND results are smaller than on real pages.
//
// Deterministic: a list depends only on (seed, term, N, its df and cf/df, clustering), whatever the
// thread count or the vocabulary; document lengths only on (seed, N).
//
//   SynthOptions o;
//   o.termstats_path = ".../wikipedia-termstats.tsv.gz";
//   o.doclengths_path = ".../wikipedia-doclengths.tsv";
//   o.query_files = {".../trec05-efficiency.txt"};
//   o.postings_per_doc = 240;
//   TANDEM_ASSIGN_OR_RETURN(SynthSummary s, BuildSyntheticIndex(o, "/tmp/gov2like"));
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "filter/bitmap.h"
#include "index/analyzer.h"
#include "index_builder/attribute_collector.h"

namespace tandem::index_builder {

enum class SynthVocabulary { kQueryTerms, kAll };

// "query-terms", "all".
absl::StatusOr<SynthVocabulary> ParseSynthVocabulary(const std::string& name);

// A synthetic attribute column: every document gets one of `cardinality` keyword values, named
// "v" and the value's number zero-padded to the width of cardinality - 1 (so byte order is number
// order), drawn uniformly or by Zipf's law (exponent 1: value i with weight 1 / (i + 1)).
struct SynthAttribute {
  std::string name;
  uint32_t cardinality = 0;
  bool zipf = false;
};

// "name:cardinality[:uniform|zipf],..." (--attribute-columns); INVALID_ARGUMENT naming the entry.
absl::StatusOr<std::vector<SynthAttribute>> ParseSynthAttributes(std::string_view flag);

struct SynthOptions {
  uint32_t num_docs = 25'000'000;
  std::string termstats_path;
  std::string doclengths_path;
  std::vector<std::string> query_files;
  SynthVocabulary vocabulary = SynthVocabulary::kQueryTerms;
  double postings_per_doc = 0;  // P; 0 = raw ratios (s = 1)
  uint64_t seed = 1;
  double clustering = 1.0;  // F >= 1, see synth_lists.h
  uint32_t cluster_docs = 4096;
  std::string codec = "pfor";
  int threads = 0;        // 0: all cores
  bool progress = false;  // progress lines on stderr
  // Attribute columns stored as bitmaps (attributes.bin), built by bitmap_builder (null: the CPU
  // builder).
  std::vector<SynthAttribute> attributes;
  filter::BitmapCodec bitmap_codec = filter::BitmapCodec::kPlwah;
  BitmapBuilder bitmap_builder;
};

struct SynthSummary {
  uint64_t documents = 0;
  uint64_t terms = 0;
  uint64_t postings = 0;
  uint64_t index_bytes = 0;
  uint64_t postings_bytes = 0;
  double scale = 1.0;  // s
  double avg_doc_length = 0;
  uint64_t source_documents = 0;     // A
  uint64_t queries = 0;              // read from the query files
  uint64_t query_terms = 0;          // distinct analyzed query terms
  uint64_t unknown_query_terms = 0;  // ... absent from the statistics: no list
  uint64_t dropped_terms = 0;        // statistics terms the analyzer drops (stop words)
  int threads = 0;
  double documents_seconds = 0;  // document table
  double lists_seconds = 0;      // generate, encode and write the lists
  double attribute_seconds = 0;  // draw the attribute columns and build their bitmaps
  double seconds = 0;            // everything, inputs and final files included

  // Several lines: "documents 25,000,000, terms 20,868, postings 3,578,923,194, index ..."
  std::string Describe() const;
};

// The analyzer a synthetic index records.
index::AnalyzerConfig SyntheticAnalyzerConfig();

// s for P = postings_per_doc (1 when P = 0).
double SynthScale(double postings_per_doc, uint64_t total_df, uint64_t source_documents);

// round(df / source_documents * num_docs * scale), clamped to [1, num_docs].
uint32_t SynthDf(uint64_t df, uint64_t source_documents, uint32_t num_docs, double scale);

// Builds the index at `output` (replaced if it holds an index). INVALID_ARGUMENT for bad options
// (N = 0, query-terms without query files, ...), NOT_FOUND for a missing input file.
absl::StatusOr<SynthSummary> BuildSyntheticIndex(const SynthOptions& options,
                                                 const std::string& output);

}  // namespace tandem::index_builder
