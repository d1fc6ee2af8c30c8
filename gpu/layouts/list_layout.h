// File: list_layout.h
//
// Transcodes posting lists, at load time and on the host, into the GPU layouts of Ding et al. 2009
// (gpu/list_format.h describes every array): GPU PForDelta with one bit width per list and
// recursively compressed exceptions (section 6.2), GPU Rice with separate unary and binary bit
// arrays (section 6.1), and frequencies that can be fetched one posting at a time (section 8); and
// the codecs of Ao et al. 2011 (section 4): ParaPFor and the LRC family (LRC, LRCSeg, SegLRC,
// HS-LRC). Also the CPU reference decoders of these layouts, the oracle of the GPU kernels' tests.
//
//   TANDEM_ASSIGN_OR_RETURN(PostingListView view, index.postings(*term));
//   TANDEM_ASSIGN_OR_RETURN(GpuPostingList list,
//                           TranscodeList(view, index.codec(), {.codec = GpuCodec::kPFor}));
//   // list.docids holds a PForImage; upload image.words and decode with gpu/decode.h.
//
// Host code only (C++20, no CUDA).
#pragma once

#include <cstdint>
#include <optional>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gpu/layouts/list_format.h"
#include "index/block_codec.h"
#include "index/posting_list.h"

namespace tandem::gpu {

// A layout: its descriptor and the image of words it describes.
struct PForImage {
  PForDesc desc;
  std::vector<uint32_t> words;
};
struct RiceImage {
  RiceDesc desc;
  std::vector<uint32_t> words;
};
struct FreqImage {
  FreqDesc desc;
  std::vector<uint32_t> words;
};
struct ParaPForImage {
  ParaPForDesc desc;
  std::vector<uint32_t> words;
};
struct LrcImage {
  LrcDesc desc;
  std::vector<uint32_t> words;
};

struct PForOptions {
  uint32_t block_size = 512;  // postings per block of the localized prefix sum: 128 or 512
  // Forces the slot width b (tests). Unset: the smallest width that ~90% of the gaps fit (the
  // paper's "most gaps are less than 2^b"), or one or two bits less where that gives a smaller
  // image and still leaves at most a fifth of the gaps as exceptions.
  std::optional<uint32_t> bit_width;
};

struct RiceOptions {
  // Forces b (tests). Unset: floor(log2(floor(mean gap))), 0 when the mean is below 1, as the
  // index's Rice codec chooses it.
  std::optional<uint32_t> bit_width;
};

struct FreqOptions {
  // Forces the slot width (tests). Unset: the width with the smallest image.
  std::optional<uint32_t> bit_width;
};

struct ParaPForOptions {
  // The largest share of a block's gaps that may be exceptions: b is then the smallest width that
  // leaves at most this share above 2^b (the paper's "most integers (e.g. 90%) are less than 2^b",
  // and the x axis of its Figure 7). Unset: in every block the b that makes the block smallest.
  std::optional<double> max_exception_share;
  // Forces b in every block (tests).
  std::optional<uint32_t> bit_width;
};

struct LrcOptions {
  LrcKind kind = LrcKind::kSegLrc;
  uint32_t segment_length = 256;       // kLrcSeg, kSegLrc: postings per segment (the paper's 256)
  uint32_t postings_per_bucket = 256;  // kHsLrc: average postings per bucket (HS256)
  uint32_t num_docs = 0;               // kHsLrc: docIDs lie below it; 0: the last docID + 1
};

// Builds the layouts from a list's docIDs. Any uint32 sequence is accepted: the gaps are
// docids[i] - docids[i-1] modulo 2^32 (docids[0] for i = 0), and the decoders add them modulo 2^32,
// so index lists (strictly increasing docIDs) and arbitrary test gap sequences both round-trip.
// INVALID_ARGUMENT for an empty list, more than kMaxListPostings postings, a bad block size or
// width, or (Rice) a unary part over 2^32 one-bits.
absl::StatusOr<PForImage> BuildPForDocids(absl::Span<const uint32_t> docids,
                                          const PForOptions& options = {});
absl::StatusOr<RiceImage> BuildRiceDocids(absl::Span<const uint32_t> docids,
                                          const RiceOptions& options = {});
absl::StatusOr<ParaPForImage> BuildParaPForDocids(absl::Span<const uint32_t> docids,
                                                  const ParaPForOptions& options = {});
// LRC also takes any uint32 sequence, except kHsLrc, whose buckets need non-decreasing docIDs
// below num_docs. INVALID_ARGUMENT otherwise, or for a segment length of 0 or a bucket size of 0.
absl::StatusOr<LrcImage> BuildLrcDocids(absl::Span<const uint32_t> docids,
                                        const LrcOptions& options = {});
// Frequencies are >= 1 and stored minus one, as in the index.
absl::StatusOr<FreqImage> BuildFreqs(absl::Span<const uint32_t> freqs,
                                     const FreqOptions& options = {});

// The docID codec of a transcoded list.
enum class GpuCodec { kPFor, kRice };

// The GPU codec that matches an index codec: "rice" → kRice, anything else → kPFor.
GpuCodec DefaultGpuCodec(const index::BlockCodec& codec);

struct TranscodeOptions {
  GpuCodec codec = GpuCodec::kPFor;
  uint32_t pfor_block_size = 512;
  // Also build the docIDs in SegLRC (segments of 256), the compressed form the batch path can
  // search in place (Ao et al. 2011, section 4.3).
  bool seglrc_docids = false;
  // When set, the list's docIDs must increase and stay below it (the collection size): kernels
  // index per-document arrays by them, so a list that breaks this is DATA_LOSS, not transcoded.
  uint32_t num_docs = 0;
};

// One index list in GPU layouts.
struct GpuPostingList {
  std::variant<PForImage, RiceImage> docids;
  FreqImage freqs;
  std::optional<LrcImage> seglrc;  // with TranscodeOptions::seglrc_docids

  uint32_t num_postings() const { return freqs.desc.num_postings; }
  // Bytes of both images.
  uint64_t bytes() const;
};

// Decodes every block of an index list with its codec and builds its GPU layouts. DATA_LOSS when
// the index list does not decode.
absl::StatusOr<GpuPostingList> TranscodeList(const index::PostingListView& list,
                                             const index::BlockCodec& codec,
                                             const TranscodeOptions& options);

// ---- CPU reference decoders (the GPU kernels' oracle) -------------------------------------------
// Straightforward sequential decoders of the layouts, written apart from the kernels. They check
// the descriptor and the per-block sums against the decoded values and return DATA_LOSS on any
// mismatch.

// The whole list: num_postings docIDs or gaps.
absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const PForImage& image, DecodeOutput output);
absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const RiceImage& image, DecodeOutput output);

absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const ParaPForImage& image,
                                                      DecodeOutput output);
// LRC yields docIDs; gaps are taken from them.
absl::StatusOr<std::vector<uint32_t>> ReferenceDecode(const LrcImage& image, DecodeOutput output);

// The docID at `position` of an LRC list, decoded alone (section 4.3's random access).
absl::StatusOr<uint32_t> ReferenceLrcDocid(const LrcImage& image, uint32_t position);

// One block: its min(block size, num_postings - first posting) docIDs or gaps.
absl::StatusOr<std::vector<uint32_t>> ReferenceDecodeBlock(const PForImage& image, uint32_t block,
                                                           DecodeOutput output);
absl::StatusOr<std::vector<uint32_t>> ReferenceDecodeBlock(const RiceImage& image, uint32_t block,
                                                           DecodeOutput output);
absl::StatusOr<std::vector<uint32_t>> ReferenceDecodeBlock(const ParaPForImage& image,
                                                           uint32_t block, DecodeOutput output);

// The frequency (>= 1) of posting `position`, read the way the GPU fetch reads it.
absl::StatusOr<uint32_t> ReferenceFetchFreq(const FreqImage& image, uint32_t position);

}  // namespace tandem::gpu
