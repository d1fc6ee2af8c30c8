// gpu_layouts.bin: writing every term's GPU layouts beside an index, and reading them back
// (gpu/stored_layouts.h has the byte layout).
#include "gpu/layouts/stored_layouts.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <optional>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"

namespace tandem::gpu {
namespace {

static_assert(std::is_trivially_copyable_v<PForDesc> && std::is_trivially_copyable_v<RiceDesc> &&
              std::is_trivially_copyable_v<FreqDesc>);

constexpr size_t kHeaderBytes = 32;
constexpr size_t kTableEntryBytes = 16;
constexpr size_t kTrailerBytes = 16;

constexpr uint64_t Padded(uint64_t bytes) { return (bytes + 15) / 16 * 16; }

template <typename T>
void Put(std::string* out, const T& value) {
  out->append(reinterpret_cast<const char*>(&value), sizeof(T));
  out->append(Padded(sizeof(T)) - sizeof(T), '\0');
}

void PutWords(std::string* out, const std::vector<uint32_t>& words) {
  out->append(reinterpret_cast<const char*>(words.data()), words.size() * 4);
  out->append(Padded(words.size() * 4) - words.size() * 4, '\0');
}

template <typename T>
T Read(const unsigned char* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));
  return value;
}

// One term's entry.
absl::StatusOr<std::string> Entry(const index::Index& index, uint64_t ordinal,
                                  const TranscodeOptions& options) {
  const index::TermInfo term = index.term_at(ordinal);
  TANDEM_ASSIGN_OR_RETURN(index::PostingListView view, index.postings(term));
  TANDEM_ASSIGN_OR_RETURN(GpuPostingList list, TranscodeList(view, index.codec(), options));
  std::string entry;
  const std::vector<uint32_t>* docid_words = nullptr;
  if (const auto* p = std::get_if<PForImage>(&list.docids)) {
    Put(&entry, p->desc);
    docid_words = &p->words;
  } else {
    const RiceImage& r = std::get<RiceImage>(list.docids);
    Put(&entry, r.desc);
    docid_words = &r.words;
  }
  Put(&entry, list.freqs.desc);
  PutWords(&entry, *docid_words);
  PutWords(&entry, list.freqs.words);
  return entry;
}

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(absl::StrCat(path, ": ", what));
}

// values[0..count) start at `first`, never decrease and end at `last`.
bool Monotone(const uint32_t* values, uint64_t count, uint32_t first, uint32_t last) {
  if (count == 0 || values[0] != first || values[count - 1] != last) return false;
  for (uint64_t i = 1; i < count; ++i) {
    if (values[i] < values[i - 1]) return false;
  }
  return true;
}

// Block bases: the docID before each block (0 for the first), increasing, the last below num_docs.
bool BasesInRange(const uint32_t* bases, uint64_t count, uint32_t num_docs) {
  for (uint64_t i = 1; i < count; ++i) {
    if (bases[i] <= bases[i - 1] && !(i == 1 && bases[0] == 0 && bases[1] == 0)) return false;
  }
  return count > 0 && bases[0] == 0 && bases[count - 1] < num_docs;
}

}  // namespace

absl::Status CheckStoredList(const StoredList& list, uint32_t num_docs) {
  const uint32_t* w = list.docid_words.data();
  if (const auto* p = std::get_if<PForDesc>(&list.docid_desc)) {
    const uint64_t nb1 = uint64_t{p->num_blocks} + 1;
    if (!Monotone(w + p->exc_begin, nb1, 0, p->num_exceptions) ||
        !Monotone(w + p->sub_begin, nb1, 0, p->num_sub_exceptions)) {
      return absl::DataLossError("stored PForDelta exception ranges out of order");
    }
    for (uint32_t s = 0; s < p->num_sub_exceptions; ++s) {
      if ((w[p->sub_index + s] >> 1) >= p->num_exceptions ||
          (s > 0 && w[p->sub_index + s] <= w[p->sub_index + s - 1])) {
        return absl::DataLossError("stored PForDelta second-level exceptions out of order");
      }
    }
    if (!BasesInRange(w + p->bases, nb1, num_docs)) {
      return absl::DataLossError("stored PForDelta block bases out of range");
    }
  } else {
    const RiceDesc& r = std::get<RiceDesc>(list.docid_desc);
    const uint64_t nb1 = uint64_t{r.num_blocks} + 1;
    if (!Monotone(w + r.unary_bases, nb1, 0,
                  static_cast<uint32_t>(r.unary_bits - r.num_postings))) {
      return absl::DataLossError("stored Rice unary sums out of order");
    }
    if (!BasesInRange(w + r.bases, nb1, num_docs)) {
      return absl::DataLossError("stored Rice block bases out of range");
    }
  }
  const FreqDesc& f = list.freq_desc;
  if (!Monotone(list.freq_words.data() + f.exc_begin, uint64_t{f.num_blocks} + 1, 0,
                f.num_exceptions)) {
    return absl::DataLossError("stored frequency exception ranges out of order");
  }
  return absl::OkStatus();
}

absl::Status WriteGpuLayouts(const index::Index& index, const TranscodeOptions& given,
                             const std::string& path, int threads) {
  TranscodeOptions options = given;
  options.codec = DefaultGpuCodec(index.codec());
  options.seglrc_docids = false;
  options.num_docs = std::max(index.num_docs(), 1u);
  if (options.pfor_block_size != 128 && options.pfor_block_size != 512) {
    return absl::InvalidArgumentError("PForDelta blocks hold 128 or 512 postings");
  }
  const uint64_t terms = index.num_terms();
  const std::string temporary = path + ".tmp";
  // The temporary file goes away however the write fails (a full disk leaves no half file).
  struct RemoveUnlessRenamed {
    const std::string& path;
    bool renamed = false;
    ~RemoveUnlessRenamed() {
      if (!renamed) std::remove(path.c_str());
    }
  } guard{temporary};
  TANDEM_ASSIGN_OR_RETURN(auto writer,
                          index::FileWriter::Create(temporary, index::FileKind::kGpuLayouts));
  std::string header;
  const uint32_t fields[4] = {kStoredLayoutsVersion, static_cast<uint32_t>(options.codec),
                              options.pfor_block_size, 0};
  header.append(reinterpret_cast<const char*>(fields), sizeof(fields));
  const uint64_t counts[2] = {terms, index.stats().num_postings};
  header.append(reinterpret_cast<const char*>(counts), sizeof(counts));
  TANDEM_RETURN_IF_ERROR(writer->Append(header));

  // Terms are transcoded a round at a time on `threads` threads and written in ordinal order.
  const size_t workers = static_cast<size_t>(std::max(1, threads));
  const uint64_t round = std::max<uint64_t>(64, 8 * workers);
  std::vector<uint64_t> table;  // offset, bytes per term
  table.reserve(2 * terms);
  for (uint64_t first = 0; first < terms; first += round) {
    const uint64_t end = std::min(terms, first + round);
    std::vector<absl::StatusOr<std::string>> entries(end - first, std::string());
    std::atomic<uint64_t> next{first};
    std::vector<std::thread> pool;
    for (size_t w = 0; w < std::min<uint64_t>(workers, end - first); ++w) {
      pool.emplace_back([&] {
        for (uint64_t t = next++; t < end; t = next++)
          entries[t - first] = Entry(index, t, options);
      });
    }
    for (std::thread& t : pool) t.join();
    for (uint64_t t = first; t < end; ++t) {
      if (!entries[t - first].ok()) return entries[t - first].status();
      TANDEM_RETURN_IF_ERROR(writer->Align(16));
      table.push_back(writer->payload_offset());
      table.push_back(entries[t - first]->size());
      TANDEM_RETURN_IF_ERROR(writer->Append(*entries[t - first]));
    }
  }
  TANDEM_RETURN_IF_ERROR(writer->Align(16));
  const uint64_t table_offset = writer->payload_offset();
  TANDEM_RETURN_IF_ERROR(writer->Append(absl::string_view(
      reinterpret_cast<const char*>(table.data()), table.size() * sizeof(uint64_t))));
  const uint64_t trailer[2] = {table_offset, terms};
  TANDEM_RETURN_IF_ERROR(
      writer->Append(absl::string_view(reinterpret_cast<const char*>(trailer), sizeof(trailer))));
  TANDEM_RETURN_IF_ERROR(writer->Finish());
  if (std::rename(temporary.c_str(), path.c_str()) != 0) {
    return absl::InternalError(absl::StrCat("renaming ", temporary, " to ", path, " failed"));
  }
  guard.renamed = true;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<StoredGpuLayouts>> StoredGpuLayouts::Open(
    const std::string& path, const index::Index& index) {
  TANDEM_ASSIGN_OR_RETURN(index::MappedFile file,
                          index::MappedFile::Open(path, index::FileKind::kGpuLayouts));
  const absl::string_view payload = file.payload();
  if (payload.size() < kHeaderBytes + kTrailerBytes) return Corrupt(path, "payload too short");
  const auto* bytes = reinterpret_cast<const unsigned char*>(payload.data());
  const uint32_t version = Read<uint32_t>(bytes);
  const uint32_t codec = Read<uint32_t>(bytes + 4);
  const uint32_t block_size = Read<uint32_t>(bytes + 8);
  const uint64_t terms = Read<uint64_t>(bytes + 16);
  const uint64_t postings = Read<uint64_t>(bytes + 24);
  if (version != kStoredLayoutsVersion) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: GPU layouts of version %d, this build reads version %d; rewrite them with "
        "tandem-index gpu-layouts",
        path, version, kStoredLayoutsVersion));
  }
  if (terms != index.num_terms() || postings != index.stats().num_postings) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s: written for an index of %d terms and %d postings, this one has %d and %d; rewrite "
        "them with tandem-index gpu-layouts",
        path, terms, postings, index.num_terms(), index.stats().num_postings));
  }
  if (codec != static_cast<uint32_t>(DefaultGpuCodec(index.codec())) ||
      (block_size != 128 && block_size != 512)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": layouts of another codec than the index's GPU codec"));
  }
  const unsigned char* trailer = bytes + payload.size() - kTrailerBytes;
  const uint64_t table_offset = Read<uint64_t>(trailer);
  if (Read<uint64_t>(trailer + 8) != terms || table_offset > payload.size() - kTrailerBytes ||
      (payload.size() - kTrailerBytes - table_offset) / kTableEntryBytes < terms) {
    return Corrupt(path, "table outside the payload");
  }
  auto stored = std::unique_ptr<StoredGpuLayouts>(new StoredGpuLayouts());
  stored->codec_ = static_cast<GpuCodec>(codec);
  stored->pfor_block_size_ = block_size;
  stored->num_terms_ = terms;
  stored->num_docs_ = index.num_docs();
  stored->table_ = bytes + table_offset;
  stored->file_ = std::move(file);
  return stored;
}

absl::StatusOr<StoredList> StoredGpuLayouts::Get(const index::TermInfo& term) const {
  const std::string& path = file_.path();
  if (term.ordinal >= num_terms_) return Corrupt(path, "no such term");
  const absl::string_view payload = file_.payload();
  const auto* bytes = reinterpret_cast<const unsigned char*>(payload.data());
  const uint64_t offset = Read<uint64_t>(table_ + term.ordinal * kTableEntryBytes);
  const uint64_t size = Read<uint64_t>(table_ + term.ordinal * kTableEntryBytes + 8);
  if (offset % 16 != 0 || offset > payload.size() || size > payload.size() - offset) {
    return Corrupt(path, absl::StrCat("entry of term ", term.ordinal, " outside the payload"));
  }
  const unsigned char* p = bytes + offset;
  const unsigned char* end = p + size;
  StoredList list;
  uint64_t docid_words = 0;
  const char* error = nullptr;
  if (codec_ == GpuCodec::kPFor) {
    if (size < Padded(sizeof(PForDesc))) return Corrupt(path, "entry too short");
    const PForDesc d = Read<PForDesc>(p);
    error = CheckDesc(d);
    if (error == nullptr && d.block_size != pfor_block_size_) error = "block size differs";
    list.docid_desc = d;
    docid_words = d.image_words;
    p += Padded(sizeof(PForDesc));
  } else {
    if (size < Padded(sizeof(RiceDesc))) return Corrupt(path, "entry too short");
    const RiceDesc d = Read<RiceDesc>(p);
    error = CheckDesc(d);
    list.docid_desc = d;
    docid_words = d.image_words;
    p += Padded(sizeof(RiceDesc));
  }
  if (error != nullptr) return Corrupt(path, absl::StrCat("term ", term.ordinal, ": ", error));
  if (static_cast<uint64_t>(end - p) < Padded(sizeof(FreqDesc))) {
    return Corrupt(path, "entry too short");
  }
  list.freq_desc = Read<FreqDesc>(p);
  p += Padded(sizeof(FreqDesc));
  if (const char* e = CheckDesc(list.freq_desc)) {
    return Corrupt(path, absl::StrCat("term ", term.ordinal, ": ", e));
  }
  const uint64_t docid_postings =
      std::visit([](const auto& d) { return d.num_postings; }, list.docid_desc);
  if (docid_postings != term.df || list.freq_desc.num_postings != term.df) {
    return Corrupt(path, absl::StrFormat("term %d: %d postings stored, the index has %d",
                                         term.ordinal, docid_postings, term.df));
  }
  const uint64_t freq_words = list.freq_desc.image_words;
  if (Padded(docid_words * 4) + Padded(freq_words * 4) != static_cast<uint64_t>(end - p)) {
    return Corrupt(path, absl::StrCat("term ", term.ordinal, ": images differ from descriptors"));
  }
  list.docid_words = absl::MakeConstSpan(reinterpret_cast<const uint32_t*>(p), docid_words);
  p += Padded(docid_words * 4);
  list.freq_words = absl::MakeConstSpan(reinterpret_cast<const uint32_t*>(p), freq_words);
  if (absl::Status s = CheckStoredList(list, num_docs_); !s.ok()) {
    return Corrupt(path, absl::StrCat("term ", term.ordinal, ": ", s.message()));
  }
  return list;
}

}  // namespace tandem::gpu
