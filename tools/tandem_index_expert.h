// tandem-index's expert flags, defined in tandem_index_expert.cc so that --help leaves them out and
// --helpfull lists them by owner: the builder's memory and parsing, the analyzer, the synthetic
// collections of `synth`, the attribute bitmaps. Their defaults suit every build; tandem_index.cc
// reads them with the operator's flags.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "base/app.h"

// The builder's memory and parsing.
ABSL_DECLARE_FLAG(int, memory_mb);
ABSL_DECLARE_FLAG(int, parse_chunk_kb);

// The analyzer.
ABSL_DECLARE_FLAG(std::string, tokenizer);
ABSL_DECLARE_FLAG(std::string, stopwords);
ABSL_DECLARE_FLAG(std::string, stemmer);

// Synthetic collections.
ABSL_DECLARE_FLAG(uint32_t, docs);
ABSL_DECLARE_FLAG(std::string, termstats);
ABSL_DECLARE_FLAG(std::string, doclengths);
ABSL_DECLARE_FLAG(std::vector<std::string>, queries);
ABSL_DECLARE_FLAG(std::string, vocabulary);
ABSL_DECLARE_FLAG(double, postings_per_doc);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(double, clustering);
ABSL_DECLARE_FLAG(uint32_t, cluster_docs);

// Attribute bitmaps.
ABSL_DECLARE_FLAG(std::string, bitmap_codec);
ABSL_DECLARE_FLAG(std::string, attribute_columns);

namespace tandem::tools {

// The groups above, as --helpfull lists them (base::AppInfo::groups).
std::vector<base::FlagGroup> IndexExpertFlagGroups();

}  // namespace tandem::tools
