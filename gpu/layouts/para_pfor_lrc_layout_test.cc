// Host-only tests of the ParaPFor and LRC layouts (Ao et al. 2011, section 4): random lists and
// every edge round-trip through the builders and the CPU reference decoders, LRC decodes any
// posting alone, and the reference decoders reject damaged images. No GPU needed.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "gmock/gmock.h"
#include "gpu/layouts/list_layout.h"
#include "gpu/layouts/random_lists.h"
#include "gpu/layouts/search_range.h"
#include "gtest/gtest.h"

namespace tandem::gpu {
namespace {

using testing::DocidsFromGaps;
using testing::GeometricGaps;
using testing::ValuesWithExceptions;

const std::vector<size_t> kLengths = {1, 2, 127, 128, 129, 255, 256, 257, 1000, 4097};

ParaPForOptions ForcedWidth(uint32_t b) {
  ParaPForOptions options;
  options.bit_width = b;
  return options;
}

ParaPForOptions ExceptionShare(double share) {
  ParaPForOptions options;
  options.max_exception_share = share;
  return options;
}

LrcOptions Kind(LrcKind kind) {
  LrcOptions options;
  options.kind = kind;
  return options;
}

uint32_t BlockHeader(const ParaPForImage& image, uint32_t k) {
  return image.words[image.desc.headers + k];
}

std::vector<uint32_t> GapsOf(const std::vector<uint32_t>& docids) {
  std::vector<uint32_t> gaps(docids.size());
  for (size_t i = 0; i < docids.size(); ++i) gaps[i] = docids[i] - (i == 0 ? 0 : docids[i - 1]);
  return gaps;
}

void ExpectParaPForRoundTrip(const ParaPForImage& image, const std::vector<uint32_t>& docids) {
  const std::vector<uint32_t> gaps = GapsOf(docids);
  EXPECT_EQ(ReferenceDecode(image, DecodeOutput::kDocids).value(), docids);
  EXPECT_EQ(ReferenceDecode(image, DecodeOutput::kGaps).value(), gaps);
  for (uint32_t k = 0; k < image.desc.num_blocks; ++k) {
    const size_t first = size_t{k} * kParaPForBlock;
    const size_t end = std::min(docids.size(), first + kParaPForBlock);
    auto block = ReferenceDecodeBlock(image, k, DecodeOutput::kDocids);
    ASSERT_TRUE(block.ok()) << block.status();
    EXPECT_THAT(*block, ::testing::ElementsAreArray(docids.begin() + first, docids.begin() + end));
  }
}

TEST(ParaPForLayoutTest, RoundTripsEveryWidthLengthAndExceptionPattern) {
  std::mt19937_64 rng(41);
  for (uint32_t b = 0; b <= 32; ++b) {
    for (double share : {0.0, 0.1, 1.0}) {
      for (size_t n : kLengths) {
        SCOPED_TRACE(::testing::Message() << "b=" << b << " share=" << share << " n=" << n);
        const std::vector<uint32_t> gaps = ValuesWithExceptions(n, b, share, rng);
        const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
        auto image = BuildParaPForDocids(docids, ForcedWidth(b));
        ASSERT_TRUE(image.ok()) << image.status();
        size_t exceptions = 0;
        for (uint32_t g : gaps) exceptions += b < 32 && (g >> b) != 0;
        EXPECT_EQ(image->desc.num_exceptions, exceptions);
        for (uint32_t k = 0; k < image->desc.num_blocks; ++k) {
          EXPECT_EQ(ParaPForSlotWidth(BlockHeader(*image, k)), b);
        }
        ExpectParaPForRoundTrip(*image, docids);
      }
    }
  }
}

TEST(ParaPForLayoutTest, EdgeBlocks) {
  // One posting, at either end of the range.
  for (uint32_t x : {0u, 1u, 0xffffffffu}) {
    const std::vector<uint32_t> one = {x};
    ExpectParaPForRoundTrip(BuildParaPForDocids(one).value(), one);
    ExpectParaPForRoundTrip(BuildParaPForDocids(one, ForcedWidth(0)).value(), one);
  }
  // Every gap an exception (b = 0 with no zero gap), the last index needing all 7 index bits.
  std::vector<uint32_t> docids(128);
  for (uint32_t i = 0; i < 128; ++i) docids[i] = 3 * (i + 1);
  const ParaPForImage all = BuildParaPForDocids(docids, ForcedWidth(0)).value();
  EXPECT_EQ(all.desc.num_exceptions, 128u);
  EXPECT_EQ(ParaPForExceptions(BlockHeader(all, 0)), 128u);
  EXPECT_EQ(ParaPForIndexWidth(BlockHeader(all, 0)), 7u);
  EXPECT_EQ(ParaPForOverflowWidth(BlockHeader(all, 0)), 2u);
  ExpectParaPForRoundTrip(all, docids);
  // b = 32: full-width slots and no exceptions, even for the largest gaps.
  const std::vector<uint32_t> wide = {0x7fffffffu, 0xfffffffeu, 0xffffffffu};
  const ParaPForImage full = BuildParaPForDocids(wide, ForcedWidth(32)).value();
  EXPECT_EQ(full.desc.num_exceptions, 0u);
  ExpectParaPForRoundTrip(full, wide);
  // All zero gaps: zero-width slots.
  const std::vector<uint32_t> zeros(300, 0);
  const ParaPForImage none = BuildParaPForDocids(zeros).value();
  EXPECT_EQ(ParaPForSlotWidth(BlockHeader(none, 0)), 0u);
  ExpectParaPForRoundTrip(none, zeros);
}

TEST(ParaPForLayoutTest, ExceptionShareBoundsEveryBlockWithTheSmallestWidth) {
  std::mt19937_64 rng(42);
  const std::vector<uint32_t> gaps = GeometricGaps(20000, 40.0, rng);
  const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
  for (double share : {0.0, 0.1, 0.3, 0.6}) {
    SCOPED_TRACE(share);
    const ParaPForImage image = BuildParaPForDocids(docids, ExceptionShare(share)).value();
    ExpectParaPForRoundTrip(image, docids);
    for (uint32_t k = 0; k < image.desc.num_blocks; ++k) {
      const uint32_t first = k * kParaPForBlock;
      const uint32_t count = std::min<uint32_t>(kParaPForBlock, gaps.size() - first);
      const uint32_t allowed = static_cast<uint32_t>(share * count);
      const uint32_t b = ParaPForSlotWidth(BlockHeader(image, k));
      auto above = [&](uint32_t w) {
        uint32_t e = 0;
        for (uint32_t i = first; i < first + count; ++i) e += w < 32 && (gaps[i] >> w) != 0;
        return e;
      };
      EXPECT_LE(above(b), allowed) << "block " << k;
      if (b > 0) {
        EXPECT_GT(above(b - 1), allowed) << "block " << k << ": b is not the smallest";
      }
    }
  }
}

TEST(ParaPForLayoutTest, ChosenWidthsMakeTheSmallestImage) {
  std::mt19937_64 rng(43);
  std::vector<uint32_t> gaps = GeometricGaps(30000, 12.0, rng);
  for (size_t i = 0; i < gaps.size(); i += 97) gaps[i] = 1u << 20;  // outliers
  const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
  const ParaPForImage chosen = BuildParaPForDocids(docids).value();
  ExpectParaPForRoundTrip(chosen, docids);
  for (uint32_t b = 0; b <= 24; ++b) {
    EXPECT_LE(chosen.desc.image_words,
              BuildParaPForDocids(docids, ForcedWidth(b))->desc.image_words)
        << "b=" << b;
  }
  // Section 4.1: storing indices instead of a linked list costs some compression. Here it stays
  // within a few percent of GPU PForDelta's one-level-compressed exceptions.
  PForOptions pfor;
  pfor.block_size = 128;
  const PForImage ding = BuildPForDocids(docids, pfor).value();
  EXPECT_LT(chosen.desc.image_words, 1.05 * ding.desc.image_words)
      << 32.0 * chosen.desc.image_words / docids.size() << " vs "
      << 32.0 * ding.desc.image_words / docids.size() << " bits per posting";
}

TEST(ParaPForLayoutTest, RejectsBadInput) {
  EXPECT_EQ(BuildParaPForDocids({}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<uint32_t> docids = {1, 2, 3};
  EXPECT_EQ(BuildParaPForDocids(docids, ForcedWidth(33)).status().code(),
            absl::StatusCode::kInvalidArgument);
  for (double share : {-0.1, 1.5, std::nan("")}) {
    EXPECT_EQ(BuildParaPForDocids(docids, ExceptionShare(share)).status().code(),
              absl::StatusCode::kInvalidArgument);
  }
}

TEST(ParaPForLayoutTest, ReferenceRejectsDamagedImages) {
  std::mt19937_64 rng(44);
  const std::vector<uint32_t> docids = DocidsFromGaps(ValuesWithExceptions(1000, 4, 0.2, rng));
  const ParaPForImage good = BuildParaPForDocids(docids, ForcedWidth(4)).value();
  ASSERT_TRUE(ReferenceDecode(good, DecodeOutput::kDocids).ok());
  auto expect_loss = [](const ParaPForImage& image) {
    EXPECT_EQ(ReferenceDecode(image, DecodeOutput::kDocids).status().code(),
              absl::StatusCode::kDataLoss);
  };
  ParaPForImage base = good;
  base.words[base.desc.bases + 3] += 1;
  expect_loss(base);
  ParaPForImage header = good;
  header.words[header.desc.headers + 2] += 1 << 15;  // one more exception than stored
  expect_loss(header);
  ParaPForImage width = good;
  width.words[width.desc.headers + 1] = ParaPForHeader(4, 7, 29, 1);  // b + hb > 32
  expect_loss(width);
  ParaPForImage offset = good;
  offset.words[offset.desc.offsets + 1] -= 1;  // block 0's data shorter than its header says
  expect_loss(offset);
  ParaPForImage truncated = good;
  truncated.words.pop_back();
  EXPECT_EQ(ReferenceDecode(truncated, DecodeOutput::kDocids).status().code(),
            absl::StatusCode::kInvalidArgument);
}

const LrcKind kKinds[] = {LrcKind::kLrc, LrcKind::kLrcSeg, LrcKind::kSegLrc, LrcKind::kHsLrc};

void ExpectLrcRoundTrip(const LrcImage& image, const std::vector<uint32_t>& docids) {
  EXPECT_EQ(ReferenceDecode(image, DecodeOutput::kDocids).value(), docids);
  EXPECT_EQ(ReferenceDecode(image, DecodeOutput::kGaps).value(), GapsOf(docids));
  const uint32_t step = std::max<uint32_t>(1, static_cast<uint32_t>(docids.size() / 500));
  for (uint32_t i = 0; i < docids.size(); i += step) {
    ASSERT_EQ(ReferenceLrcDocid(image, i).value(), docids[i]) << "posting " << i;
  }
  ASSERT_EQ(ReferenceLrcDocid(image, static_cast<uint32_t>(docids.size() - 1)).value(),
            docids.back());
  EXPECT_EQ(ReferenceLrcDocid(image, static_cast<uint32_t>(docids.size())).status().code(),
            absl::StatusCode::kOutOfRange);
}

TEST(LrcLayoutTest, EveryKindRoundTripsAndDecodesAnyPostingAlone) {
  std::mt19937_64 rng(45);
  for (LrcKind kind : kKinds) {
    for (double mean : {1.0, 1.5, 40.0, 5000.0}) {
      for (size_t n : {size_t{1}, size_t{2}, size_t{255}, size_t{256}, size_t{257}, size_t{5000},
                       size_t{100000}}) {
        SCOPED_TRACE(::testing::Message()
                     << "kind=" << static_cast<int>(kind) << " mean=" << mean << " n=" << n);
        const std::vector<uint32_t> docids = DocidsFromGaps(GeometricGaps(n, mean, rng));
        if (docids.back() < docids.front()) continue;  // wrapped past 2^32: not an index list
        auto image = BuildLrcDocids(docids, Kind(kind));
        ASSERT_TRUE(image.ok()) << image.status();
        ExpectLrcRoundTrip(*image, docids);
      }
    }
  }
}

TEST(LrcLayoutTest, ArbitrarySequencesRoundTripOnFixedSegments) {
  std::mt19937_64 rng(46);
  std::uniform_int_distribution<uint32_t> any;
  for (LrcKind kind : {LrcKind::kLrc, LrcKind::kLrcSeg, LrcKind::kSegLrc}) {
    for (size_t n : kLengths) {
      std::vector<uint32_t> values(n);
      for (uint32_t& v : values) v = any(rng);
      if (n > 3) values[1] = 0, values[2] = 0xffffffffu;
      auto image = BuildLrcDocids(values, Kind(kind));
      ASSERT_TRUE(image.ok()) << image.status();
      ExpectLrcRoundTrip(*image, values);
    }
  }
}

TEST(LrcLayoutTest, ArithmeticProgressionsNeedNoDeviationBits) {
  std::vector<uint32_t> docids(10000);
  for (uint32_t i = 0; i < docids.size(); ++i) docids[i] = 7 + 13 * i;
  for (LrcKind kind : {LrcKind::kLrc, LrcKind::kLrcSeg, LrcKind::kSegLrc}) {
    const LrcImage image = BuildLrcDocids(docids, Kind(kind)).value();
    ExpectLrcRoundTrip(image, docids);
    EXPECT_LE(image.desc.deviation_words, 1u + image.desc.num_segments) << static_cast<int>(kind);
  }
}

TEST(LrcLayoutTest, SegmentsNarrowTheDeviations) {
  // A dense run, then a sparse one: one line fits neither, a line per segment fits both.
  std::mt19937_64 rng(47);
  std::vector<uint32_t> gaps = GeometricGaps(20000, 2.0, rng);
  const std::vector<uint32_t> sparse = GeometricGaps(20000, 600.0, rng);
  gaps.insert(gaps.end(), sparse.begin(), sparse.end());
  const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
  uint64_t words[4];
  for (LrcKind kind : kKinds) {
    const LrcImage image = BuildLrcDocids(docids, Kind(kind)).value();
    ExpectLrcRoundTrip(image, docids);
    words[static_cast<int>(kind)] = image.desc.image_words;
  }
  EXPECT_LT(words[1], words[0]) << "LRCSeg vs LRC";
  EXPECT_LT(words[2], words[1]) << "SegLRC vs LRCSeg";
  EXPECT_LT(words[3], words[0]) << "HS-LRC vs LRC";
  EXPECT_LT(32.0 * words[2] / docids.size(), 16.0) << "SegLRC bits per posting";
}

TEST(LrcLayoutTest, HashSegmentsHoldTheirBuckets) {
  std::mt19937_64 rng(48);
  const std::vector<uint32_t> docids = DocidsFromGaps(GeometricGaps(50000, 100.0, rng));
  LrcOptions options = Kind(LrcKind::kHsLrc);
  options.num_docs = docids.back() + 1000;
  const LrcImage image = BuildLrcDocids(docids, options).value();
  ExpectLrcRoundTrip(image, docids);  // the reference checks every docID against its bucket
  EXPECT_EQ(image.desc.segment_length, 0u);
  EXPECT_EQ(image.desc.hash_shift, HashShift(50000, options.num_docs, 256));
  EXPECT_EQ(image.desc.num_segments, ((options.num_docs - 1) >> image.desc.hash_shift) + 1);
  EXPECT_LE(50000u / image.desc.num_segments, 512u) << "postings per bucket";
  // docIDs up to the top of the range.
  const std::vector<uint32_t> top = {5, 0x80000000u, 0xfffffff0u, 0xffffffffu};
  ExpectLrcRoundTrip(BuildLrcDocids(top, Kind(LrcKind::kHsLrc)).value(), top);
  // Unsorted docIDs and docIDs past the collection have no bucket.
  const std::vector<uint32_t> unsorted = {5, 3, 9};
  EXPECT_EQ(BuildLrcDocids(unsorted, Kind(LrcKind::kHsLrc)).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.num_docs = docids.back();
  EXPECT_EQ(BuildLrcDocids(docids, options).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(LrcLayoutTest, RejectsBadInputAndDamagedImages) {
  EXPECT_EQ(BuildLrcDocids({}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<uint32_t> docids = {1, 2, 3};
  LrcOptions zero_segments = Kind(LrcKind::kSegLrc);
  zero_segments.segment_length = 0;
  EXPECT_EQ(BuildLrcDocids(docids, zero_segments).status().code(),
            absl::StatusCode::kInvalidArgument);
  LrcOptions zero_buckets = Kind(LrcKind::kHsLrc);
  zero_buckets.postings_per_bucket = 0;
  EXPECT_EQ(BuildLrcDocids(docids, zero_buckets).status().code(),
            absl::StatusCode::kInvalidArgument);

  std::mt19937_64 rng(49);
  const std::vector<uint32_t> list = DocidsFromGaps(GeometricGaps(3000, 30.0, rng));
  const LrcImage good = BuildLrcDocids(list).value();
  ASSERT_TRUE(ReferenceDecode(good, DecodeOutput::kDocids).ok());
  auto expect_loss = [](const LrcImage& image) {
    EXPECT_EQ(ReferenceDecode(image, DecodeOutput::kDocids).status().code(),
              absl::StatusCode::kDataLoss);
  };
  LrcImage first = good;
  first.words[first.desc.segments + 2 * kLrcRecordWords] += 1;  // segment 2 starts elsewhere
  expect_loss(first);
  LrcImage width = good;
  width.words[width.desc.widths] |= 63;  // segment 0 wider than 32 bits
  expect_loss(width);
  LrcImage slope = good;
  const float negative = -1.0f;
  std::memcpy(&slope.words[slope.desc.segments + 2], &negative, sizeof(float));
  expect_loss(slope);
  LrcImage sentinel = good;
  sentinel.words[sentinel.desc.segments + uint64_t{sentinel.desc.num_segments} * kLrcRecordWords] -=
      1;
  expect_loss(sentinel);
  LrcImage kind = good;
  kind.desc.kind = LrcKind::kLrc;  // one segment claimed, several stored
  EXPECT_EQ(ReferenceDecode(kind, DecodeOutput::kDocids).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem::gpu
