// File: posting_list.h
//
// One term's compressed posting list: docIDs (strictly increasing) and term frequencies, in blocks
// of kBlockSize postings, preceded by a skip table with one entry per block. The skip entry holds
// the block's last docID (so a cursor's next_geq can jump over whole blocks, Ding et al. 2009
// section 2) and the block's maximum BM25 contribution under the index's default parameters (an
// upper bound for block-max pruning and for GPU block selection). Byte layout in index/FORMAT.md.
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

struct ListHeader {
  uint32_t num_postings;
  uint32_t num_blocks;
  uint32_t doc_param;   // the codec's list parameter for docID gaps (Rice's b)
  uint32_t freq_param;  // ... and for frequencies
};
static_assert(sizeof(ListHeader) == 16);

struct SkipEntry {
  uint32_t last_docid;
  float max_score;     // max BM25 contribution in the block (default k1, b; weight 1)
  uint32_t docs_end;   // offset just past the block's docID section, from the start of block data
  uint32_t block_end;  // offset just past the block's frequency section
};
static_assert(sizeof(SkipEntry) == 16);

// A parsed, bounds-checked view of one list inside the mapped postings file. Cheap to copy.
class PostingListView {
 public:
  // Checks the header and that the skip table and block data fit in `bytes`; per-block offsets are
  // checked when a block is decoded. DATA_LOSS on any inconsistency.
  static absl::StatusOr<PostingListView> Parse(absl::string_view bytes);

  PostingListView() = default;

  uint32_t num_postings() const { return header_.num_postings; }
  uint32_t num_blocks() const { return header_.num_blocks; }
  uint32_t doc_param() const { return header_.doc_param; }
  uint32_t freq_param() const { return header_.freq_param; }
  const SkipEntry& skip(uint32_t block) const { return skips_[block]; }
  const SkipEntry* skips() const { return skips_; }
  uint32_t block_postings(uint32_t block) const {
    return block + 1 < header_.num_blocks
               ? static_cast<uint32_t>(kBlockSize)
               : header_.num_postings - static_cast<uint32_t>(kBlockSize) * block;
  }
  // The docID the block's first gap is relative to (0 for the first block).
  uint32_t block_base(uint32_t block) const {
    return block == 0 ? 0 : skips_[block - 1].last_docid;
  }
  const uint8_t* data() const { return data_; }
  size_t data_bytes() const { return data_bytes_; }
  // Compressed bytes of the whole list (header and skip table included).
  size_t total_bytes() const { return total_bytes_; }

  // Decodes the block's absolute docIDs into out[0..block_postings(block)).
  absl::Status DecodeDocids(const BlockCodec& codec, uint32_t block, uint32_t* out) const;
  // Decodes the block's term frequencies (>= 1).
  absl::Status DecodeFreqs(const BlockCodec& codec, uint32_t block, uint32_t* out) const;

  // Full consistency check: every block decodes, docIDs strictly increase, skip entries match the
  // decoded data, all docIDs < num_docs. Used by `tandem-index inspect` and Index::Open(verify).
  absl::Status Verify(const BlockCodec& codec, uint32_t num_docs) const;

 private:
  ListHeader header_{};
  const SkipEntry* skips_ = nullptr;
  const uint8_t* data_ = nullptr;
  size_t data_bytes_ = 0;
  size_t total_bytes_ = 0;
};

// Encodes a list. docids strictly increasing, freqs >= 1, same length >= 1. `doc_norms[d]` is
// Bm25DocNorm under the default parameters and `idf` the term's idf; they give the block maxima.
// Appends the bytes to *out and returns the list's maximum score.
absl::StatusOr<float> EncodePostingList(const BlockCodec& codec, absl::Span<const uint32_t> docids,
                                        absl::Span<const uint32_t> freqs, const float* doc_norms,
                                        float idf, std::string* out);

}  // namespace tandem::index
