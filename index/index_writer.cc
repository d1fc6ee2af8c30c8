#include "index/index_writer.h"

#include <fcntl.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/stale_files.h"
#include "base/status_macros.h"
#include "base/sync_directory.h"
#include "base/version.h"

namespace tandem::index {
namespace fs = std::filesystem;

namespace {

std::string RandomHex(int bytes) {
  std::random_device rd;
  std::string out;
  for (int i = 0; i < bytes; ++i) absl::StrAppendFormat(&out, "%02x", rd() & 0xff);
  return out;
}

absl::Status FsError(const std::string& what, const std::error_code& ec) {
  return absl::InternalError(absl::StrCat(what, ": ", ec.message()));
}

template <typename T>
absl::string_view Bytes(const T* p, size_t n) {
  return absl::string_view(reinterpret_cast<const char*>(p), n * sizeof(T));
}

}  // namespace

// Open files while the writer runs: the postings file and the two spilled string pools of the
// document table (ids and stored fields are streamed to disk, not held in memory).
struct IndexWriter::Files {
  std::unique_ptr<FileWriter> postings;
  std::fstream ids;
  std::fstream fields;
  uint64_t ids_bytes = 0;
  uint64_t fields_bytes = 0;
};

absl::StatusOr<std::unique_ptr<IndexWriter>> IndexWriter::Create(
    const std::string& dir, const IndexWriterOptions& options) {
  const BlockCodec* codec = GetBlockCodec(options.codec);
  if (codec == nullptr) {
    std::string known;
    for (const std::string& n : BlockCodecNames())
      absl::StrAppend(&known, known.empty() ? "" : ", ", n);
    return absl::InvalidArgumentError(
        absl::StrCat("unknown codec '", options.codec, "' (known: ", known, ")"));
  }
  TANDEM_RETURN_IF_ERROR(Analyzer::Create(options.analyzer).status());
  if (const std::optional<ShardManifest>& shard = options.shard) {
    if (shard->shards == 0 || shard->shard >= shard->shards || shard->collection_num_docs == 0 ||
        !(shard->collection_avg_doc_length > 0.0f) || shard->collection_index_id.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "shard %d of %d: the collection's index id, documents and average length are needed",
          shard->shard, shard->shards));
    }
  }
  std::error_code ec;
  fs::path target = fs::absolute(fs::path(dir), ec).lexically_normal();
  if (ec) return FsError(absl::StrCat("bad output path '", dir, "'"), ec);
  if (target.filename().empty()) target = target.parent_path();
  if (fs::exists(target, ec)) {
    if (!fs::is_directory(target, ec)) {
      return absl::AlreadyExistsError(
          absl::StrCat("output '", target.string(), "' exists and is not a directory"));
    }
    const bool is_index = fs::exists(target / kManifestFile, ec);
    const bool empty = fs::is_empty(target, ec);
    if (!empty && !(is_index && options.overwrite)) {
      return absl::AlreadyExistsError(
          absl::StrCat("output directory '", target.string(),
                       is_index ? "' already holds an index"
                                : "' is not empty and holds no index; refusing to replace it"));
    }
  }
  fs::create_directories(target.parent_path(), ec);
  if (ec) return FsError(absl::StrCat("cannot create '", target.parent_path().string(), "'"), ec);

  std::unique_ptr<IndexWriter> w(new IndexWriter());
  w->dir_ = target.string();
  // Leftovers of builds of this index that were killed (their process is gone) go first.
  const std::string name = target.filename().string();
  base::RemoveStaleSiblings(target.parent_path().string(), name + ".tmp-");
  base::RemoveStaleSiblings(target.parent_path().string(), name + ".old-");
  w->tmp_dir_ = w->dir_ + base::PidTaggedSuffix(".tmp-");
  w->options_ = options;
  w->codec_ = codec;
  fs::create_directory(w->tmp_dir_, ec);
  if (ec) return FsError(absl::StrCat("cannot create '", w->tmp_dir_, "'"), ec);
  w->files_ = std::make_unique<Files>();
  TANDEM_ASSIGN_OR_RETURN(
      w->files_->postings,
      FileWriter::Create(absl::StrCat(w->tmp_dir_, "/", kPostingsFile), FileKind::kPostings));
  const auto mode = std::ios::in | std::ios::out | std::ios::trunc | std::ios::binary;
  w->files_->ids.open(absl::StrCat(w->tmp_dir_, "/ids.spill"), mode);
  w->files_->fields.open(absl::StrCat(w->tmp_dir_, "/fields.spill"), mode);
  if (!w->files_->ids || !w->files_->fields) {
    return absl::InternalError(absl::StrCat("cannot create spill files in '", w->tmp_dir_, "'"));
  }
  return w;
}

IndexWriter::~IndexWriter() {
  if (!finished_ && !tmp_dir_.empty()) {
    files_.reset();
    std::error_code ec;
    fs::remove_all(tmp_dir_, ec);
  }
}

absl::Status IndexWriter::AddDocument(
    absl::string_view external_id, uint32_t length,
    absl::Span<const std::pair<std::string, std::string>> fields) {
  if (documents_finished_) {
    return absl::FailedPreconditionError("IndexWriter::AddDocument after the first posting list");
  }
  if (documents_removed_) {
    return absl::FailedPreconditionError("IndexWriter::AddDocument after RemoveDocuments");
  }
  if (doc_lengths_.size() >= UINT32_MAX - 1) {
    return absl::ResourceExhaustedError("an index holds at most 2^32 - 2 documents");
  }
  doc_lengths_.push_back(length);
  total_doc_length_ += length;
  files_->ids.write(external_id.data(), static_cast<std::streamsize>(external_id.size()));
  files_->ids_bytes += external_id.size();
  id_offsets_.push_back(files_->ids_bytes);
  for (const auto& [name, value] : fields) {
    for (absl::string_view s : {absl::string_view(name), absl::string_view(value)}) {
      const uint32_t len = static_cast<uint32_t>(s.size());
      files_->fields.write(reinterpret_cast<const char*>(&len), 4);
      files_->fields.write(s.data(), static_cast<std::streamsize>(len));
      files_->fields_bytes += 4 + len;
    }
  }
  field_offsets_.push_back(files_->fields_bytes);
  if (!files_->ids || !files_->fields) {
    return absl::InternalError(
        absl::StrCat("cannot write document table spill in '", tmp_dir_, "'"));
  }
  return absl::OkStatus();
}

namespace {

// Keeps the rows of `offsets` (row r spans [offsets[r], offsets[r + 1])) that `removed` (sorted)
// does not name: rewrites `offsets` for the kept rows and returns the kept byte ranges, merged.
std::vector<std::pair<uint64_t, uint64_t>> DropRows(std::vector<uint64_t>& offsets,
                                                    absl::Span<const uint32_t> removed) {
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  std::vector<uint64_t> kept{0};
  kept.reserve(offsets.size() - removed.size());
  size_t next_removed = 0;
  for (size_t r = 0; r + 1 < offsets.size(); ++r) {
    if (next_removed < removed.size() && removed[next_removed] == r) {
      ++next_removed;
      continue;
    }
    const uint64_t begin = offsets[r], end = offsets[r + 1];
    if (!ranges.empty() && ranges.back().second == begin) {
      ranges.back().second = end;
    } else if (end > begin) {
      ranges.emplace_back(begin, end);
    }
    kept.push_back(kept.back() + (end - begin));
  }
  offsets = std::move(kept);
  return ranges;
}

}  // namespace

absl::Status IndexWriter::RemoveDocuments(absl::Span<const uint32_t> docids) {
  if (documents_finished_) {
    return absl::FailedPreconditionError(
        "IndexWriter::RemoveDocuments after the first posting list");
  }
  if (documents_removed_) {
    return absl::FailedPreconditionError("IndexWriter::RemoveDocuments called twice");
  }
  for (size_t i = 0; i < docids.size(); ++i) {
    if (docids[i] >= num_docs() || (i > 0 && docids[i] <= docids[i - 1])) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "RemoveDocuments: docIDs must increase and stay below %d (the %d-th is %d)", num_docs(),
          i, docids[i]));
    }
  }
  if (docids.empty()) return absl::OkStatus();
  documents_removed_ = true;
  std::vector<uint32_t> lengths;
  lengths.reserve(doc_lengths_.size() - docids.size());
  size_t next_removed = 0;
  for (uint32_t d = 0; d < doc_lengths_.size(); ++d) {
    if (next_removed < docids.size() && docids[next_removed] == d) {
      total_doc_length_ -= doc_lengths_[d];
      ++next_removed;
    } else {
      lengths.push_back(doc_lengths_[d]);
    }
  }
  doc_lengths_ = std::move(lengths);
  id_ranges_ = DropRows(id_offsets_, docids);
  field_ranges_ = DropRows(field_offsets_, docids);
  files_->ids_bytes = id_offsets_.back();
  files_->fields_bytes = field_offsets_.back();
  return absl::OkStatus();
}

absl::Status IndexWriter::FinishDocuments() {
  if (documents_finished_) return absl::OkStatus();
  documents_finished_ = true;
  const uint32_t n = num_docs();
  avg_doc_length_ = n == 0 || total_doc_length_ == 0
                        ? 1.0f
                        : static_cast<float>(static_cast<double>(total_doc_length_) / n);
  if (options_.shard &&
      uint64_t{options_.shard->first_docid} + n > options_.shard->collection_num_docs) {
    return absl::InvalidArgumentError(
        absl::StrFormat("shard %d: %d documents from docID %d do not fit the collection's %d",
                        options_.shard->shard, n, options_.shard->first_docid,
                        options_.shard->collection_num_docs));
  }
  // A shard's norms are the collection's (Index::avg_doc_length()).
  const float bm25_avg_doc_length =
      options_.shard ? options_.shard->collection_avg_doc_length : avg_doc_length_;
  norms_.resize(n);
  for (uint32_t d = 0; d < n; ++d) {
    norms_[d] = Bm25DocNorm(options_.bm25, doc_lengths_[d], bm25_avg_doc_length);
  }
  return absl::OkStatus();
}

absl::Status IndexWriter::AddPostingList(absl::string_view term, absl::Span<const uint32_t> docids,
                                         absl::Span<const uint32_t> freqs, uint32_t collection_df) {
  TANDEM_RETURN_IF_ERROR(FinishDocuments());
  if (!docids.empty() && docids.back() >= num_docs()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "term '%s': docID %d is not below the document count %d", term, docids.back(), num_docs()));
  }
  uint64_t cf = 0;
  for (uint32_t f : freqs) cf += f;
  std::string encoded;
  // A shard's maxima bound the scores of the collection's BM25: its N and the term's df there.
  const float idf = options_.shard ? Bm25Idf(options_.shard->collection_num_docs, collection_df)
                                   : Bm25Idf(num_docs(), docids.size());
  absl::StatusOr<float> max_score =
      EncodePostingList(*codec_, docids, freqs, norms_.data(), idf, &encoded);
  if (!max_score.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("term '", term, "': ", max_score.status().message()));
  }
  return AddEncodedList(term, static_cast<uint32_t>(docids.size()), cf, *max_score, encoded,
                        collection_df);
}

absl::Status IndexWriter::AddEncodedList(absl::string_view term, uint32_t df, uint64_t cf,
                                         float max_score, absl::string_view encoded,
                                         uint32_t collection_df) {
  TANDEM_RETURN_IF_ERROR(FinishDocuments());
  if (finished_) return absl::FailedPreconditionError("IndexWriter used after Finish");
  if (term.empty()) return absl::InvalidArgumentError("empty term");
  if (options_.shard ? collection_df < df ||
                           collection_df - df > options_.shard->collection_num_docs - num_docs()
                     : collection_df != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "term '%s': collection df %d with %d postings, in %s", term, collection_df, df,
        options_.shard ? "a shard of the collection's documents" : "an index that is no shard"));
  }
  if (!lexicon_.empty() && !(absl::string_view(last_term_) < term)) {
    return absl::InvalidArgumentError(absl::StrCat("terms must be added in increasing order: '",
                                                   term, "' after '", last_term_, "'"));
  }
  // Only a full-form list is aligned (its skip table is read in place; FORMAT.md).
  if (!IsCompactList(df)) TANDEM_RETURN_IF_ERROR(files_->postings->Align(kFullListAlignment));
  LexiconEntry e{};
  e.term_offset = term_pool_.size();
  e.term_length = static_cast<uint32_t>(term.size());
  e.df = df;
  e.cf = cf;
  e.list_offset = files_->postings->payload_offset();
  e.list_bytes = encoded.size();
  e.max_score = max_score;
  TANDEM_RETURN_IF_ERROR(files_->postings->Append(encoded));
  lexicon_.push_back(e);
  if (options_.shard) collection_dfs_.push_back(collection_df);
  term_pool_.append(term.data(), term.size());
  last_term_.assign(term.data(), term.size());
  num_postings_ += df;
  return absl::OkStatus();
}

absl::Status IndexWriter::Finish() {
  if (finished_) return absl::FailedPreconditionError("IndexWriter::Finish called twice");
  TANDEM_RETURN_IF_ERROR(FinishDocuments());
  // The manifest names every other file by its size and checksum (FORMAT.md, "Files").
  std::map<std::string, ManifestFile> named;
  const auto name = [&named](const char* file, const FileWriter& f) {
    named[file] = ManifestFile{.bytes = f.file_bytes(), .checksum = f.checksum()};
  };
  TANDEM_RETURN_IF_ERROR(files_->postings->Finish());
  name(kPostingsFile, *files_->postings);

  // Lexicon.
  {
    TANDEM_ASSIGN_OR_RETURN(
        auto f, FileWriter::Create(absl::StrCat(tmp_dir_, "/", kLexiconFile), FileKind::kLexicon));
    TANDEM_RETURN_IF_ERROR(f->Append(EncodeLexicon(lexicon_, term_pool_)));
    TANDEM_RETURN_IF_ERROR(f->Finish());
    name(kLexiconFile, *f);
  }

  // Document table: header, lengths, offsets, then the two spilled pools copied in.
  {
    TANDEM_ASSIGN_OR_RETURN(auto f, FileWriter::Create(absl::StrCat(tmp_dir_, "/", kDocumentsFile),
                                                       FileKind::kDocuments));
    // Offsets take 4 bytes while both pools are below 4 GiB; the field offsets are left out when
    // no document has stored fields (FORMAT.md).
    const uint64_t width = std::max(files_->ids_bytes, files_->fields_bytes) <= UINT32_MAX ? 4 : 8;
    const uint64_t header[4] = {doc_lengths_.size(), files_->ids_bytes, files_->fields_bytes,
                                width};
    TANDEM_RETURN_IF_ERROR(f->Append(Bytes(header, 4)));
    TANDEM_RETURN_IF_ERROR(f->Append(Bytes(doc_lengths_.data(), doc_lengths_.size())));
    TANDEM_RETURN_IF_ERROR(f->Align(8));
    const auto append_offsets = [&](const std::vector<uint64_t>& offsets) -> absl::Status {
      if (width == 8) {
        TANDEM_RETURN_IF_ERROR(f->Append(Bytes(offsets.data(), offsets.size())));
      } else {
        const std::vector<uint32_t> narrow(offsets.begin(), offsets.end());
        TANDEM_RETURN_IF_ERROR(f->Append(Bytes(narrow.data(), narrow.size())));
      }
      return f->Align(8);
    };
    TANDEM_RETURN_IF_ERROR(append_offsets(id_offsets_));
    if (files_->fields_bytes > 0) TANDEM_RETURN_IF_ERROR(append_offsets(field_offsets_));
    std::string chunk(1 << 20, '\0');
    for (auto [spill, ranges] :
         {std::pair(&files_->ids, &id_ranges_), std::pair(&files_->fields, &field_ranges_)}) {
      spill->flush();
      if (!documents_removed_) {
        spill->seekg(0, std::ios::end);
        const uint64_t size = static_cast<uint64_t>(spill->tellg());
        ranges->assign(size > 0 ? 1 : 0, {0, size});
      }
      for (auto [begin, end] : *ranges) {
        spill->seekg(static_cast<std::streamoff>(begin));
        while (begin < end && *spill) {
          const uint64_t want = std::min<uint64_t>(chunk.size(), end - begin);
          spill->read(chunk.data(), static_cast<std::streamsize>(want));
          const std::streamsize got = spill->gcount();
          if (got <= 0) break;
          TANDEM_RETURN_IF_ERROR(f->Append(absl::string_view(chunk.data(), got)));
          begin += static_cast<uint64_t>(got);
        }
        if (begin < end) return absl::InternalError("cannot read document table spill");
      }
    }
    TANDEM_RETURN_IF_ERROR(f->Finish());
    name(kDocumentsFile, *f);
  }
  // A shard's collection document frequencies, aligned with the lexicon.
  if (options_.shard) {
    TANDEM_ASSIGN_OR_RETURN(auto f,
                            FileWriter::Create(absl::StrCat(tmp_dir_, "/", kCollectionDfFile),
                                               FileKind::kCollectionDfs));
    TANDEM_RETURN_IF_ERROR(f->Append(EncodeCollectionDfs(collection_dfs_)));
    TANDEM_RETURN_IF_ERROR(f->Finish());
    name(kCollectionDfFile, *f);
  }
  if (attributes_ != nullptr) {
    if (attributes_->num_docs() != num_docs()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "attributes of %d documents for an index of %d", attributes_->num_docs(), num_docs()));
    }
    TANDEM_ASSIGN_OR_RETURN(auto f, FileWriter::Create(absl::StrCat(tmp_dir_, "/", kAttributesFile),
                                                       FileKind::kAttributes));
    TANDEM_RETURN_IF_ERROR(f->Append(attributes_->Encode()));
    TANDEM_RETURN_IF_ERROR(f->Finish());
    name(kAttributesFile, *f);
  }
  files_->ids.close();
  files_->fields.close();
  std::error_code ec;
  fs::remove(absl::StrCat(tmp_dir_, "/ids.spill"), ec);
  fs::remove(absl::StrCat(tmp_dir_, "/fields.spill"), ec);

  // Manifest last: an index directory without a manifest is never opened.
  manifest_.format_version = kFormatVersion;
  manifest_.index_id = RandomHex(16);
  manifest_.build_time = absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone());
  manifest_.codec = std::string(codec_->name());
  manifest_.block_size = kBlockSize;
  manifest_.analyzer = options_.analyzer;
  manifest_.bm25 = options_.bm25;
  manifest_.stats.num_docs = num_docs();
  manifest_.stats.num_terms = lexicon_.size();
  manifest_.stats.num_postings = num_postings_;
  manifest_.stats.total_doc_length = total_doc_length_;
  manifest_.stats.avg_doc_length = avg_doc_length_;
  manifest_.source_format = options_.source_format;
  manifest_.source_input = options_.source_input;
  manifest_.builder = absl::StrCat("tandem-index ", base::Version());
  manifest_.shard = options_.shard;
  manifest_.files = std::move(named);
  {
    TANDEM_ASSIGN_OR_RETURN(auto f, FileWriter::Create(absl::StrCat(tmp_dir_, "/", kManifestFile),
                                                       FileKind::kManifest));
    TANDEM_RETURN_IF_ERROR(f->Append(manifest_.ToJson()));
    TANDEM_RETURN_IF_ERROR(f->Finish());
  }
  (void)base::SyncDirectory(tmp_dir_);
  TANDEM_RETURN_IF_ERROR(InstallDirectory(tmp_dir_, dir_));
  finished_ = true;
  return absl::OkStatus();
}

absl::Status InstallDirectory(const std::string& tmp_dir, const std::string& dir) {
  // An existing directory is exchanged with the new one in one step (renameat2 RENAME_EXCHANGE),
  // so DIR holds the old index or the new one at every instant, whenever the process dies; the
  // old one, now at the temporary name, is removed after. A file system without the exchange gets
  // two renames, old aside first.
  std::error_code ec;
  std::string old_dir;
  if (fs::exists(dir, ec)) {
    if (::renameat2(AT_FDCWD, tmp_dir.c_str(), AT_FDCWD, dir.c_str(), RENAME_EXCHANGE) == 0) {
      old_dir = tmp_dir;
    } else if (errno == EINVAL || errno == ENOSYS) {
      old_dir = dir + base::PidTaggedSuffix(".old-");
      fs::rename(dir, old_dir, ec);
      if (ec) return FsError(absl::StrCat("cannot move the old index '", dir, "' aside"), ec);
      fs::rename(tmp_dir, dir, ec);
    } else {
      ec = std::error_code(errno, std::generic_category());
    }
  } else {
    fs::rename(tmp_dir, dir, ec);
  }
  if (ec) return FsError(absl::StrCat("cannot rename '", tmp_dir, "' to '", dir, "'"), ec);
  (void)base::SyncDirectory(fs::path(dir).parent_path().string());
  if (!old_dir.empty()) fs::remove_all(old_dir, ec);
  return absl::OkStatus();
}

}  // namespace tandem::index
