#include "index/posting_list.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/strings/str_format.h"
#include "index/bm25.h"
#include "index/simdbp_codec.h"
#include "index/varint.h"

namespace tandem::index {

namespace {

// The 4-byte header of a full-form list.
struct FullListHeader {
  uint8_t doc_param;
  uint8_t freq_param;
  uint16_t flags;  // kWideDocSections or 0
};
static_assert(sizeof(FullListHeader) == kFullListHeaderBytes);

// Codec parameters are bit widths (Rice's b), below 32.
constexpr uint32_t kMaxParam = 31;

// Frequencies are stored minus one: adds the one back to f[0..n), false when a stored 2^32 - 1 (a
// frequency of 2^32) wrapped to 0. Four at a time with SSE2, the x86-64 baseline (GCC's -O2 leaves
// the plain loop scalar, and it was a fifth of a cursor's time reading docIDs and frequencies).
bool AddOneToFrequencies(uint32_t* f, uint32_t n) {
  uint32_t i = 0;
  uint32_t wrapped = 0;
#if defined(__SSE2__)
  const __m128i one = _mm_set1_epi32(1);
  __m128i zeros = _mm_setzero_si128();
  for (; i + 4 <= n; i += 4) {
    __m128i* p = reinterpret_cast<__m128i*>(f + i);
    const __m128i v = _mm_add_epi32(_mm_loadu_si128(p), one);
    zeros = _mm_or_si128(zeros, _mm_cmpeq_epi32(v, _mm_setzero_si128()));
    _mm_storeu_si128(p, v);
  }
  wrapped = static_cast<uint32_t>(_mm_movemask_epi8(zeros));
#endif
  for (; i < n; ++i) {
    f[i] += 1;
    wrapped |= static_cast<uint32_t>(f[i] == 0);
  }
  return wrapped == 0;
}

}  // namespace

absl::StatusOr<PostingListView> PostingListView::Parse(const BlockCodec& codec,
                                                       absl::string_view bytes,
                                                       const ListMetadata& meta) {
  PostingListView view;
  const uint32_t n = meta.num_postings;
  if (n == 0) return absl::DataLossError("posting list of 0 postings");
  view.num_postings_ = n;
  view.num_blocks_ = static_cast<uint32_t>((uint64_t{n} + kBlockSize - 1) / kBlockSize);
  view.cf_ = meta.cf;
  view.total_bytes_ = bytes.size();
  const uint8_t* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const uint8_t* const end = p + bytes.size();
  if (IsCompactList(n)) {
    // Compact form: varint last docID; for two or more postings the codec's parameters (if it has
    // any), varint docID-section bytes, the n - 1 gaps before the last docID, the n frequencies.
    uint64_t last = 0;
    p = GetVarint(p, end, &last, UINT32_MAX);
    if (p == nullptr) return absl::DataLossError("posting list: bad last-docID varint");
    view.inline_last_docid_ = static_cast<uint32_t>(last);
    view.inline_block_max_ = meta.max_score;
    if (n == 1) {
      if (p != end) return absl::DataLossError("posting list of one posting has extra bytes");
      if (meta.cf == 0 || meta.cf > UINT32_MAX) {
        return absl::DataLossError(
            "posting list of one posting: its frequency (cf) is not in [1, 2^32)");
      }
    } else {
      if (codec.has_parameters()) {
        if (end - p < 2 || p[0] > kMaxParam || p[1] > kMaxParam) {
          return absl::DataLossError("posting list: bad codec parameters");
        }
        view.doc_param_ = p[0];
        view.freq_param_ = p[1];
        p += 2;
      }
      uint64_t docs_bytes = 0;
      p = GetVarint(p, end, &docs_bytes, UINT32_MAX);
      if (p == nullptr || docs_bytes > static_cast<uint64_t>(end - p)) {
        return absl::DataLossError("posting list: docID section runs past the list's end");
      }
      view.inline_doc_section_ = static_cast<uint32_t>(docs_bytes);
    }
    view.data_ = p;
    view.data_bytes_ = static_cast<size_t>(end - p);
    if (view.data_bytes_ > UINT32_MAX) return absl::DataLossError("posting list over 4 GiB");
    view.inline_block_end_ = static_cast<uint32_t>(view.data_bytes_);
    return view;
  }
  if (bytes.size() < sizeof(FullListHeader)) {
    return absl::DataLossError("posting list shorter than its header");
  }
  if (reinterpret_cast<uintptr_t>(p) % kFullListAlignment != 0) {
    return absl::DataLossError("posting list is misaligned in the postings file");
  }
  FullListHeader h;
  std::memcpy(&h, p, sizeof(h));
  if (h.doc_param > kMaxParam || h.freq_param > kMaxParam || (h.flags & ~kWideDocSections) != 0 ||
      (!codec.has_parameters() && (h.doc_param != 0 || h.freq_param != 0))) {
    return absl::DataLossError("posting list header is inconsistent");
  }
  view.wide_doc_sections_ = (h.flags & kWideDocSections) != 0;
  const uint64_t nb = view.num_blocks_;
  const uint64_t skip_bytes = SkipTableBytes(nb, view.wide_doc_sections_);
  if (skip_bytes > bytes.size() - sizeof(FullListHeader)) {
    return absl::DataLossError(
        absl::StrFormat("posting list skip table (%d blocks) runs past the list's %d bytes",
                        view.num_blocks_, bytes.size()));
  }
  view.doc_param_ = h.doc_param;
  view.freq_param_ = h.freq_param;
  // Four arrays of one entry per block: last docIDs, block maxima, block ends, docID sections.
  const uint8_t* table = p + sizeof(FullListHeader);
  view.last_docids_ = reinterpret_cast<const uint32_t*>(table);
  view.block_maxes_ = reinterpret_cast<const float*>(table + 4 * nb);
  view.block_ends_ = reinterpret_cast<const uint32_t*>(table + 8 * nb);
  view.doc_sections_ = table + 12 * nb;
  view.data_ = table + skip_bytes;
  view.data_bytes_ = bytes.size() - sizeof(FullListHeader) - skip_bytes;
  if (view.block_ends_[nb - 1] > view.data_bytes_) {
    return absl::DataLossError("posting list's last block runs past the end of the list");
  }
  return view;
}

absl::Status PostingListView::DecodeDocids(const BlockCodec& codec, uint32_t block,
                                           uint32_t* out) const {
  const uint32_t begin = block_begin(block);
  const uint64_t docs_end = this->docs_end(block);
  const uint32_t end_of_block = block_end(block);
  if (docs_end > end_of_block || end_of_block > data_bytes_) {
    return absl::DataLossError(absl::StrFormat("block %d has inconsistent offsets", block));
  }
  const uint32_t n = block_postings(block);
  const uint32_t last = last_docid(block);
  // A compact list stores only the gaps before its last docID, which its header holds.
  const uint32_t coded = compact() ? n - 1 : n;
  if (coded > 0) {
    const uint8_t* end = codec.Decode(data_ + begin, data_ + docs_end, coded, doc_param_, out);
    if (end == nullptr) {
      return absl::DataLossError(absl::StrFormat("block %d: docID gaps do not decode", block));
    }
  }
  // Gaps → docIDs, bounded as they are decoded: engines index per-document arrays by them, and a
  // list that passed its file's checksum may still be wrong (a buggy writer, a hostile file). Every
  // gap but the list's first is at least 1, the sum never wraps, the block ends on its skip
  // table's last docID, and that is at most the list's last docID (which Index::postings checks
  // against the document count). So every docID increases and stays below the document count.
  // GapsToDocids is a vectorized prefix sum (simdbp_codec.h) that also says whether every docID
  // increases without wrapping; only the list's first docID may repeat its base (docID 0).
  if (compact()) {
    if (coded > 0 && (!GapsToDocids(0, out, coded, out) || out[coded - 1] >= last)) {
      return absl::DataLossError("docIDs out of order or beyond the list's last docID");
    }
    out[n - 1] = last;
    return absl::OkStatus();
  }
  const bool first_gap_zero = out[0] == 0;
  const bool increasing = GapsToDocids(block_base(block), out, n, out);
  if (!increasing || (first_gap_zero && block != 0) || out[n - 1] != last ||
      last > last_docids_[num_blocks_ - 1]) {
    return absl::DataLossError(
        absl::StrFormat("block %d: docIDs out of order or beyond the list's skip table", block));
  }
  return absl::OkStatus();
}

absl::Status PostingListView::DecodeFreqs(const BlockCodec& codec, uint32_t block,
                                          uint32_t* out) const {
  const uint64_t docs_end = this->docs_end(block);
  const uint32_t end_of_block = block_end(block);
  if (docs_end > end_of_block || end_of_block > data_bytes_) {
    return absl::DataLossError(absl::StrFormat("block %d has inconsistent offsets", block));
  }
  const uint32_t n = block_postings(block);
  if (n == 1 && compact()) {  // one posting: its frequency is the term's cf (checked by Parse)
    out[0] = static_cast<uint32_t>(cf_);
    return absl::OkStatus();
  }
  const uint8_t* end = codec.Decode(data_ + docs_end, data_ + end_of_block, n, freq_param_, out);
  if (end == nullptr) {
    return absl::DataLossError(absl::StrFormat("block %d: frequencies do not decode", block));
  }
  if (!AddOneToFrequencies(out, n)) {
    return absl::DataLossError(absl::StrFormat("block %d: a frequency beyond 2^32 - 1", block));
  }
  return absl::OkStatus();
}

absl::Status PostingListView::Verify(const BlockCodec& codec, uint32_t num_docs) const {
  uint32_t docs[kBlockSize];
  uint32_t freqs[kBlockSize];
  uint64_t previous = 0;
  uint64_t cf = 0;
  bool first = true;
  for (uint32_t b = 0; b < num_blocks_; ++b) {
    // A block starts where the one before ends, and DecodeDocids checks that it ends no sooner.
    absl::Status s = DecodeDocids(codec, b, docs);
    if (!s.ok()) return s;
    s = DecodeFreqs(codec, b, freqs);
    if (!s.ok()) return s;
    const uint32_t n = block_postings(b);
    for (uint32_t i = 0; i < n; ++i) {
      // A gap that wrapped around 2^32 shows up as a docID that does not increase.
      if (docs[i] >= num_docs || (!first && docs[i] <= previous)) {
        return absl::DataLossError(
            absl::StrFormat("block %d posting %d: docID %d out of order or >= document count %d", b,
                            i, docs[i], num_docs));
      }
      previous = docs[i];
      first = false;
      if (freqs[i] == 0) {
        return absl::DataLossError(absl::StrFormat("block %d posting %d: frequency 0", b, i));
      }
      cf += freqs[i];
    }
    if (docs[n - 1] != last_docid(b)) {
      return absl::DataLossError(absl::StrFormat(
          "block %d: skip table says last docID %d, data says %d", b, last_docid(b), docs[n - 1]));
    }
  }
  if (cf != cf_) {
    return absl::DataLossError(
        absl::StrFormat("frequencies sum to %d, the lexicon's cf is %d", cf, cf_));
  }
  return absl::OkStatus();
}

absl::StatusOr<float> EncodePostingList(const BlockCodec& codec, absl::Span<const uint32_t> docids,
                                        absl::Span<const uint32_t> freqs, const float* doc_norms,
                                        float idf, std::string* out) {
  const size_t n = docids.size();
  if (n == 0 || freqs.size() != n) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "posting list needs >= 1 posting and one frequency per docID (got %d docIDs, %d freqs)", n,
        freqs.size()));
  }
  if (n > UINT32_MAX) return absl::InvalidArgumentError("posting list longer than 2^32");
  std::vector<uint32_t> gaps(n);
  std::vector<uint32_t> fminus(n);
  for (size_t i = 0; i < n; ++i) {
    if (i > 0 && docids[i] <= docids[i - 1]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "docIDs must strictly increase: %d follows %d", docids[i], docids[i - 1]));
    }
    if (freqs[i] == 0) return absl::InvalidArgumentError("term frequency 0 in a posting list");
    gaps[i] = docids[i] - (i % kBlockSize == 0 ? (i == 0 ? 0 : docids[i - 1]) : docids[i - 1]);
    fminus[i] = freqs[i] - 1;
  }
  const bool compact = IsCompactList(static_cast<uint32_t>(n));
  // A compact list codes only the gaps before its last docID (its header holds that one).
  const size_t coded_gaps = compact ? n - 1 : n;
  const uint32_t doc_param = coded_gaps > 0 ? codec.ChooseParameter(gaps.data(), coded_gaps) : 0;
  const uint32_t freq_param = codec.ChooseParameter(fminus.data(), n);
  if (doc_param > 31 || freq_param > 31) {
    return absl::InternalError("codec parameter beyond 31");
  }
  if (compact) {
    float list_max = 0.0f;
    for (size_t i = 0; i < n; ++i) {
      list_max = std::max(list_max, Bm25Score(idf, freqs[i], doc_norms[docids[i]]));
    }
    PutVarint(docids[n - 1], out);
    if (n == 1) return list_max;  // the frequency is the term's cf
    if (codec.has_parameters()) {
      out->push_back(static_cast<char>(doc_param));
      out->push_back(static_cast<char>(freq_param));
    }
    std::string docs;
    codec.Encode(gaps.data(), coded_gaps, doc_param, &docs);
    PutVarint(docs.size(), out);
    out->append(docs);
    codec.Encode(fminus.data(), n, freq_param, out);
    return list_max;
  }

  const uint32_t num_blocks = static_cast<uint32_t>((n + kBlockSize - 1) / kBlockSize);
  std::vector<uint32_t> last_docids(num_blocks), block_ends(num_blocks), doc_sections(num_blocks);
  std::vector<float> block_maxes(num_blocks);
  std::string data;
  data.reserve(n * 2);
  float list_max = 0.0f;
  bool wide = false;
  for (uint32_t b = 0; b < num_blocks; ++b) {
    const size_t begin = size_t{b} * kBlockSize;
    const size_t len = std::min(kBlockSize, n - begin);
    const size_t block_start = data.size();
    codec.Encode(gaps.data() + begin, len, doc_param, &data);
    doc_sections[b] =
        static_cast<uint32_t>(std::min<size_t>(data.size() - block_start, UINT32_MAX));
    wide |= doc_sections[b] > UINT16_MAX;
    codec.Encode(fminus.data() + begin, len, freq_param, &data);
    if (data.size() > UINT32_MAX) {
      return absl::InvalidArgumentError("posting list compresses to more than 4 GiB");
    }
    block_ends[b] = static_cast<uint32_t>(data.size());
    last_docids[b] = docids[begin + len - 1];
    float block_max = 0.0f;
    for (size_t i = begin; i < begin + len; ++i) {
      block_max = std::max(block_max, Bm25Score(idf, freqs[i], doc_norms[docids[i]]));
    }
    block_maxes[b] = block_max;
    list_max = std::max(list_max, block_max);
  }
  const FullListHeader header = {static_cast<uint8_t>(doc_param), static_cast<uint8_t>(freq_param),
                                 wide ? kWideDocSections : uint16_t{0}};
  const size_t table_at = out->size();
  out->append(reinterpret_cast<const char*>(&header), sizeof(header));
  const auto append = [out](const auto& values) {
    out->append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(values[0]));
  };
  append(last_docids);
  append(block_maxes);
  append(block_ends);
  if (wide) {
    append(doc_sections);
  } else {
    const std::vector<uint16_t> narrow(doc_sections.begin(), doc_sections.end());
    append(narrow);
  }
  out->resize(table_at + sizeof(header) + SkipTableBytes(num_blocks, wide), '\0');
  out->append(data);
  return list_max;
}

}  // namespace tandem::index
