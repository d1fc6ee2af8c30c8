// tandem-index's expert flags (tandem_index_expert.h), grouped by the part of the builder that owns
// them; --helpfull lists them under these groups' titles.
#include "tools/tandem_index_expert.h"

#include "absl/flags/flag.h"

// The builder's memory and parsing.
ABSL_FLAG(int, memory_mb, 1024,
          "build: memory budget for in-memory runs before spilling to disk, and (an eighth of it, "
          "with more than one thread) for input parsed ahead of inversion");
ABSL_FLAG(int, parse_chunk_kb, 256,
          "build: with more than one thread, large files of the formats that can be cut (beir, "
          "lines, trec, reuters, wikiextractor) are parsed in parallel in chunks of about this "
          "size");

// The analyzer.
ABSL_FLAG(std::string, tokenizer, "standard",
          "build, import: tokenizer (standard = Unicode UAX#29 words, alnum = [a-z0-9]+)");
ABSL_FLAG(std::string, stopwords, "lucene",
          "build, import: stop word list (lucene = Lucene's 33 English stop words, none)");
ABSL_FLAG(std::string, stemmer, "porter",
          "build, import: stemmer (porter, none, or another libstemmer algorithm)");

// Synthetic collections.
ABSL_FLAG(uint32_t, docs, 25000000, "synth: documents to generate");
ABSL_FLAG(std::string, termstats, "", "synth: term statistics, term<TAB>df<TAB>cf (plain or .gz)");
ABSL_FLAG(std::string, doclengths, "", "synth: document length histogram, length<TAB>count");
ABSL_FLAG(std::vector<std::string>, queries, {},
          "synth: query logs (comma-separated) whose terms get lists");
ABSL_FLAG(std::string, vocabulary, "query-terms",
          "synth: query-terms (lists for the query terms only) or all");
ABSL_FLAG(double, postings_per_doc, 0,
          "synth: calibrate to P postings per document (GOV2: 240); 0 = raw df ratios");
ABSL_FLAG(uint64_t, seed, 1, "synth: random seed");
ABSL_FLAG(double, clustering, 1, "synth: docID clustering factor F >= 1 (1 = uniform)");
ABSL_FLAG(uint32_t, cluster_docs, 4096, "synth: documents per cluster block when --clustering > 1");

// Attribute bitmaps.
ABSL_FLAG(std::string, bitmap_codec, "plwah",
          "build, synth: the attributes' bitmap codec (plwah, wah)");
ABSL_FLAG(std::string, attribute_columns, "",
          "synth: attribute columns, name:cardinality[:uniform|zipf],... (keyword values v0, v1, "
          "... zero-padded), for filter benchmarks");

namespace tandem::tools {

std::vector<base::FlagGroup> IndexExpertFlagGroups() {
  return {
      {.title = "Memory and parsing", .flags = {"memory-mb", "parse-chunk-kb"}},
      {.title = "Analyzer", .flags = {"tokenizer", "stopwords", "stemmer"}},
      {.title = "Synthetic collections (synth)",
       .flags = {"docs", "termstats", "doclengths", "queries", "vocabulary", "postings-per-doc",
                 "seed", "clustering", "cluster-docs"}},
      {.title = "Attribute bitmaps", .flags = {"bitmap-codec", "attribute-columns"}},
  };
}

}  // namespace tandem::tools
