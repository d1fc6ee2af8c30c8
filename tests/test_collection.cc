#include "tests/test_collection.h"

#include <stdlib.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "index/index_writer.h"

namespace tandem::testing {

absl::Status AddPostingLists(const std::vector<std::vector<std::string>>& docs,
                             index::IndexWriter& writer) {
  std::map<std::string, std::map<uint32_t, uint32_t>> postings;
  for (uint32_t d = 0; d < docs.size(); ++d) {
    for (const std::string& t : docs[d]) ++postings[t][d];
  }
  for (const auto& [term, list] : postings) {
    std::vector<uint32_t> ids, freqs;
    for (const auto& [d, f] : list) {
      ids.push_back(d);
      freqs.push_back(f);
    }
    TANDEM_RETURN_IF_ERROR(writer.AddPostingList(term, ids, freqs));
  }
  return absl::OkStatus();
}

absl::Status BuildIndex(const std::vector<std::vector<std::string>>& docs, const std::string& dir,
                        const std::string& codec,
                        std::unique_ptr<filter::AttributeIndex> attributes) {
  index::IndexWriterOptions options;
  options.codec = codec;
  options.source_format = "test";
  options.source_input = "/srv/corpora/test-docs.txt";
  TANDEM_ASSIGN_OR_RETURN(auto writer, index::IndexWriter::Create(dir, options));
  for (uint32_t d = 0; d < docs.size(); ++d) {
    TANDEM_RETURN_IF_ERROR(
        writer->AddDocument(absl::StrCat("doc", d), static_cast<uint32_t>(docs[d].size())));
  }
  TANDEM_RETURN_IF_ERROR(AddPostingLists(docs, *writer));
  if (attributes != nullptr) writer->SetAttributes(std::move(attributes));
  return writer->Finish();
}

std::vector<std::vector<std::string>> RandomDocuments(const CollectionSpec& spec) {
  std::mt19937_64 rng(spec.seed);
  std::vector<double> weights(spec.vocabulary);
  for (uint32_t i = 0; i < spec.vocabulary; ++i) weights[i] = 1.0 / std::pow(i + 1.0, spec.zipf_s);
  std::discrete_distribution<uint32_t> term(weights.begin(), weights.end());
  std::geometric_distribution<uint32_t> length(1.0 / spec.mean_length);
  std::vector<std::vector<std::string>> docs(spec.num_docs);
  for (auto& doc : docs) {
    const uint32_t n = length(rng);  // zero-length documents occur too
    for (uint32_t i = 0; i < n; ++i) doc.push_back(absl::StrCat("t", term(rng)));
  }
  return docs;
}

absl::StatusOr<DecodedLists> DecodeAllLists(const index::Index& index) {
  DecodedLists out;
  uint32_t d[index::kBlockSize], f[index::kBlockSize];
  for (uint64_t i = 0; i < index.num_terms(); ++i) {
    const index::TermInfo t = index.term_at(i);
    TANDEM_ASSIGN_OR_RETURN(index::PostingListView list, index.postings(t));
    auto& [docs, freqs] = out[std::string(t.term)];
    for (uint32_t b = 0; b < list.num_blocks(); ++b) {
      TANDEM_RETURN_IF_ERROR(list.DecodeDocids(index.codec(), b, d));
      TANDEM_RETURN_IF_ERROR(list.DecodeFreqs(index.codec(), b, f));
      docs.insert(docs.end(), d, d + list.block_postings(b));
      freqs.insert(freqs.end(), f, f + list.block_postings(b));
    }
  }
  return out;
}

const index::Index& SmallIndex() {
  static const index::Index* const index = [] {
    static TempDir* const dir = new TempDir();
    absl::Status built =
        BuildIndex({{"a", "b"}, {"a"}, {"b", "c"}}, dir->path() + "/small", "pfor");
    absl::StatusOr<std::unique_ptr<index::Index>> opened =
        built.ok() ? index::Index::Open(dir->path() + "/small")
                   : absl::StatusOr<std::unique_ptr<index::Index>>(built);
    if (!opened.ok()) {
      std::fprintf(stderr, "SmallIndex: %s\n", opened.status().ToString().c_str());
      std::abort();
    }
    return opened->release();
  }();
  return *index;
}

}  // namespace tandem::testing
