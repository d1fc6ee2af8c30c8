// File: index_writer.h
//
// Writes an index directory. Everything goes into a temporary sibling directory
// ("DIR.tmp-<random>") that is renamed to DIR only by Finish(), after every file is complete and
// fsynced; an interrupted build leaves no half index behind (a stale .tmp- directory at most).
//
// Documents come first (their lengths give the BM25 norms for the block maxima), then posting lists
// in strictly increasing term order:
//
//   TANDEM_ASSIGN_OR_RETURN(auto writer, IndexWriter::Create(dir, options));
//   for (each document) TANDEM_RETURN_IF_ERROR(writer->AddDocument(id, length, fields));
//   for (each term, sorted) TANDEM_RETURN_IF_ERROR(writer->AddPostingList(term, docids, freqs));
//   TANDEM_RETURN_IF_ERROR(writer->Finish());
//
// Lists may also be encoded in parallel with EncodePostingList(codec(), ..., doc_norms(), idf) and
// added in term order with AddEncodedList.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "index/index.h"

namespace tandem::index {

struct IndexWriterOptions {
  std::string codec = "pfor";
  AnalyzerConfig analyzer;
  Bm25Params bm25;  // parameters of the stored block maxima
  std::string source_format;
  std::string source_input;
  // Replace DIR if it already holds an index. A non-empty DIR that is not an index is never
  // touched.
  bool overwrite = true;
  // Set when writing one shard of a collection (index_builder/shard.h): the norms and the stored
  // maxima use the collection's statistics, every list comes with its collection df, and Finish
  // writes them to the manifest and collection_df.bin. collection_index_id, collection_num_docs
  // and collection_avg_doc_length must be set.
  std::optional<ShardManifest> shard;
};

// Puts the complete directory `tmp_dir` at `dir`: renamed, or, when `dir` exists, exchanged with it
// in one step (renameat2 RENAME_EXCHANGE) and the old one removed, so `dir` holds the old or the
// new directory at every instant. `tmp_dir` must be a sibling of `dir`.
absl::Status InstallDirectory(const std::string& tmp_dir, const std::string& dir);

class IndexWriter {
 public:
  static absl::StatusOr<std::unique_ptr<IndexWriter>> Create(const std::string& dir,
                                                             const IndexWriterOptions& options);
  // Removes the temporary directory unless Finish() succeeded.
  ~IndexWriter();

  const BlockCodec& codec() const { return *codec_; }

  // Documents get docIDs 0, 1, 2, ... in call order. `length` counts the document's terms.
  absl::Status AddDocument(absl::string_view external_id, uint32_t length,
                           absl::Span<const std::pair<std::string, std::string>> fields = {});
  // Drops documents already added, after the last AddDocument and before the first posting list:
  // the documents after each one move down so docIDs stay dense (docID d becomes d minus the
  // removed docIDs below it). `docids` is sorted, without repeats, each below num_docs(). Used to
  // keep the last of several documents with one external id.
  absl::Status RemoveDocuments(absl::Span<const uint32_t> docids);
  // Documents added so far (less the removed ones).
  uint32_t num_docs() const { return static_cast<uint32_t>(doc_lengths_.size()); }

  // Ends the document phase (implicit in the first AddPostingList). After it, doc_norms() and
  // avg_doc_length() are valid.
  absl::Status FinishDocuments();
  // The norms of BM25 under the options' parameters (a shard's with the collection's average
  // length), which the stored maxima use.
  const float* doc_norms() const { return norms_.data(); }
  // The documents' own average length (stats.avg_doc_length of the manifest).
  float avg_doc_length() const { return avg_doc_length_; }

  // Adds a term's list; terms in strictly increasing byte order. A shard's lists also give the
  // term's document frequency in the collection (at least the list's length), which its idf
  // uses; 0 for an index that is not a shard.
  absl::Status AddPostingList(absl::string_view term, absl::Span<const uint32_t> docids,
                              absl::Span<const uint32_t> freqs, uint32_t collection_df = 0);
  // Adds a list already encoded by EncodePostingList.
  absl::Status AddEncodedList(absl::string_view term, uint32_t df, uint64_t cf, float max_score,
                              absl::string_view encoded, uint32_t collection_df = 0);

  // The documents' attributes, written to attributes.bin by Finish. Their num_docs must be the
  // index's at Finish (after any RemoveDocuments).
  void SetAttributes(std::unique_ptr<filter::AttributeIndex> attributes) {
    attributes_ = std::move(attributes);
  }

  // Writes lexicon, document table and manifest and renames the directory into place.
  absl::Status Finish();
  // The manifest written by Finish (valid after it).
  const IndexManifest& manifest() const { return manifest_; }

 private:
  struct Files;
  IndexWriter() = default;

  std::string dir_;
  std::string tmp_dir_;
  IndexWriterOptions options_;
  const BlockCodec* codec_ = nullptr;
  std::unique_ptr<Files> files_;
  bool documents_finished_ = false;
  bool finished_ = false;
  std::vector<uint32_t> doc_lengths_;
  std::vector<uint64_t> id_offsets_{0};
  std::vector<uint64_t> field_offsets_{0};
  // After RemoveDocuments: the byte ranges of the spilled pools that Finish copies (empty: all).
  std::vector<std::pair<uint64_t, uint64_t>> id_ranges_, field_ranges_;
  bool documents_removed_ = false;
  uint64_t total_doc_length_ = 0;
  float avg_doc_length_ = 0.0f;
  std::vector<float> norms_;
  std::vector<LexiconEntry> lexicon_;
  std::vector<uint32_t> collection_dfs_;  // a shard's, one per lexicon entry
  std::string term_pool_;
  std::string last_term_;
  uint64_t num_postings_ = 0;
  IndexManifest manifest_;
  std::unique_ptr<filter::AttributeIndex> attributes_;
};

}  // namespace tandem::index
