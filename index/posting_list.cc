#include "index/posting_list.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "index/bm25.h"
#include "index/simdbp_codec.h"

namespace tandem::index {

absl::StatusOr<PostingListView> PostingListView::Parse(absl::string_view bytes) {
  if (bytes.size() < sizeof(ListHeader)) {
    return absl::DataLossError(
        absl::StrFormat("posting list of %d bytes is shorter than its %d-byte header", bytes.size(),
                        sizeof(ListHeader)));
  }
  PostingListView view;
  std::memcpy(&view.header_, bytes.data(), sizeof(ListHeader));
  const ListHeader& h = view.header_;
  const uint64_t expected_blocks = (uint64_t{h.num_postings} + kBlockSize - 1) / kBlockSize;
  if (h.num_postings == 0 || h.num_blocks != expected_blocks) {
    return absl::DataLossError(
        absl::StrFormat("posting list header is inconsistent: %d postings in %d blocks",
                        h.num_postings, h.num_blocks));
  }
  const uint64_t skip_bytes = uint64_t{h.num_blocks} * sizeof(SkipEntry);
  if (sizeof(ListHeader) + skip_bytes > bytes.size()) {
    return absl::DataLossError(
        absl::StrFormat("posting list skip table (%d blocks) runs past the list's %d bytes",
                        h.num_blocks, bytes.size()));
  }
  if (reinterpret_cast<uintptr_t>(bytes.data()) % alignof(SkipEntry) != 0) {
    return absl::DataLossError("posting list is misaligned in the postings file");
  }
  view.skips_ = reinterpret_cast<const SkipEntry*>(bytes.data() + sizeof(ListHeader));
  view.data_ = reinterpret_cast<const uint8_t*>(bytes.data()) + sizeof(ListHeader) + skip_bytes;
  view.data_bytes_ = bytes.size() - sizeof(ListHeader) - skip_bytes;
  view.total_bytes_ = bytes.size();
  if (view.skips_[h.num_blocks - 1].block_end > view.data_bytes_) {
    return absl::DataLossError("posting list's last block runs past the end of the list");
  }
  return view;
}

absl::Status PostingListView::DecodeDocids(const BlockCodec& codec, uint32_t block,
                                           uint32_t* out) const {
  const uint32_t begin = block == 0 ? 0 : skips_[block - 1].block_end;
  const SkipEntry& s = skips_[block];
  if (begin > s.docs_end || s.docs_end > s.block_end || s.block_end > data_bytes_) {
    return absl::DataLossError(absl::StrFormat("block %d has inconsistent offsets", block));
  }
  const uint32_t n = block_postings(block);
  const uint8_t* end = codec.Decode(data_ + begin, data_ + s.docs_end, n, header_.doc_param, out);
  if (end == nullptr) {
    return absl::DataLossError(absl::StrFormat("block %d: docID gaps do not decode", block));
  }
  // Gaps → docIDs, bounded as they are decoded: engines index per-document arrays by them, and a
  // list that passed its file's checksum may still be wrong (a buggy writer, a hostile file). Every
  // gap but the list's first is at least 1, the sum never wraps, the block ends on its skip
  // entry's last docID, and that is at most the list's last docID (which Index::postings checks
  // against the document count). So every docID increases and stays below the document count.
  // GapsToDocids is a vectorized prefix sum (simdbp_codec.h) that also says whether every docID
  // increases without wrapping; only the list's first docID may repeat its base (docID 0).
  const bool first_gap_zero = out[0] == 0;
  const bool increasing = GapsToDocids(block_base(block), out, n, out);
  if (!increasing || (first_gap_zero && block != 0) || out[n - 1] != s.last_docid ||
      s.last_docid > skips_[header_.num_blocks - 1].last_docid) {
    return absl::DataLossError(
        absl::StrFormat("block %d: docIDs out of order or beyond the list's skip entries", block));
  }
  return absl::OkStatus();
}

absl::Status PostingListView::DecodeFreqs(const BlockCodec& codec, uint32_t block,
                                          uint32_t* out) const {
  const SkipEntry& s = skips_[block];
  if (s.docs_end > s.block_end || s.block_end > data_bytes_) {
    return absl::DataLossError(absl::StrFormat("block %d has inconsistent offsets", block));
  }
  const uint32_t n = block_postings(block);
  const uint8_t* end =
      codec.Decode(data_ + s.docs_end, data_ + s.block_end, n, header_.freq_param, out);
  if (end == nullptr) {
    return absl::DataLossError(absl::StrFormat("block %d: frequencies do not decode", block));
  }
  // Stored minus one: 2^32 - 1 would be a frequency of 2^32, which wraps to 0.
  bool too_large = false;
  for (uint32_t i = 0; i < n; ++i) {
    too_large |= out[i] == UINT32_MAX;
    out[i] += 1;
  }
  if (too_large) {
    return absl::DataLossError(absl::StrFormat("block %d: a frequency beyond 2^32 - 1", block));
  }
  return absl::OkStatus();
}

absl::Status PostingListView::Verify(const BlockCodec& codec, uint32_t num_docs) const {
  uint32_t docs[kBlockSize];
  uint32_t freqs[kBlockSize];
  uint64_t previous = 0;
  bool first = true;
  for (uint32_t b = 0; b < header_.num_blocks; ++b) {
    if (b > 0 && skips_[b].docs_end < skips_[b - 1].block_end) {
      return absl::DataLossError(absl::StrFormat("block %d starts before block %d ends", b, b - 1));
    }
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
    }
    if (docs[n - 1] != skips_[b].last_docid) {
      return absl::DataLossError(
          absl::StrFormat("block %d: skip entry says last docID %d, data says %d", b,
                          skips_[b].last_docid, docs[n - 1]));
    }
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
  ListHeader header;
  header.num_postings = static_cast<uint32_t>(n);
  header.num_blocks = static_cast<uint32_t>((n + kBlockSize - 1) / kBlockSize);
  header.doc_param = codec.ChooseParameter(gaps.data(), n);
  header.freq_param = codec.ChooseParameter(fminus.data(), n);

  std::vector<SkipEntry> skips(header.num_blocks);
  std::string data;
  data.reserve(n * 2);
  float list_max = 0.0f;
  for (uint32_t b = 0; b < header.num_blocks; ++b) {
    const size_t begin = size_t{b} * kBlockSize;
    const size_t len = std::min(kBlockSize, n - begin);
    codec.Encode(gaps.data() + begin, len, header.doc_param, &data);
    skips[b].docs_end = static_cast<uint32_t>(data.size());
    codec.Encode(fminus.data() + begin, len, header.freq_param, &data);
    if (data.size() > UINT32_MAX) {
      return absl::InvalidArgumentError("posting list compresses to more than 4 GiB");
    }
    skips[b].block_end = static_cast<uint32_t>(data.size());
    skips[b].last_docid = docids[begin + len - 1];
    float block_max = 0.0f;
    for (size_t i = begin; i < begin + len; ++i) {
      block_max = std::max(block_max, Bm25Score(idf, freqs[i], doc_norms[docids[i]]));
    }
    skips[b].max_score = block_max;
    list_max = std::max(list_max, block_max);
  }
  out->append(reinterpret_cast<const char*>(&header), sizeof(header));
  out->append(reinterpret_cast<const char*>(skips.data()), skips.size() * sizeof(SkipEntry));
  out->append(data);
  return list_max;
}

}  // namespace tandem::index
