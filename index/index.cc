#include "index/index.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/huge_pages.h"
#include "base/status_macros.h"
#include "index/varint.h"
#include "nlohmann/json.hpp"

namespace tandem::index {
namespace {

// Fixed part of the document table payload (FORMAT.md).
struct DocumentsHeader {
  uint64_t num_docs;
  uint64_t id_pool_bytes;
  uint64_t field_pool_bytes;
  uint64_t offset_width;  // bytes of each offset: 4 when both pools are below 4 GiB, else 8
};

// Fixed part of the lexicon payload.
struct LexiconHeader {
  uint64_t num_terms;
  uint64_t num_samples;    // ceil(num_terms / kLexiconBlock)
  uint64_t entries_bytes;  // bytes of the packed entries
};

// One packed lexicon entry, decoded (FORMAT.md): the term, its statistics, its list's size.
struct PackedEntry {
  absl::string_view term;  // into the decoder's term buffer
  uint32_t df = 0;
  uint64_t cf = 0;
  float max_score = 0.0f;
  uint64_t list_bytes = 0;
  uint64_t shared = 0;  // bytes taken from the term before (0 for a block's first entry)
};

// Decodes what follows an entry's term: df, cf, the maximum score and the list's size.
const uint8_t* DecodeEntryStatistics(const uint8_t* p, const uint8_t* end, PackedEntry* e) {
  uint64_t df = 0, extra = 0;
  p = GetVarint(p, end, &df, UINT32_MAX);
  if (p == nullptr) return nullptr;
  p = GetVarint(p, end, &extra, UINT64_MAX - df);
  if (p == nullptr || end - p < 4) return nullptr;
  e->df = static_cast<uint32_t>(df);
  e->cf = df + extra;
  std::memcpy(&e->max_score, p, 4);
  p += 4;
  return GetVarint(p, end, &e->list_bytes);
}

// Decodes the entry at p. `term` holds the previous term of the block (ignored for a block's first
// entry, which stores its term whole) and is replaced by this entry's: entries after a block's
// first share a prefix with the term before them (front coding). Returns the byte after the
// entry, or nullptr when it runs past `end` or a field is malformed.
const uint8_t* DecodeEntry(const uint8_t* p, const uint8_t* end, bool first_in_block,
                           std::string* term, PackedEntry* e) {
  uint64_t shared = 0, length = 0;
  if (!first_in_block) {
    p = GetVarint(p, end, &shared, term->size());
    if (p == nullptr) return nullptr;
  }
  p = GetVarint(p, end, &length);
  if (p == nullptr || length > static_cast<uint64_t>(end - p)) return nullptr;
  term->resize(shared);
  term->append(reinterpret_cast<const char*>(p), length);
  e->term = *term;
  e->shared = shared;
  return DecodeEntryStatistics(p + length, end, e);
}

// A term's first 8 bytes as a big-endian integer, zero-padded: a < b as strings (bytes compared
// unsigned, as std::string_view does) implies LexiconKey(a) <= LexiconKey(b).
uint64_t LexiconKey(absl::string_view term) {
  uint64_t key = 0;
  const size_t n = std::min<size_t>(term.size(), 8);
  for (size_t i = 0; i < n; ++i) key |= uint64_t{static_cast<uint8_t>(term[i])} << (56 - 8 * i);
  return key;
}

TermInfo MakeTermInfo(const PackedEntry& e, uint64_t ordinal, uint64_t list_offset) {
  TermInfo t;
  t.term.assign(e.term.data(), e.term.size());
  t.ordinal = ordinal;
  t.df = e.df;
  t.cf = e.cf;
  t.list_offset = list_offset;
  t.list_bytes = e.list_bytes;
  t.max_score = e.max_score;
  t.num_blocks = static_cast<uint32_t>((uint64_t{e.df} + kBlockSize - 1) / kBlockSize);
  return t;
}

// Where a list starts, given where the one before it ends: full-form lists are aligned.
uint64_t ListStart(uint64_t previous_end, uint32_t df) {
  return IsCompactList(df) ? previous_end
                           : (previous_end + kFullListAlignment - 1) & ~(kFullListAlignment - 1);
}

uint64_t Align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

absl::Status Corrupt(const std::string& path, absl::string_view what) {
  return absl::DataLossError(absl::StrCat("index file '", path, "' is inconsistent: ", what));
}

// A manifest number that does not fit its field.
struct BadNumber {
  const char* key;
  const char* expected;
};

// nlohmann's get<> converts numbers with a plain cast: a negative or too large value would become
// some other integer, and a float outside the target's range is undefined behavior. These take
// only values that fit.
template <typename T>
T UnsignedField(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = object.at(key);
  if (!value.is_number_unsigned() || value.get<uint64_t>() > std::numeric_limits<T>::max()) {
    throw BadNumber{key, sizeof(T) == 4 ? "an integer in [0, 2^32)" : "an integer in [0, 2^64)"};
  }
  return static_cast<T>(value.get<uint64_t>());
}

float FloatField(const nlohmann::json& object, const char* key) {
  const nlohmann::json& value = object.at(key);
  const double v = value.is_number() ? value.get<double>() : NAN;
  if (!(std::fabs(v) <= std::numeric_limits<float>::max())) throw BadNumber{key, "a float"};
  return static_cast<float>(v);
}

}  // namespace

std::string IndexManifest::ToJson() const {
  nlohmann::json j;
  j["format_version"] = format_version;
  j["index_id"] = index_id;
  j["build_time"] = build_time;
  j["codec"] = codec;
  j["block_size"] = block_size;
  j["analyzer"] = {{"tokenizer", analyzer.tokenizer},
                   {"possessive", analyzer.possessive},
                   {"lowercase", analyzer.lowercase},
                   {"stopwords", analyzer.stopwords},
                   {"stemmer", analyzer.stemmer}};
  j["bm25"] = {{"k1", bm25.k1}, {"b", bm25.b}};
  j["stats"] = {{"num_docs", stats.num_docs},
                {"num_terms", stats.num_terms},
                {"num_postings", stats.num_postings},
                {"total_doc_length", stats.total_doc_length},
                {"avg_doc_length", stats.avg_doc_length}};
  j["source"] = {{"format", source_format}, {"input", source_input}};
  j["builder"] = builder;
  if (shard) {
    j["shard"] = {{"shard", shard->shard},
                  {"shards", shard->shards},
                  {"first_docid", shard->first_docid},
                  {"collection_index_id", shard->collection_index_id},
                  {"collection_num_docs", shard->collection_num_docs},
                  {"collection_avg_doc_length", shard->collection_avg_doc_length}};
  }
  return j.dump(2);
}

absl::StatusOr<IndexManifest> IndexManifest::FromJson(absl::string_view json) {
  nlohmann::json j = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::DataLossError("manifest is not a JSON object");
  }
  IndexManifest m;
  try {
    m.format_version = UnsignedField<uint32_t>(j, "format_version");
    m.index_id = j.at("index_id").get<std::string>();
    m.build_time = j.at("build_time").get<std::string>();
    m.codec = j.at("codec").get<std::string>();
    m.block_size = UnsignedField<uint32_t>(j, "block_size");
    const auto& a = j.at("analyzer");
    m.analyzer.tokenizer = a.at("tokenizer").get<std::string>();
    m.analyzer.possessive = a.at("possessive").get<bool>();
    m.analyzer.lowercase = a.at("lowercase").get<bool>();
    m.analyzer.stopwords = a.at("stopwords").get<std::string>();
    m.analyzer.stemmer = a.at("stemmer").get<std::string>();
    m.bm25.k1 = FloatField(j.at("bm25"), "k1");
    m.bm25.b = FloatField(j.at("bm25"), "b");
    const auto& s = j.at("stats");
    m.stats.num_docs = UnsignedField<uint32_t>(s, "num_docs");
    m.stats.num_terms = UnsignedField<uint64_t>(s, "num_terms");
    m.stats.num_postings = UnsignedField<uint64_t>(s, "num_postings");
    m.stats.total_doc_length = UnsignedField<uint64_t>(s, "total_doc_length");
    m.stats.avg_doc_length = FloatField(s, "avg_doc_length");
    m.source_format = j.at("source").at("format").get<std::string>();
    m.source_input = j.at("source").at("input").get<std::string>();
    m.builder = j.at("builder").get<std::string>();
    if (j.contains("shard")) {
      const auto& sh = j.at("shard");
      ShardManifest shard;
      shard.shard = UnsignedField<uint32_t>(sh, "shard");
      shard.shards = UnsignedField<uint32_t>(sh, "shards");
      shard.first_docid = UnsignedField<uint32_t>(sh, "first_docid");
      shard.collection_index_id = sh.at("collection_index_id").get<std::string>();
      shard.collection_num_docs = UnsignedField<uint32_t>(sh, "collection_num_docs");
      shard.collection_avg_doc_length = FloatField(sh, "collection_avg_doc_length");
      m.shard = std::move(shard);
    }
  } catch (const nlohmann::json::exception& e) {
    return absl::DataLossError(
        absl::StrCat("manifest is missing a field or has a wrong type: ", e.what()));
  } catch (const BadNumber& e) {
    return absl::DataLossError(absl::StrCat("manifest field \"", e.key, "\" is not ", e.expected));
  }
  return m;
}

std::string EncodeLexicon(const std::vector<LexiconEntry>& entries, absl::string_view term_pool) {
  std::string packed;
  std::vector<uint64_t> samples;
  for (size_t i = 0; i < entries.size(); ++i) {
    const LexiconEntry& e = entries[i];
    if (i % kLexiconBlock == 0) {
      samples.push_back(packed.size());
      samples.push_back(e.list_offset);
    }
    const absl::string_view term = term_pool.substr(e.term_offset, e.term_length);
    size_t shared = 0;
    if (i % kLexiconBlock != 0) {
      const LexiconEntry& before = entries[i - 1];
      const absl::string_view previous = term_pool.substr(before.term_offset, before.term_length);
      while (shared < previous.size() && shared < term.size() && previous[shared] == term[shared]) {
        ++shared;
      }
      PutVarint(shared, &packed);
    }
    PutVarint(term.size() - shared, &packed);
    packed.append(term.data() + shared, term.size() - shared);
    PutVarint(e.df, &packed);
    PutVarint(e.cf - e.df, &packed);
    packed.append(reinterpret_cast<const char*>(&e.max_score), 4);
    PutVarint(e.list_bytes, &packed);
  }
  const LexiconHeader header = {entries.size(), samples.size() / 2, packed.size()};
  std::string out(reinterpret_cast<const char*>(&header), sizeof(header));
  out.append(reinterpret_cast<const char*>(samples.data()), samples.size() * sizeof(uint64_t));
  out.append(packed);
  return out;
}

std::string EncodeCollectionDfs(const std::vector<uint32_t>& collection_dfs) {
  const uint64_t count = collection_dfs.size();
  std::string out(reinterpret_cast<const char*>(&count), sizeof(count));
  out.append(reinterpret_cast<const char*>(collection_dfs.data()), 4 * collection_dfs.size());
  return out;
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
    absl::StatusOr<std::unique_ptr<AttributeIndex>> attributes = AttributeIndex::Decode(
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

TermInfo Index::ScanBlock(uint64_t block, uint64_t ordinal) const {
  const LexiconSample& sample = lexicon_samples_[block];
  const uint8_t* const end =
      reinterpret_cast<const uint8_t*>(lexicon_entries_.data()) + lexicon_entries_.size();
  const uint8_t* p =
      reinterpret_cast<const uint8_t*>(lexicon_entries_.data()) + sample.entry_offset;
  uint64_t list_offset = sample.list_offset;
  std::string term;
  PackedEntry e;
  for (uint64_t i = block * kLexiconBlock;; ++i) {
    p = DecodeEntry(p, end, i == block * kLexiconBlock, &term, &e);  // checked at Load
    if (i > block * kLexiconBlock) list_offset = ListStart(list_offset, e.df);
    if (i == ordinal) break;
    list_offset += e.list_bytes;
  }
  return MakeTermInfo(e, ordinal, list_offset);
}

TermInfo Index::term_at(uint64_t ordinal) const {
  return ScanBlock(ordinal / kLexiconBlock, ordinal);
}

std::optional<TermInfo> Index::Lookup(absl::string_view term) const {
  // The last block whose first term is <= term, then a scan of that block. Blocks whose key is
  // below the term's start below it, those whose key is above start above it; only blocks of an
  // equal key (first terms sharing the term's first 8 bytes) need their terms compared.
  const uint8_t* const begin = reinterpret_cast<const uint8_t*>(lexicon_entries_.data());
  const uint8_t* const end = begin + lexicon_entries_.size();
  const uint64_t key = LexiconKey(term);
  const auto keys_begin = lexicon_sample_keys_.begin();
  uint64_t lo = std::lower_bound(keys_begin, lexicon_sample_keys_.end(), key) - keys_begin;
  uint64_t hi = std::upper_bound(keys_begin + lo, lexicon_sample_keys_.end(), key) - keys_begin;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    const uint8_t* p = begin + lexicon_samples_[mid].entry_offset;
    uint64_t length = 0;
    p = GetVarint(p, end, &length);  // checked at Load
    if (absl::string_view(reinterpret_cast<const char*>(p), length) <= term) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::nullopt;
  const uint64_t block = lo - 1;
  const uint8_t* p = begin + lexicon_samples_[block].entry_offset;
  const uint64_t last = std::min(num_terms_, (block + 1) * kLexiconBlock);
  uint64_t list_offset = lexicon_samples_[block].list_offset;
  // The block's terms are compared with `term` as they are front-coded, never rebuilt: `matched`
  // is how many leading bytes the entry before shares with `term`, which is below it. An entry
  // sharing more bytes with that entry than `matched` is below `term` too (it has that entry's
  // byte where `term` differs), one sharing fewer is above it (it rises past that entry where that
  // entry still agrees with `term`), and only one sharing exactly `matched` bytes is compared, from
  // there on. Load has checked that every entry shares the longest prefix it can, on which this
  // rests.
  uint64_t matched = 0;
  PackedEntry e;
  for (uint64_t i = block * kLexiconBlock; i < last; ++i) {
    uint64_t shared = 0, length = 0;
    if (i > block * kLexiconBlock) p = GetVarint(p, end, &shared);  // all checked at Load
    p = GetVarint(p, end, &length);
    const char* suffix = reinterpret_cast<const char*>(p);
    p = DecodeEntryStatistics(p + length, end, &e);
    if (i > block * kLexiconBlock) list_offset = ListStart(list_offset, e.df);
    if (shared < matched) break;  // above `term`
    if (shared == matched) {
      const uint64_t n = std::min<uint64_t>(length, term.size() - matched);
      uint64_t j = 0;
      while (j < n && suffix[j] == term[matched + j]) ++j;
      matched += j;
      if (j < n) {
        if (static_cast<uint8_t>(suffix[j]) > static_cast<uint8_t>(term[matched])) break;
      } else if (shared + length == term.size()) {
        e.term = term;
        return MakeTermInfo(e, i, list_offset);
      } else if (shared + length > term.size()) {
        break;  // `term` is a prefix of this entry's term
      }
    }
    list_offset += e.list_bytes;
  }
  return std::nullopt;
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
