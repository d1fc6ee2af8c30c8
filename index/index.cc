#include "index/index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/huge_pages.h"
#include "base/status_macros.h"
#include "index/lexicon_internal.h"
#include "index/varint.h"

namespace tandem::index {

using internal::Align8;
using internal::DecodeEntry;
using internal::LexiconHeader;
using internal::LexiconKey;
using internal::ListStart;
using internal::PackedEntry;

namespace {

// Fixed part of the document table payload (FORMAT.md).
struct DocumentsHeader {
  uint64_t num_docs;
  uint64_t id_pool_bytes;
  uint64_t field_pool_bytes;
  uint64_t offset_width;  // bytes of each offset: 4 when both pools are below 4 GiB, else 8
};

absl::Status Corrupt(const std::string& path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("index file '", path, "' is inconsistent: ", what));
}

// Checks the index's files against the ones its manifest names (FORMAT.md, "Files"): each named
// file present with its size and checksum, and no file the manifest does not name. A manifest
// written before manifests named their files vouches only for the files every index has (and a
// shard's collection_df.bin, which its "shard" section asks for).
absl::Status CheckNamedFiles(const std::string& dir, absl::string_view manifest_payload,
                             const std::vector<std::pair<const char*, const MappedFile*>>& files) {
  absl::StatusOr<IndexManifest> manifest = IndexManifest::FromJson(manifest_payload);
  if (!manifest.ok()) return absl::OkStatus();  // Load reports it, naming the manifest
  const std::string manifest_path = absl::StrCat(dir, "/", kManifestFile);
  if (!manifest->files) {
    for (const auto& [name, file] : files) {
      if (absl::string_view(name) == kAttributesFile && file->payload().data() != nullptr) {
        return absl::FailedPreconditionError(absl::StrCat(
            "index file '", dir, "/", name, "' is not bound to the index: the manifest (",
            manifest_path,
            ") was written before manifests named their files; rebuild the index "
            "with --attributes, or remove the file to serve the index without attributes"));
      }
    }
    return absl::OkStatus();
  }
  for (const auto& entry : *manifest->files) {
    const std::string& name = entry.first;  // a plain reference: lambdas capture it under clang 14
    const auto it =
        std::find_if(files.begin(), files.end(), [&](const auto& f) { return name == f.first; });
    if (it == files.end()) {
      return Corrupt(manifest_path,
                     absl::StrCat("names a file '", name, "' that is not part of a Tandem index"));
    }
  }
  for (const auto& [name, file] : files) {
    const std::string path = absl::StrCat(dir, "/", name);
    const auto named = manifest->files->find(name);
    const bool present = file->payload().data() != nullptr;
    if (named == manifest->files->end()) {
      if (!present) continue;
      return absl::DataLossError(absl::StrCat("index file '", path, "' is not named by ",
                                              manifest_path,
                                              ": it is not part of this index (remove it)"));
    }
    if (!present) {
      return absl::NotFoundError(
          absl::StrCat("index file '", path, "' is missing: ", manifest_path, " names it"));
    }
    if (file->file_size() != named->second.bytes || file->checksum() != named->second.checksum) {
      return absl::DataLossError(absl::StrFormat(
          "index file '%s' is not the one %s names (%d bytes, checksum %016x; the manifest "
          "names %d bytes, checksum %016x): it was replaced or comes from another build",
          path, manifest_path, file->file_size(), file->checksum(), named->second.bytes,
          named->second.checksum));
    }
  }
  return absl::OkStatus();
}

}  // namespace

IndexFileBytes MeasureIndexFiles(const std::string& dir) {
  IndexFileBytes bytes;
  for (const char* name : {kManifestFile, kLexiconFile, kPostingsFile, kDocumentsFile}) {
    std::error_code ec;
    const uint64_t size = std::filesystem::file_size(std::filesystem::path(dir) / name, ec);
    if (ec) continue;
    bytes.total += size;
    if (absl::string_view(name) == kPostingsFile) bytes.postings = size;
  }
  return bytes;
}

Index::~Index() = default;

absl::StatusOr<std::unique_ptr<Index>> Index::Open(const std::string& dir,
                                                   const IndexOpenOptions& options) {
  std::unique_ptr<Index> index(new Index());
  index->dir_ = dir;
  const auto open = [&dir](const char* file, FileKind kind,
                           FileMemory memory = FileMemory::kMapped) {
    return MappedFile::Open(absl::StrCat(dir, "/", file), kind, memory);
  };
  TANDEM_ASSIGN_OR_RETURN(index->manifest_file_, open(kManifestFile, FileKind::kManifest));
  TANDEM_ASSIGN_OR_RETURN(index->lexicon_file_, open(kLexiconFile, FileKind::kLexicon));
  TANDEM_ASSIGN_OR_RETURN(index->postings_file_,
                          open(kPostingsFile, FileKind::kPostings, options.postings_memory));
  TANDEM_ASSIGN_OR_RETURN(index->documents_file_, open(kDocumentsFile, FileKind::kDocuments));
  // Only a shard has collection_df.bin; whether this index must have it, the manifest says (Load).
  absl::StatusOr<MappedFile> collection_dfs = open(kCollectionDfFile, FileKind::kCollectionDfs);
  if (collection_dfs.ok()) {
    index->collection_df_file_ = *std::move(collection_dfs);
  } else if (!absl::IsNotFound(collection_dfs.status())) {
    return collection_dfs.status();
  }
  absl::StatusOr<MappedFile> attributes = open(kAttributesFile, FileKind::kAttributes);
  if (attributes.ok()) {
    index->attributes_file_ = *std::move(attributes);
  } else if (!absl::IsNotFound(attributes.status())) {
    return attributes.status();
  }
  TANDEM_RETURN_IF_ERROR(CheckNamedFiles(dir, index->manifest_file_.payload(),
                                         {{kLexiconFile, &index->lexicon_file_},
                                          {kPostingsFile, &index->postings_file_},
                                          {kDocumentsFile, &index->documents_file_},
                                          {kCollectionDfFile, &index->collection_df_file_},
                                          {kAttributesFile, &index->attributes_file_}}));
  const IndexPayloads payloads = {
      .manifest = index->manifest_file_.payload(),
      .lexicon = index->lexicon_file_.payload(),
      .postings = index->postings_file_.payload(),
      .documents = index->documents_file_.payload(),
      .collection_dfs = index->collection_df_file_.payload(),
      .attributes = index->attributes_file_.payload(),
  };
  TANDEM_RETURN_IF_ERROR(index->Load(payloads, options));
  return index;
}

absl::StatusOr<std::unique_ptr<Index>> Index::FromPayloads(const IndexPayloads& payloads,
                                                           const std::string& name,
                                                           const IndexOpenOptions& options) {
  for (absl::string_view payload : {payloads.manifest, payloads.lexicon, payloads.postings,
                                    payloads.documents, payloads.collection_dfs}) {
    if (reinterpret_cast<uintptr_t>(payload.data()) % 8 != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("index '", name, "': a payload does not start 8-byte aligned"));
    }
  }
  std::unique_ptr<Index> index(new Index());
  index->dir_ = name;
  TANDEM_RETURN_IF_ERROR(index->Load(payloads, options));
  return index;
}

absl::Status Index::Load(const IndexPayloads& payloads, const IndexOpenOptions& options) {
  const std::string manifest_path = absl::StrCat(dir_, "/", kManifestFile);
  absl::StatusOr<IndexManifest> manifest = IndexManifest::FromJson(payloads.manifest);
  if (!manifest.ok()) return Corrupt(manifest_path, manifest.status().message());
  manifest_ = *std::move(manifest);
  if (manifest_.block_size != kBlockSize) {
    return Corrupt(manifest_path, absl::StrFormat("block size %d, this build uses %d",
                                                  manifest_.block_size, kBlockSize));
  }
  codec_ = GetBlockCodec(manifest_.codec);
  if (codec_ == nullptr) {
    return Corrupt(manifest_path, absl::StrCat("unknown codec '", manifest_.codec, "'"));
  }
  absl::StatusOr<std::unique_ptr<Analyzer>> analyzer = Analyzer::Create(manifest_.analyzer);
  if (!analyzer.ok()) return Corrupt(manifest_path, analyzer.status().message());
  analyzer_ = *std::move(analyzer);

  // Lexicon.
  const std::string lexicon_path = absl::StrCat(dir_, "/", kLexiconFile);
  absl::string_view lex = payloads.lexicon;
  if (lex.size() < sizeof(LexiconHeader)) return Corrupt(lexicon_path, "no lexicon header");
  LexiconHeader lh;
  std::memcpy(&lh, lex.data(), sizeof(lh));
  // Each part no larger than the payload first, so that the sums cannot wrap around 2^64.
  if (lh.num_terms > lex.size() || lh.num_samples > lex.size() / sizeof(LexiconSample) ||
      lh.entries_bytes > lex.size() ||
      lh.num_samples != (lh.num_terms + kLexiconBlock - 1) / kLexiconBlock ||
      sizeof(lh) + lh.num_samples * sizeof(LexiconSample) + lh.entries_bytes != lex.size()) {
    return Corrupt(lexicon_path, "sizes do not add up");
  }
  if (lh.num_terms != manifest_.stats.num_terms) {
    return Corrupt(lexicon_path, absl::StrFormat("%d terms, the manifest says %d", lh.num_terms,
                                                 manifest_.stats.num_terms));
  }
  num_terms_ = lh.num_terms;
  lexicon_samples_ = reinterpret_cast<const LexiconSample*>(lex.data() + sizeof(lh));
  lexicon_entries_ = lex.substr(sizeof(lh) + lh.num_samples * sizeof(LexiconSample));
  lexicon_sample_keys_.clear();
  lexicon_sample_keys_.reserve(lh.num_samples);

  // Postings.
  postings_ = payloads.postings;

  // Every entry decodes, terms increase, each sample points at its block's first entry and that
  // list's offset, and every list lies inside the postings payload: later lookups and term_at
  // decode these bytes without checking again.
  uint64_t total_postings = 0;
  std::string previous, term;
  const uint8_t* const entries_begin = reinterpret_cast<const uint8_t*>(lexicon_entries_.data());
  const uint8_t* const entries_end = entries_begin + lexicon_entries_.size();
  const uint8_t* p = entries_begin;
  uint64_t list_end = 0;
  for (uint64_t i = 0; i < num_terms_; ++i) {
    PackedEntry e;
    const uint8_t* const at = p;
    p = DecodeEntry(p, entries_end, i % kLexiconBlock == 0, &term, &e);
    if (p == nullptr) {
      return Corrupt(lexicon_path, absl::StrFormat("entry %d does not decode", i));
    }
    if (i > 0 && !(previous < e.term)) {
      return Corrupt(lexicon_path, absl::StrFormat("terms %d and %d are out of order", i - 1, i));
    }
    // Lookup compares front-coded terms without rebuilding them, which holds only when each entry
    // shares the longest prefix it can with the term before it, as the writer stores them.
    if (i % kLexiconBlock != 0 && e.shared < previous.size() && e.shared < e.term.size() &&
        previous[e.shared] == e.term[e.shared]) {
      return Corrupt(lexicon_path,
                     absl::StrFormat("entry %d shares %d bytes with the term before it, not the "
                                     "longest prefix they share",
                                     i, e.shared));
    }
    previous.assign(e.term.data(), e.term.size());
    if (e.df == 0 || e.df > manifest_.stats.num_docs || e.cf < e.df) {
      return Corrupt(lexicon_path, absl::StrCat("term '", e.term, "' has inconsistent statistics"));
    }
    const uint64_t list_offset = ListStart(list_end, e.df);
    if (i % kLexiconBlock == 0) {
      lexicon_sample_keys_.push_back(LexiconKey(e.term));
      const LexiconSample& sample = lexicon_samples_[i / kLexiconBlock];
      if (sample.entry_offset != static_cast<uint64_t>(at - entries_begin) ||
          sample.list_offset != list_offset) {
        return Corrupt(lexicon_path,
                       absl::StrFormat("sample %d is inconsistent", i / kLexiconBlock));
      }
    }
    if (list_offset > postings_.size() || e.list_bytes > postings_.size() - list_offset) {
      return Corrupt(lexicon_path,
                     absl::StrCat("list of term '", e.term, "' lies outside the postings file"));
    }
    list_end = list_offset + e.list_bytes;
    total_postings += e.df;
  }
  if (p != entries_end) return Corrupt(lexicon_path, "bytes after the last entry");
  if (total_postings != manifest_.stats.num_postings) {
    return Corrupt(lexicon_path, absl::StrFormat("lists hold %d postings, the manifest says %d",
                                                 total_postings, manifest_.stats.num_postings));
  }

  // Document table.
  const std::string docs_path = absl::StrCat(dir_, "/", kDocumentsFile);
  absl::string_view docs = payloads.documents;
  if (docs.size() < sizeof(DocumentsHeader)) return Corrupt(docs_path, "no header");
  DocumentsHeader dh;
  std::memcpy(&dh, docs.data(), sizeof(dh));
  const uint64_t n = dh.num_docs;
  if (n != manifest_.stats.num_docs || n >= UINT32_MAX) {
    return Corrupt(docs_path, absl::StrFormat("%d documents, the manifest says %d", n,
                                              manifest_.stats.num_docs));
  }
  if (dh.offset_width != 4 && dh.offset_width != 8) {
    return Corrupt(docs_path, absl::StrFormat("offset width %d, expected 4 or 8", dh.offset_width));
  }
  offset_width_ = static_cast<uint32_t>(dh.offset_width);
  // n < 2^32 keeps the tables' offsets far from 2^64; the pools must not wrap the sum either.
  const uint64_t lengths_at = sizeof(dh);
  const uint64_t id_offsets_at = lengths_at + Align8(n * 4);
  const uint64_t table_bytes = Align8((n + 1) * dh.offset_width);
  // With no stored fields the field-offset table (all zeros) is left out.
  const uint64_t field_offsets_at = id_offsets_at + table_bytes;
  const uint64_t id_pool_at = field_offsets_at + (dh.field_pool_bytes > 0 ? table_bytes : 0);
  const uint64_t field_pool_at = id_pool_at + dh.id_pool_bytes;
  if (dh.id_pool_bytes > docs.size() || dh.field_pool_bytes > docs.size() ||
      field_pool_at + dh.field_pool_bytes != docs.size()) {
    return Corrupt(docs_path, "sizes do not add up");
  }
  doc_lengths_ = reinterpret_cast<const uint32_t*>(docs.data() + lengths_at);
  id_offsets_ = reinterpret_cast<const uint8_t*>(docs.data() + id_offsets_at);
  field_offsets_ = dh.field_pool_bytes > 0
                       ? reinterpret_cast<const uint8_t*>(docs.data() + field_offsets_at)
                       : nullptr;
  id_pool_ = docs.substr(id_pool_at, dh.id_pool_bytes);
  field_pool_ = docs.substr(field_pool_at, dh.field_pool_bytes);
  uint64_t total_length = 0;
  for (uint64_t d = 0; d < n; ++d) {
    if (IdOffset(d) > IdOffset(d + 1) || FieldOffset(d) > FieldOffset(d + 1)) {
      return Corrupt(docs_path, absl::StrFormat("offsets of document %d decrease", d));
    }
    total_length += doc_lengths_[d];
  }
  if (IdOffset(0) != 0 || IdOffset(n) != dh.id_pool_bytes || FieldOffset(0) != 0 ||
      FieldOffset(n) != dh.field_pool_bytes) {
    return Corrupt(docs_path, "offset tables do not span the string pools");
  }
  if (total_length != manifest_.stats.total_doc_length) {
    return Corrupt(docs_path, "document lengths do not sum to the manifest's total");
  }

  TANDEM_RETURN_IF_ERROR(LoadShard(payloads.collection_dfs));
  if (payloads.attributes.data() != nullptr) {
    absl::StatusOr<std::unique_ptr<filter::AttributeIndex>> attributes =
        filter::AttributeIndex::Decode(
            std::string_view(payloads.attributes.data(), payloads.attributes.size()), num_docs());
    if (!attributes.ok()) {
      return Corrupt(absl::StrCat(dir_, "/", kAttributesFile), attributes.status().message());
    }
    attributes_ = *std::move(attributes);
  }

  // A shard's norms use the collection's average length (avg_doc_length()).
  default_norms_ = HugePageArray<float>(n);
  for (uint64_t d = 0; d < n; ++d) {
    default_norms_[d] = Bm25DocNorm(manifest_.bm25, doc_lengths_[d], avg_doc_length());
  }
  if (options.verify_lists) TANDEM_RETURN_IF_ERROR(VerifyPostings());
  return absl::OkStatus();
}

absl::Status Index::LoadShard(absl::string_view collection_dfs) {
  const std::string dfs_path = absl::StrCat(dir_, "/", kCollectionDfFile);
  if (!manifest_.shard) {
    if (collection_dfs.data() != nullptr) {
      return Corrupt(dfs_path, "the index is not a shard (its manifest has no \"shard\" section)");
    }
    return absl::OkStatus();
  }
  const ShardManifest& shard = *manifest_.shard;
  const std::string manifest_path = absl::StrCat(dir_, "/", kManifestFile);
  const uint64_t own_docs = manifest_.stats.num_docs;
  if (shard.shards == 0 || shard.shard >= shard.shards) {
    return Corrupt(manifest_path,
                   absl::StrFormat("shard %d of %d does not exist", shard.shard, shard.shards));
  }
  if (shard.collection_num_docs >= UINT32_MAX ||
      uint64_t{shard.first_docid} + own_docs > shard.collection_num_docs) {
    return Corrupt(manifest_path,
                   absl::StrFormat("the shard's %d documents from docID %d do not fit the "
                                   "collection's %d",
                                   own_docs, shard.first_docid, shard.collection_num_docs));
  }
  if (!(shard.collection_avg_doc_length > 0.0f) || shard.collection_index_id.empty()) {
    return Corrupt(manifest_path,
                   "the shard's collection statistics are incomplete (average document length or "
                   "collection index id)");
  }
  if (collection_dfs.data() == nullptr) {
    return absl::NotFoundError(absl::StrCat("index file '", dfs_path,
                                            "' is missing: the index is a shard, and BM25 needs "
                                            "its collection document frequencies"));
  }
  uint64_t count = 0;
  if (collection_dfs.size() >= sizeof(count)) std::memcpy(&count, collection_dfs.data(), 8);
  if (collection_dfs.size() < sizeof(count) || count != num_terms_ ||
      collection_dfs.size() - sizeof(count) != 4 * num_terms_) {
    return Corrupt(dfs_path,
                   absl::StrFormat("holds %d bytes, not the collection document frequencies of "
                                   "the lexicon's %d terms",
                                   collection_dfs.size(), num_terms_));
  }
  collection_dfs_ = reinterpret_cast<const uint32_t*>(collection_dfs.data() + sizeof(count));
  // A term's collection df counts its documents in this shard and at most every document of the
  // others.
  const uint64_t other_docs = shard.collection_num_docs - own_docs;
  const uint8_t* p = reinterpret_cast<const uint8_t*>(lexicon_entries_.data());
  const uint8_t* const end = p + lexicon_entries_.size();
  std::string term;
  PackedEntry e;
  for (uint64_t i = 0; i < num_terms_; ++i) {
    p = DecodeEntry(p, end, i % kLexiconBlock == 0, &term, &e);  // checked by Load
    const uint64_t cdf = collection_dfs_[i];
    if (cdf < e.df || cdf - e.df > other_docs) {
      collection_dfs_ = nullptr;
      return Corrupt(dfs_path,
                     absl::StrFormat("term '%s' has collection df %d, impossible with df %d in "
                                     "this shard of %d of the collection's %d documents",
                                     e.term, cdf, e.df, own_docs, shard.collection_num_docs));
    }
  }
  return absl::OkStatus();
}

uint64_t Index::Offset(const uint8_t* table, uint64_t i) const {
  if (table == nullptr) return 0;
  if (offset_width_ == 4) {
    uint32_t v;
    std::memcpy(&v, table + 4 * i, 4);
    return v;
  }
  uint64_t v;
  std::memcpy(&v, table + 8 * i, 8);
  return v;
}

std::optional<uint64_t> Index::postings_huge_page_bytes() const {
  if (postings_.empty()) return std::nullopt;
  std::optional<uint64_t> bytes = base::HugePageBytes(postings_.data());
  // The mapping also holds the file's frame and the copy's round-up to a whole huge page.
  if (bytes) *bytes = std::min<uint64_t>(*bytes, postings_.size());
  return bytes;
}

uint64_t Index::index_bytes() const {
  return manifest_file_.file_size() + lexicon_file_.file_size() + postings_file_.file_size() +
         documents_file_.file_size() + collection_df_file_.file_size();
}

absl::StatusOr<PostingListView> Index::postings(const TermInfo& term) const {
  if (term.list_offset > postings_.size() ||
      term.list_bytes > postings_.size() - term.list_offset) {
    return absl::InvalidArgumentError(absl::StrCat("index '", dir_, "': the list of term '",
                                                   term.term, "' lies outside its postings (",
                                                   postings_.size(), " bytes)"));
  }
  absl::StatusOr<PostingListView> view =
      PostingListView::Parse(*codec_, postings_.substr(term.list_offset, term.list_bytes),
                             {.num_postings = term.df, .cf = term.cf, .max_score = term.max_score});
  if (!view.ok()) {
    return absl::DataLossError(absl::StrCat("index '", dir_, "', list of term '", term.term,
                                            "': ", view.status().message()));
  }
  if (view->num_postings() != term.df) {
    return absl::DataLossError(absl::StrCat("index '", dir_, "', list of term '", term.term,
                                            "' holds a different number of postings than its df"));
  }
  // The list's last docID bounds every docID it decodes (PostingListView::DecodeDocids).
  if (view->num_blocks() > 0 && view->last_docid(view->num_blocks() - 1) >= num_docs()) {
    return absl::DataLossError(absl::StrCat("index '", dir_, "', list of term '", term.term,
                                            "' ends beyond the document count"));
  }
  return view;
}

absl::string_view Index::external_id(uint32_t docid) const {
  const uint64_t begin = IdOffset(docid);
  return id_pool_.substr(begin, IdOffset(docid + 1) - begin);
}

std::vector<std::pair<absl::string_view, absl::string_view>> Index::stored_fields(
    uint32_t docid) const {
  std::vector<std::pair<absl::string_view, absl::string_view>> fields;
  absl::string_view blob =
      field_pool_.substr(FieldOffset(docid), FieldOffset(docid + 1) - FieldOffset(docid));
  // Each field: u32 name length, name, u32 value length, value. Stop at anything malformed.
  auto take = [&blob](absl::string_view* out) {
    uint32_t len;
    if (blob.size() < 4) return false;
    std::memcpy(&len, blob.data(), 4);
    blob.remove_prefix(4);
    if (len > blob.size()) return false;
    *out = blob.substr(0, len);
    blob.remove_prefix(len);
    return true;
  };
  while (!blob.empty()) {
    absl::string_view name, value;
    if (!take(&name) || !take(&value)) break;
    fields.emplace_back(name, value);
  }
  return fields;
}

absl::Status Index::VerifyPostings() const {
  for (uint64_t i = 0; i < num_terms_; ++i) {
    TermInfo t = term_at(i);
    TANDEM_ASSIGN_OR_RETURN(PostingListView view, postings(t));
    absl::Status s = view.Verify(*codec_, num_docs());
    if (!s.ok()) {
      return absl::DataLossError(
          absl::StrCat("index '", dir_, "', list of term '", t.term, "': ", s.message()));
    }
  }
  return absl::OkStatus();
}

}  // namespace tandem::index
