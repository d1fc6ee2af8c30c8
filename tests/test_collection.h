// File: test_collection.h
//
// Random collections for engine tests: builds a real index (through IndexWriter, with a chosen
// codec) in a temporary directory from documents whose terms follow a Zipf-like distribution, so
// short and very long lists, frequent and rare terms all occur.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "base/temp_dir.h"
#include "filter/attribute_index.h"
#include "index/index.h"
#include "index/index_writer.h"

namespace tandem::testing {

struct CollectionSpec {
  uint32_t num_docs = 2000;
  uint32_t vocabulary = 300;  // terms "t0" .. "t{vocabulary-1}"; lower numbers are more frequent
  uint32_t mean_length = 40;
  double zipf_s = 1.0;
  uint64_t seed = 1;
  std::string codec = "pfor";
};

using base::TempDir;

// Adds the posting lists of `docs` (document d holds the terms docs[d]) to `writer`, in term
// order, after the caller added the documents.
absl::Status AddPostingLists(const std::vector<std::vector<std::string>>& docs,
                             index::IndexWriter& writer);

// Builds the collection's index at `dir` (which must not exist or be empty). Each document is a
// list of terms; the document table's external ids are "doc{N}".
// `attributes`, when given, is stored as the index's attributes.bin.
absl::Status BuildIndex(const std::vector<std::vector<std::string>>& docs, const std::string& dir,
                        const std::string& codec,
                        std::unique_ptr<filter::AttributeIndex> attributes = nullptr);

// A process-wide index of three documents ("a b", "a", "b c"; pfor), built once in a temporary
// directory that lives as long as the process: for tests of the stages around the engines, whose
// queries are prepared against an index (index::PreparedQuery). Aborts when it cannot be built.
const index::Index& SmallIndex();

std::vector<std::vector<std::string>> RandomDocuments(const CollectionSpec& spec);

// Every posting list of an index, decoded: term -> (docIDs, frequencies). Tests compare whole
// indexes with it.
using DecodedLists = std::map<std::string, std::pair<std::vector<uint32_t>, std::vector<uint32_t>>>;
absl::StatusOr<DecodedLists> DecodeAllLists(const index::Index& index);

}  // namespace tandem::testing
