// File: index.h
//
// A read-only, memory-mapped inverted index directory, shared by every engine. Open() maps and
// verifies every file (header, version, checksum), so a damaged index fails at load with a message
// naming the file, never later with wrong answers. Files and byte layout: index/FORMAT.md.
//
//   TANDEM_ASSIGN_OR_RETURN(std::unique_ptr<Index> index, Index::Open("/srv/tandem/scifact"));
//   if (std::optional<TermInfo> t = index->Lookup("protein")) {
//     TANDEM_ASSIGN_OR_RETURN(PostingListView list, index->postings(*t));
//     ...
//   }
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/huge_page_array.h"
#include "filter/attribute_index.h"
#include "index/analyzer.h"
#include "index/block_codec.h"
#include "index/bm25.h"
#include "index/file_format.h"
#include "index/posting_list.h"

namespace tandem::index {

inline constexpr char kManifestFile[] = "manifest.bin";
inline constexpr char kLexiconFile[] = "lexicon.bin";
inline constexpr char kPostingsFile[] = "postings.bin";
inline constexpr char kDocumentsFile[] = "documents.bin";
// Only in a shard (tandem-index shard): each term's document frequency in the whole collection.
inline constexpr char kCollectionDfFile[] = "collection_df.bin";
inline constexpr char kAttributesFile[] = "attributes.bin";

// The size on disk of the index in `dir`: its four files together, and postings.bin alone (for
// bits per posting). A file that cannot be read counts 0: the figures are for reports.
struct IndexFileBytes {
  uint64_t total = 0;
  uint64_t postings = 0;
};
IndexFileBytes MeasureIndexFiles(const std::string& dir);

struct IndexStats {
  uint32_t num_docs = 0;
  uint64_t num_terms = 0;
  uint64_t num_postings = 0;
  uint64_t total_doc_length = 0;  // sum of document lengths in terms (stop words excluded)
  float avg_doc_length = 0.0f;
};

// A shard's place in its collection and the collection's BM25 statistics, which the shard scores
// with (with each term's collection df from collection_df.bin), so that its scores are those of one
// index over the whole collection: Elasticsearch's DFS query-then-fetch, with the statistics
// gathered once when the collection is cut instead of at every query.
struct ShardManifest {
  uint32_t shard = 0;  // 0 .. shards - 1
  uint32_t shards = 1;
  uint32_t first_docid = 0;         // the collection's docID of the shard's docID 0
  std::string collection_index_id;  // index_id of the index the shards were cut from
  uint32_t collection_num_docs = 0;
  float collection_avg_doc_length = 0.0f;  // exactly the collection's manifest's avg_doc_length
};

// One file of an index as its manifest names it (FORMAT.md, "Files"): a file deleted, added or
// taken from another build then fails Index::Open instead of being served.
struct ManifestFile {
  uint64_t bytes = 0;
  uint64_t checksum = 0;  // the file's footer: XXH3-64 of its header and payload

  bool operator==(const ManifestFile&) const = default;
};

struct IndexManifest {
  uint32_t format_version = kFormatVersion;
  std::string index_id;    // 128-bit random id, hex; changes with every build
  std::string build_time;  // RFC 3339, UTC
  std::string codec;       // BlockCodec name
  uint32_t block_size = 0;
  AnalyzerConfig analyzer;
  Bm25Params bm25;  // parameters of the stored block and list maxima
  IndexStats stats;
  std::string source_format;
  std::string source_input;
  std::string builder;  // "tandem-index 0.1.0 (commit)"
  // Set for a shard: `stats` are then the shard's own, and BM25 uses the collection's.
  std::optional<ShardManifest> shard;
  // Every file of the index but the manifest, by name. Absent in a manifest written before
  // manifests named their files: such an index opens only without optional files that the
  // manifest alone would vouch for (attributes.bin).
  std::optional<std::map<std::string, ManifestFile>> files;

  std::string ToJson() const;
  static absl::StatusOr<IndexManifest> FromJson(absl::string_view json);
};

// One term's lexicon record as the writer collects it; lexicon.bin stores it packed
// (EncodeLexicon, FORMAT.md).
struct LexiconEntry {
  uint64_t term_offset;  // into the writer's term pool
  uint32_t term_length;
  uint32_t df;           // documents containing the term = postings in its list
  uint64_t cf;           // occurrences in the collection
  uint64_t list_offset;  // into the postings payload
  uint64_t list_bytes;
  float max_score;  // max BM25 contribution over the list (default parameters)
};

// Terms per lexicon block: every block's first entry is reachable from a fixed-size sample, the
// others, front-coded, by scanning at most this many packed entries (Lucene's block-tree terms
// dictionary uses blocks of 25 to 48 terms; Witten, Moffat and Bell, Managing Gigabytes, for
// front coding).
inline constexpr uint64_t kLexiconBlock = 16;

// The lexicon payload for `entries` (sorted by term, lists laid out in order in the postings
// payload, each at its own list offset) whose terms are in `term_pool`.
std::string EncodeLexicon(const std::vector<LexiconEntry>& entries, absl::string_view term_pool);

struct TermInfo {
  std::string term;      // a copy: the lexicon stores terms front-coded
  uint64_t ordinal = 0;  // position in lexicographic order
  uint32_t df = 0;
  uint64_t cf = 0;
  uint64_t list_offset = 0;
  uint64_t list_bytes = 0;
  float max_score = 0.0f;
  uint32_t num_blocks = 0;
};

// The payloads of an index's four files, and a shard's fifth: the bytes between each file's
// header and footer (FORMAT.md), each starting 8-byte aligned.
struct IndexPayloads {
  absl::string_view manifest;
  absl::string_view lexicon;
  absl::string_view postings;
  absl::string_view documents;
  // collection_df.bin's; empty (data() == nullptr) when the index has no such file.
  absl::string_view collection_dfs;
  // attributes.bin's; empty (data() == nullptr) when the index stores no attributes.
  absl::string_view attributes;
};

// The payload of collection_df.bin: the collection's document frequency of each of a shard's
// terms, in lexicon order.
std::string EncodeCollectionDfs(const std::vector<uint32_t>& collection_dfs);

struct IndexOpenOptions {
  // Also decode and check every posting list (slow on big indexes; `tandem-index inspect` does it).
  bool verify_lists = false;
  // Where postings.bin's bytes live: mapped (the default), or copied into transparent huge pages
  // (FileMemory::kHugePages: fewer TLB misses where searches jump between lists and blocks of a
  // large index, at the cost of memory of the process's own).
  FileMemory postings_memory = FileMemory::kMapped;
};

class Index {
 public:
  static absl::StatusOr<std::unique_ptr<Index>> Open(const std::string& dir,
                                                     const IndexOpenOptions& options = {});
  // An index over payloads already in memory, checked exactly as Open checks the payloads of the
  // files it maps (frames and checksums are VerifyFrame's). The bytes must outlive the index;
  // `name` stands for the directory in messages, and index_bytes() is 0. INVALID_ARGUMENT when a
  // payload is not 8-byte aligned. For the fuzzers and tests of the payload checks.
  static absl::StatusOr<std::unique_ptr<Index>> FromPayloads(const IndexPayloads& payloads,
                                                             const std::string& name,
                                                             const IndexOpenOptions& options = {});
  ~Index();

  const std::string& directory() const { return dir_; }
  const IndexManifest& manifest() const { return manifest_; }
  // The index's own counts (a shard's: its documents, terms and postings).
  const IndexStats& stats() const { return manifest_.stats; }
  const BlockCodec& codec() const { return *codec_; }
  const Analyzer& analyzer() const { return *analyzer_; }
  uint32_t num_docs() const { return manifest_.stats.num_docs; }
  // The place of a shard in its collection; nullptr when the index is not a shard.
  const ShardManifest* shard() const { return manifest_.shard ? &*manifest_.shard : nullptr; }

  // BM25's statistics: the collection's on a shard, else the index's own. Every engine scores with
  // these, so a shard's scores are bit-equal to those of one index over the collection.
  // Documents N of idf.
  uint32_t bm25_num_docs() const {
    return manifest_.shard ? manifest_.shard->collection_num_docs : manifest_.stats.num_docs;
  }
  // The average document length of the norms (a shard's own is stats().avg_doc_length).
  float avg_doc_length() const {
    return manifest_.shard ? manifest_.shard->collection_avg_doc_length
                           : manifest_.stats.avg_doc_length;
  }
  // The document frequency of idf: the collection's on a shard, else the list's length (t.df).
  uint32_t bm25_df(const TermInfo& t) const {
    return collection_dfs_ != nullptr ? collection_dfs_[t.ordinal] : t.df;
  }
  float Bm25TermIdf(const TermInfo& t) const { return Bm25Idf(bm25_num_docs(), bm25_df(t)); }

  // Bytes of all index files.
  uint64_t index_bytes() const;
  // Bytes of the postings (postings.bin's payload).
  uint64_t postings_bytes() const { return postings_.size(); }
  // Where postings.bin's bytes live (IndexOpenOptions::postings_memory; kMapped for FromPayloads).
  FileMemory postings_memory() const { return postings_file_.memory(); }
  // How many bytes of the memory holding the postings the kernel backs with huge pages now;
  // nullopt when /proc/self/smaps cannot tell.
  std::optional<uint64_t> postings_huge_page_bytes() const;

  std::optional<TermInfo> Lookup(absl::string_view term) const;
  uint64_t num_terms() const { return num_terms_; }
  TermInfo term_at(uint64_t ordinal) const;
  // The posting list of a term of this index (Lookup, term_at). INVALID_ARGUMENT when the entry's
  // list lies outside this index's postings (a TermInfo of another index), DATA_LOSS when the
  // list does not parse or disagrees with its entry.
  absl::StatusOr<PostingListView> postings(const TermInfo& term) const;

  uint32_t doc_length(uint32_t docid) const { return doc_lengths_[docid]; }
  const uint32_t* doc_lengths() const { return doc_lengths_; }
  absl::string_view external_id(uint32_t docid) const;
  std::vector<std::pair<absl::string_view, absl::string_view>> stored_fields(uint32_t docid) const;
  // Bytes of every document's stored fields together.
  uint64_t stored_field_bytes() const { return field_pool_.size(); }
  // Bm25DocNorm of every document under manifest().bm25 and avg_doc_length(), computed once at
  // Open.
  const float* default_doc_norms() const { return default_norms_.data(); }

  // The documents' filterable attributes (attributes.bin); nullptr when the index stores none.
  const filter::AttributeIndex* attributes() const { return attributes_.get(); }

  // Decodes and checks every posting list (see PostingListView::Verify).
  absl::Status VerifyPostings() const;

 private:
  Index() = default;
  absl::Status Load(const IndexPayloads& payloads, const IndexOpenOptions& options);
  // Checks a shard's manifest section and collection_df.bin (after the lexicon is loaded).
  absl::Status LoadShard(absl::string_view collection_dfs);

  std::string dir_;
  IndexManifest manifest_;
  const BlockCodec* codec_ = nullptr;
  std::unique_ptr<Analyzer> analyzer_;
  MappedFile manifest_file_, lexicon_file_, postings_file_, documents_file_, collection_df_file_,
      attributes_file_;
  std::unique_ptr<filter::AttributeIndex> attributes_;
  // Lexicon: one sample per kLexiconBlock terms (the block's first entry's place in the packed
  // entries and its list's offset), then the packed entries, checked entry by entry at Load.
  struct LexiconSample {
    uint64_t entry_offset;
    uint64_t list_offset;
  };
  const LexiconSample* lexicon_samples_ = nullptr;
  // Each sample's first term's first 8 bytes as a big-endian integer (zero-padded), built at Load:
  // a lookup's binary search compares these integers in one array and reads the packed entries
  // only among the blocks whose key equals the term's (LexiconKey in index.cc).
  std::vector<uint64_t> lexicon_sample_keys_;
  uint64_t num_terms_ = 0;
  absl::string_view lexicon_entries_;
  // The TermInfo of entry `ordinal` of the block starting at sample `block`.
  TermInfo ScanBlock(uint64_t block, uint64_t ordinal) const;
  absl::string_view postings_;
  const uint32_t* doc_lengths_ = nullptr;
  // Document table offsets, offset_width_ bytes each; field_offsets_ is nullptr when no document
  // has stored fields (every offset 0).
  const uint8_t* id_offsets_ = nullptr;
  const uint8_t* field_offsets_ = nullptr;
  uint32_t offset_width_ = 8;
  uint64_t Offset(const uint8_t* table, uint64_t i) const;
  uint64_t IdOffset(uint64_t docid) const { return Offset(id_offsets_, docid); }
  uint64_t FieldOffset(uint64_t docid) const { return Offset(field_offsets_, docid); }
  absl::string_view id_pool_;
  absl::string_view field_pool_;
  HugePageArray<float> default_norms_;  // read at random docIDs by every engine
  // A shard's collection document frequencies, one per term ordinal; nullptr otherwise.
  const uint32_t* collection_dfs_ = nullptr;
};

}  // namespace tandem::index
