// File: posting_list.h
//
// One term's compressed posting list: docIDs (strictly increasing) and term frequencies, in blocks
// of kBlockSize postings, with a skip table of one entry per block. The skip table holds each
// block's last docID (so a cursor's next_geq can jump over whole blocks, Ding et al. 2009 section
// 2) and the block's maximum BM25 contribution under the index's default parameters (an upper
// bound for block-max pruning), each in an array of its own: a search over the last docIDs reads
// 16 blocks a cache line, as PISA's block codecs keep their block maxima and endpoints apart.
// Byte layout in index/FORMAT.md.
//
// DocID gaps are taken from the previous block's last docID, so every block decodes on its own.
// Frequencies are stored minus one.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "index/block_codec.h"

namespace tandem::index {

// What the lexicon knows about a list and the list's bytes leave out (FORMAT.md): a list of one
// posting stores no frequency (it is cf) and a list of one block no block maximum (it is the
// list's).
struct ListMetadata {
  uint32_t num_postings = 0;  // df
  uint64_t cf = 0;            // sum of the list's frequencies
  float max_score = 0.0f;     // the list's maximum BM25 contribution
};

// A list of more than one block is stored in the full form: a 4-byte header, the skip table (four
// arrays, FORMAT.md), the blocks. A list of one block (at most kBlockSize postings, most terms of
// a text collection) is stored in the compact form: its last docID and the split between its two
// sections as varints, no skip table; the view synthesizes the one block's entries, so consumers
// see the same interface.
inline bool IsCompactList(uint32_t num_postings) { return num_postings <= kBlockSize; }
// Bytes of a full-form list's header (u8 doc_param, u8 freq_param, u16 flags).
inline constexpr size_t kFullListHeaderBytes = 4;
// The header flag of a list whose docID sections' sizes are u32 (one at least 64 KiB: Rice with a
// gap far beyond its parameter); without it they are u16.
inline constexpr uint16_t kWideDocSections = 1;
// Alignment of a full-form list in the postings payload (its skip table is read in place).
inline constexpr uint64_t kFullListAlignment = 4;
// Bytes of a full-form list's skip table of `num_blocks` entries (padded to 4).
inline constexpr uint64_t SkipTableBytes(uint64_t num_blocks, bool wide_doc_sections) {
  return 12 * num_blocks + ((wide_doc_sections ? 4 : 2) * num_blocks + 3) / 4 * 4;
}

// A parsed, bounds-checked view of one list inside the mapped postings file. Cheap to copy; the
// skip table of a compact list lives inside the view, so take last_docids() from the copy in use.
class PostingListView {
 public:
  // Checks the header and that the skip table and block data fit in `bytes`; per-block offsets are
  // checked when a block is decoded. DATA_LOSS on any inconsistency.
  static absl::StatusOr<PostingListView> Parse(const BlockCodec& codec, absl::string_view bytes,
                                               const ListMetadata& meta);

  PostingListView() = default;

  uint32_t num_postings() const { return num_postings_; }
  // The lexicon's cf: what the list's frequencies sum to.
  uint64_t cf() const { return cf_; }
  uint32_t num_blocks() const { return num_blocks_; }
  uint32_t doc_param() const { return doc_param_; }
  uint32_t freq_param() const { return freq_param_; }
  bool compact() const { return last_docids_ == nullptr; }
  // The block's last docID; last_docids() is the whole array (num_blocks() entries, increasing in
  // a valid list), for searches. A compact list's lives inside the view: take it from the copy in
  // use.
  uint32_t last_docid(uint32_t block) const { return last_docids()[block]; }
  const uint32_t* last_docids() const {
    return last_docids_ != nullptr ? last_docids_ : &inline_last_docid_;
  }
  // The block's maximum BM25 contribution (default k1, b; weight 1).
  float block_max(uint32_t block) const {
    return block_maxes_ != nullptr ? block_maxes_[block] : inline_block_max_;
  }
  uint32_t block_postings(uint32_t block) const {
    return block + 1 < num_blocks_ ? static_cast<uint32_t>(kBlockSize)
                                   : num_postings_ - static_cast<uint32_t>(kBlockSize) * block;
  }
  // The docID the block's first gap is relative to (0 for the first block).
  uint32_t block_base(uint32_t block) const { return block == 0 ? 0 : last_docid(block - 1); }
  // Where the block's data starts and ends, in bytes from data().
  uint32_t block_begin(uint32_t block) const { return block == 0 ? 0 : block_end(block - 1); }
  uint32_t block_end(uint32_t block) const {
    return block_ends_ != nullptr ? block_ends_[block] : inline_block_end_;
  }
  const uint8_t* data() const { return data_; }
  size_t data_bytes() const { return data_bytes_; }
  // Compressed bytes of the whole list (header and skip table included).
  size_t total_bytes() const { return total_bytes_; }

  // Decodes the block's absolute docIDs into out[0..block_postings(block)).
  absl::Status DecodeDocids(const BlockCodec& codec, uint32_t block, uint32_t* out) const;
  // Decodes the block's term frequencies (>= 1).
  absl::Status DecodeFreqs(const BlockCodec& codec, uint32_t block, uint32_t* out) const;

  // Full consistency check: every block decodes, docIDs strictly increase, the skip table matches
  // the decoded data, all docIDs < num_docs, the frequencies sum to cf. Used by `tandem-index
  // inspect` and Index::Open(verify).
  absl::Status Verify(const BlockCodec& codec, uint32_t num_docs) const;

 private:
  uint32_t num_postings_ = 0;
  uint32_t num_blocks_ = 0;
  uint32_t doc_param_ = 0;
  uint32_t freq_param_ = 0;
  // Where the block's docID section ends, in bytes from data().
  uint64_t docs_end(uint32_t block) const {
    const uint32_t bytes = doc_sections_ == nullptr ? inline_doc_section_
                           : wide_doc_sections_
                               ? reinterpret_cast<const uint32_t*>(doc_sections_)[block]
                               : reinterpret_cast<const uint16_t*>(doc_sections_)[block];
    return uint64_t{block_begin(block)} + bytes;
  }

  uint64_t cf_ = 0;
  // The full form's skip table, in place; all null for a compact list, whose one block's values
  // are the inline ones.
  const uint32_t* last_docids_ = nullptr;
  const float* block_maxes_ = nullptr;
  const uint32_t* block_ends_ = nullptr;
  const void* doc_sections_ = nullptr;  // u16 each, u32 with kWideDocSections
  bool wide_doc_sections_ = false;
  uint32_t inline_last_docid_ = 0;
  float inline_block_max_ = 0.0f;
  uint32_t inline_block_end_ = 0;
  uint32_t inline_doc_section_ = 0;
  const uint8_t* data_ = nullptr;
  size_t data_bytes_ = 0;
  size_t total_bytes_ = 0;
};

// Encodes a list, in the compact form when it fits one block, else in the full form (which the
// caller places at a multiple of kFullListAlignment). docids strictly increasing, freqs >= 1, same
// length >= 1. `doc_norms[d]` is Bm25DocNorm under the default parameters and `idf` the term's
// idf; they give the block maxima. Appends the bytes to *out and returns the list's maximum score.
absl::StatusOr<float> EncodePostingList(const BlockCodec& codec, absl::Span<const uint32_t> docids,
                                        absl::Span<const uint32_t> freqs, const float* doc_norms,
                                        float idf, std::string* out);

}  // namespace tandem::index
