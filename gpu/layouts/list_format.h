// File: list_format.h
//
// The GPU layouts of one posting list, as plain descriptors that both the host (C++20) and the CUDA
// translation units (C++17) read. gpu/list_layout.h builds them from index lists; gpu/decode.h
// decodes them on the device. They are in-memory layouts only (built at load time, never written to
// disk), so they carry no format version.
//
// A list's layout is one image of 32-bit words; every array inside it starts at a word offset that
// is a multiple of 4, so it is 16-byte aligned whenever the image is, and the kernels read it with
// 128-bit loads. Bit-packed arrays put value i of width w at bits [i*w, (i+1)*w), bit k being bit
// (k mod 32) of word k/32 (the same little-endian order as index/FORMAT.md), and end with at least
// one spare zero word, so any value can be read with two adjacent word loads.
//
// GPU PForDelta (Ding et al. 2009, section 6.2) — docID gaps, one bit width b for the whole list:
//   slots        n b-bit slots: the low b bits of every gap, exceptions included.
//   bases        num_blocks+1 words: bases[k] is the docID before block k (0 for k = 0), the one
//                uncompressed docID per block that the localized prefix sum starts from; bases[nb]
//                is the list's last docID. Block k holds the docIDs in (bases[k], bases[k+1]].
//   exc_begin    num_blocks+1 words: index of block k's first exception; [nb] = num_exceptions.
//   sub_begin    num_blocks+1 words: index of the first second-level exception (below) that belongs
//                to an exception of block k; [nb] = num_sub_exceptions.
//   exc_offsets  one offset_bits-bit value per exception: its position p in its block as the gap
//                p - p_prev - 1, p_prev being the previous exception's position in the same block
//                (-1 for the block's first). Gaps restart in every block, so a block decodes its
//                own exceptions without the rest of the list.
//   exc_highs    one high_bits-bit value per exception: (gap >> b) - 1 (the high part is at least
//                1).
//   sub_index    one word per second-level exception, sorted: (j << 1) | a, where j indexes the
//                exception arrays and a = 0 for exc_offsets, 1 for exc_highs.
//   sub_high     one word per second-level exception: the value's bits above the array's width.
// The two exception arrays are themselves PForDelta-coded, one level deep, as in the paper: their
// values' low bits sit in fixed-width slots and the rare values that do not fit are patched from
// sub_index/sub_high, which are stored plainly.
//
// GPU Rice (Ding et al. 2009, section 6.1) — docID gaps g = q * 2^b + r, blocks of kRiceBlock:
//   binary       n b-bit remainders r (the paper's Ib).
//   unary        unary_bits bits (the paper's Iu): for every gap q one-bits then a zero-bit;
//                unary_bits = n + sum(q).
//   bases        num_blocks+1 words: docID before block k (0 for k = 0); [nb] = the last docID.
//   unary_bases  num_blocks+1 words: sum of q over the blocks before block k; [nb] = sum(q). Block
//                k's unary codes start at bit kRiceBlock * k + unary_bases[k].
// These two per-block sums are the base sums of the paper's localized prefix sums (it keeps one per
// 128 bits of Iu and one per 128 numbers of Ib; one pair per block of 128 postings carries the same
// information and lets any block decode alone).
//
// Frequencies (Ding et al. 2009, section 8) — tf - 1, fetched one posting at a time:
//   slots        n b-bit slots: the low b bits of every value.
//   exc_begin    ceil(n / kFreqBlock)+1 words: index of the first exception of each block of
//                kFreqBlock postings; the last entry is num_exceptions.
//   exc_pos      one byte per exception: its position in its block (0..kFreqBlock-1), increasing
//                within a block; packed four to a word.
//   exc_highs    one high_bits-bit value per exception: (value >> b) - 1.
// A fetch reads the slot and, when the block has exceptions, binary-searches its few positions.
//
// ParaPFor (Ao et al. 2011, section 4.1 and Appendix G) — docID gaps, blocks of kParaPForBlock
// postings, each a self-described segment with its own slot width (the paper's segment):
//   headers      num_blocks words: b | ib << 6 | hb << 9 | en << 15 (Appendix G.1's header: slot
//                width b, width ib of the exception indices, width hb of the overflows, and en
//                exceptions).
//   offsets      num_blocks+1 words: word offset of block k's data inside `data`; [nb] = where
//                the last block's data ends, data_words - 1.
//   bases        num_blocks+1 words, as PForDelta's: the docID before block k; [nb] = last docID.
//   data         per block, one bit stream from its offset: count b-bit slots (the low b bits of
//                every gap), then en ib-bit exception indices (increasing), then en hb-bit
//                overflows (gap >> b, nonzero); then one spare zero word after the last block.
// Unlike GPU PForDelta's gap-coded exception offsets, an exception's index is stored as it is, so
// every exception is patched by its own thread with no scan (Algorithm 2).
//
// LRC (Ao et al. 2011, section 4.2) — docIDs as vertical deviations from regression lines, so that
// any posting decodes alone. The list is cut into segments, each with its own line and width:
//   segments     num_segments+1 records of kLrcRecordWords words: {first posting, intercept,
//                slope, deviation word offset}; the last record is a sentinel {num_postings, 0, 0,
//                deviation_words}. Posting i of segment s (j = i - first) is
//                  docid = intercept + LrcLine(slope, j) + lambda_j  (modulo 2^32),
//                the slope being a float's bits and the intercept folding in the paper's M_t.
//   widths       num_segments bytes, four to a word: the width of each segment's deviations.
//   deviations   per segment, from its word offset: its lambda_j packed at its width, then at least
//                one spare zero word.
// The kinds differ only in where segments start and how their lines are fitted:
//   kLrc     one segment, the list's least-squares line;
//   kLrcSeg  fixed segments of segment_length postings on the list's one line, each with its own
//            range of deviations (the paper's LRCSeg);
//   kSegLrc  fixed segments, each with its own least-squares line (SegLRC);
//   kHsLrc   one segment per hash bucket (section 3.4): the docIDs x with x >> hash_shift = s, each
//            with its own line (HS-LRC); segment s may be empty (first[s] = first[s+1]).
#pragma once

#include <cstdint>

// Functions that host code and device code both call.
#if defined(__CUDACC__)
#define TANDEM_HOST_DEVICE __host__ __device__
#else
#define TANDEM_HOST_DEVICE
#endif

namespace tandem::gpu {

// Postings per block of the GPU Rice layout and of the frequency layout.
inline constexpr uint32_t kRiceBlock = 128;
inline constexpr uint32_t kFreqBlock = 128;
// Lists are limited to 2^31 - 1 postings (sub_index keeps an exception index in 31 bits).
inline constexpr uint32_t kMaxListPostings = 0x7fffffffu;
// Postings per block (segment) of ParaPFor, words per LRC segment record.
inline constexpr uint32_t kParaPForBlock = 128;
inline constexpr uint32_t kLrcRecordWords = 4;

// What a decoder writes: absolute docIDs (with the localized prefix sum) or only the gaps between
// them (without the final prefix sum, the paper's Figure 4 comparison).
enum class DecodeOutput { kDocids, kGaps };

struct PForDesc {
  uint32_t num_postings = 0;
  uint32_t num_blocks = 0;
  uint32_t block_size = 0;  // 128 or 512
  uint32_t bit_width = 0;   // b, 0..32
  uint32_t num_exceptions = 0;
  uint32_t offset_bits = 0;  // width of exc_offsets' slots
  uint32_t high_bits = 0;    // width of exc_highs' slots
  uint32_t num_sub_exceptions = 0;
  // Word offsets of the arrays inside the image, and the image's size in words.
  uint64_t slots = 0, bases = 0, exc_begin = 0, sub_begin = 0;
  uint64_t exc_offsets = 0, exc_highs = 0, sub_index = 0, sub_high = 0;
  uint64_t image_words = 0;
};

struct RiceDesc {
  uint32_t num_postings = 0;
  uint32_t num_blocks = 0;  // ceil(num_postings / kRiceBlock)
  uint32_t bit_width = 0;   // b, 0..32
  uint32_t reserved = 0;
  uint64_t unary_bits = 0;  // num_postings + sum of q
  uint64_t binary = 0, unary = 0, bases = 0, unary_bases = 0;
  uint64_t image_words = 0;
};

struct FreqDesc {
  uint32_t num_postings = 0;
  uint32_t num_blocks = 0;  // ceil(num_postings / kFreqBlock)
  uint32_t bit_width = 0;   // b, 0..32
  uint32_t high_bits = 0;
  uint32_t num_exceptions = 0;
  uint32_t reserved = 0;
  uint64_t slots = 0, exc_begin = 0, exc_pos = 0, exc_highs = 0;
  uint64_t image_words = 0;
};

struct ParaPForDesc {
  uint32_t num_postings = 0;
  uint32_t num_blocks = 0;      // ceil(num_postings / kParaPForBlock)
  uint32_t num_exceptions = 0;  // over all blocks
  uint32_t reserved = 0;
  uint64_t headers = 0, offsets = 0, bases = 0, data = 0;
  uint64_t data_words = 0;
  uint64_t image_words = 0;
};

// ParaPFor block header fields.
TANDEM_HOST_DEVICE inline uint32_t ParaPForHeader(uint32_t b, uint32_t ib, uint32_t hb,
                                                  uint32_t en) {
  return b | ib << 6 | hb << 9 | en << 15;
}
TANDEM_HOST_DEVICE inline uint32_t ParaPForSlotWidth(uint32_t h) { return h & 63; }
TANDEM_HOST_DEVICE inline uint32_t ParaPForIndexWidth(uint32_t h) { return (h >> 6) & 7; }
TANDEM_HOST_DEVICE inline uint32_t ParaPForOverflowWidth(uint32_t h) { return (h >> 9) & 63; }
TANDEM_HOST_DEVICE inline uint32_t ParaPForExceptions(uint32_t h) { return h >> 15; }

enum class LrcKind : uint32_t { kLrc = 0, kLrcSeg = 1, kSegLrc = 2, kHsLrc = 3 };

struct LrcDesc {
  uint32_t num_postings = 0;
  uint32_t num_segments = 0;
  LrcKind kind = LrcKind::kSegLrc;
  uint32_t segment_length = 0;  // postings per segment but the last; 0 for kHsLrc
  uint32_t hash_shift = 0;      // kHsLrc: the segment of docID x is x >> hash_shift
  uint32_t reserved = 0;
  uint64_t segments = 0, widths = 0, deviations = 0;
  uint64_t deviation_words = 0;
  uint64_t image_words = 0;
};

// LrcLine(slope, j) = floor(slope * j) with the product rounded to a float: the same value on the
// host (SSE, no contraction: a lone multiply) and on the device (round-to-nearest multiply, then
// round down). The builder keeps slope * j below 2^32 for every j of a segment.
TANDEM_HOST_DEVICE inline uint32_t LrcLine(float slope, uint32_t j) {
#if defined(__CUDA_ARCH__)
  return __float2uint_rd(__fmul_rn(slope, __uint2float_rn(j)));
#else
  return static_cast<uint32_t>(slope * static_cast<float>(j));  // >= 0: truncation is the floor
#endif
}

// Words of n packed values of width b, without the spare word.
inline constexpr uint64_t PackedWords(uint64_t n, uint32_t b) { return (n * b + 31) / 32; }
// Words an array of `words` words occupies in an image: padded to a multiple of 4 (16 bytes).
inline constexpr uint64_t AlignedWords(uint64_t words) { return (words + 3) / 4 * 4; }
// Words of a bit-packed array in an image: the packed words, one spare word, padded.
inline constexpr uint64_t PackedArrayWords(uint64_t n, uint32_t b) {
  return AlignedWords(PackedWords(n, b) + 1);
}

namespace layout_internal {
inline bool Fits(uint64_t offset, uint64_t words, uint64_t image_words) {
  return offset % 4 == 0 && offset <= image_words && words <= image_words - offset;
}
}  // namespace layout_internal

// Structural checks of a descriptor against its own image size: widths, counts and that every array
// lies inside the image. Returns nullptr when consistent, otherwise what is wrong. It does not read
// the image (the decoders trust the builder for the array contents).
inline const char* CheckDesc(const PForDesc& d) {
  using layout_internal::Fits;
  if (d.block_size != 128 && d.block_size != 512) return "PForDelta block size must be 128 or 512";
  if (d.num_postings == 0 || d.num_postings > kMaxListPostings) return "bad posting count";
  if (d.num_blocks != (uint64_t{d.num_postings} + d.block_size - 1) / d.block_size) {
    return "block count does not match the posting count";
  }
  if (d.bit_width > 32 || d.offset_bits > 32 || d.high_bits > 32) return "bit width above 32";
  if (d.num_exceptions > d.num_postings) return "more exceptions than postings";
  if (d.bit_width == 32 && d.num_exceptions > 0) return "exceptions with 32-bit slots";
  if (d.num_sub_exceptions > 2ull * d.num_exceptions) return "too many second-level exceptions";
  const uint64_t w = d.image_words, nb1 = uint64_t{d.num_blocks} + 1;
  if (!Fits(d.slots, PackedArrayWords(d.num_postings, d.bit_width), w) || !Fits(d.bases, nb1, w) ||
      !Fits(d.exc_begin, nb1, w) || !Fits(d.sub_begin, nb1, w) ||
      !Fits(d.exc_offsets, PackedArrayWords(d.num_exceptions, d.offset_bits), w) ||
      !Fits(d.exc_highs, PackedArrayWords(d.num_exceptions, d.high_bits), w) ||
      !Fits(d.sub_index, d.num_sub_exceptions, w) || !Fits(d.sub_high, d.num_sub_exceptions, w)) {
    return "an array lies outside the image or is misaligned";
  }
  return nullptr;
}

inline const char* CheckDesc(const RiceDesc& d) {
  using layout_internal::Fits;
  if (d.num_postings == 0 || d.num_postings > kMaxListPostings) return "bad posting count";
  if (d.num_blocks != (uint64_t{d.num_postings} + kRiceBlock - 1) / kRiceBlock) {
    return "block count does not match the posting count";
  }
  if (d.bit_width > 32) return "bit width above 32";
  if (d.unary_bits < d.num_postings || d.unary_bits - d.num_postings > 0xffffffffull) {
    return "unary part length out of range";
  }
  const uint64_t w = d.image_words, nb1 = uint64_t{d.num_blocks} + 1;
  if (!Fits(d.binary, PackedArrayWords(d.num_postings, d.bit_width), w) ||
      !Fits(d.unary, PackedArrayWords(d.unary_bits, 1), w) || !Fits(d.bases, nb1, w) ||
      !Fits(d.unary_bases, nb1, w)) {
    return "an array lies outside the image or is misaligned";
  }
  return nullptr;
}

inline const char* CheckDesc(const FreqDesc& d) {
  using layout_internal::Fits;
  if (d.num_postings == 0 || d.num_postings > kMaxListPostings) return "bad posting count";
  if (d.num_blocks != (uint64_t{d.num_postings} + kFreqBlock - 1) / kFreqBlock) {
    return "block count does not match the posting count";
  }
  if (d.bit_width > 32 || d.high_bits > 32) return "bit width above 32";
  if (d.num_exceptions > d.num_postings) return "more exceptions than postings";
  if (d.bit_width == 32 && d.num_exceptions > 0) return "exceptions with 32-bit slots";
  const uint64_t w = d.image_words;
  if (!Fits(d.slots, PackedArrayWords(d.num_postings, d.bit_width), w) ||
      !Fits(d.exc_begin, uint64_t{d.num_blocks} + 1, w) ||
      !Fits(d.exc_pos, PackedArrayWords(d.num_exceptions, 8), w) ||
      !Fits(d.exc_highs, PackedArrayWords(d.num_exceptions, d.high_bits), w)) {
    return "an array lies outside the image or is misaligned";
  }
  return nullptr;
}

inline const char* CheckDesc(const ParaPForDesc& d) {
  using layout_internal::Fits;
  if (d.num_postings == 0 || d.num_postings > kMaxListPostings) return "bad posting count";
  if (d.num_blocks != (uint64_t{d.num_postings} + kParaPForBlock - 1) / kParaPForBlock) {
    return "block count does not match the posting count";
  }
  if (d.num_exceptions > d.num_postings) return "more exceptions than postings";
  if (d.data_words > 0xffffffffull) return "data beyond 2^32 words";
  const uint64_t w = d.image_words, nb1 = uint64_t{d.num_blocks} + 1;
  if (!Fits(d.headers, d.num_blocks, w) || !Fits(d.offsets, nb1, w) || !Fits(d.bases, nb1, w) ||
      !Fits(d.data, d.data_words, w)) {
    return "an array lies outside the image or is misaligned";
  }
  return nullptr;
}

inline const char* CheckDesc(const LrcDesc& d) {
  using layout_internal::Fits;
  if (d.num_postings == 0 || d.num_postings > kMaxListPostings) return "bad posting count";
  if (d.num_segments == 0) return "no segments";
  switch (d.kind) {
    case LrcKind::kLrc:
      if (d.num_segments != 1 || d.segment_length != d.num_postings) return "LRC has one segment";
      break;
    case LrcKind::kLrcSeg:
    case LrcKind::kSegLrc:
      if (d.segment_length == 0 ||
          d.num_segments != (uint64_t{d.num_postings} + d.segment_length - 1) / d.segment_length) {
        return "segment count does not match the posting count";
      }
      break;
    case LrcKind::kHsLrc:
      if (d.segment_length != 0 || d.hash_shift > 31) return "bad hash segmentation";
      if ((uint64_t{d.num_segments} - 1) >> (32 - d.hash_shift) != 0) return "too many buckets";
      break;
    default:
      return "unknown LRC kind";
  }
  if (d.deviation_words > 0xffffffffull) return "deviations beyond 2^32 words";
  const uint64_t w = d.image_words, ns1 = uint64_t{d.num_segments} + 1;
  if (!Fits(d.segments, ns1 * kLrcRecordWords, w) ||
      !Fits(d.widths, PackedArrayWords(d.num_segments, 8), w) ||
      !Fits(d.deviations, d.deviation_words, w)) {
    return "an array lies outside the image or is misaligned";
  }
  return nullptr;
}

}  // namespace tandem::gpu
