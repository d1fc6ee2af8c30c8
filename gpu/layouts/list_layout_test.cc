// Host-only tests of the GPU layouts: random lists and real index lists round-trip through the
// builders and the CPU reference decoders. No GPU needed.
#include "gpu/layouts/list_layout.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gpu/layouts/layout_test_util.h"
#include "gpu/layouts/random_lists.h"
#include "gpu/layouts/search_range.h"
#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::gpu {
namespace {

using testing::DocidsFromGaps;
using ::testing::ElementsAreArray;
using testing::ForEveryFreqList;
using testing::ForEveryPForList;
using testing::ForEveryRiceList;
using testing::GeometricGaps;
using testing::PFor;
using testing::RiceGaps;
using testing::ValuesWithExceptions;
using testing::ZipfFrequencies;

size_t CountExceptions(const std::vector<uint32_t>& values, uint32_t b) {
  if (b >= 32) return 0;
  return std::count_if(values.begin(), values.end(), [b](uint32_t v) { return (v >> b) != 0; });
}

template <typename Image>
void ExpectBlocksMatch(const Image& image, uint32_t block_size, const std::vector<uint32_t>& docids,
                       const std::vector<uint32_t>& gaps) {
  const uint32_t nb = static_cast<uint32_t>((docids.size() + block_size - 1) / block_size);
  for (uint32_t k = 0; k < nb; ++k) {
    const size_t first = size_t{k} * block_size;
    const size_t end = std::min(docids.size(), first + block_size);
    auto block_docids = ReferenceDecodeBlock(image, k, DecodeOutput::kDocids);
    ASSERT_TRUE(block_docids.ok()) << block_docids.status();
    EXPECT_THAT(*block_docids, ElementsAreArray(docids.begin() + first, docids.begin() + end));
    auto block_gaps = ReferenceDecodeBlock(image, k, DecodeOutput::kGaps);
    ASSERT_TRUE(block_gaps.ok()) << block_gaps.status();
    EXPECT_THAT(*block_gaps, ElementsAreArray(gaps.begin() + first, gaps.begin() + end));
  }
}

TEST(PForLayoutTest, RoundTripsEveryWidthLengthAndExceptionPattern) {
  std::mt19937_64 rng(1);
  ForEveryPForList(rng, [](uint32_t block_size, uint32_t b, const std::vector<uint32_t>& gaps,
                           const std::vector<uint32_t>& docids) {
    auto image = BuildPForDocids(docids, PFor(block_size, b));
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(image->desc.bit_width, b);
    EXPECT_EQ(image->desc.num_exceptions, CountExceptions(gaps, b));
    EXPECT_EQ(image->words.size(), image->desc.image_words);
    auto decoded = ReferenceDecode(*image, DecodeOutput::kDocids);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ(*decoded, docids);
    auto decoded_gaps = ReferenceDecode(*image, DecodeOutput::kGaps);
    ASSERT_TRUE(decoded_gaps.ok()) << decoded_gaps.status();
    EXPECT_EQ(*decoded_gaps, gaps);
    if (docids.size() <= 1000) ExpectBlocksMatch(*image, block_size, docids, gaps);
  });
}

TEST(PForLayoutTest, CompressesExceptionArraysOneLevelDeep) {
  // Few exceptions with mostly small high parts and a few huge ones: the high-part array gets a
  // narrow width and its outliers become second-level exceptions.
  std::mt19937_64 rng(2);
  std::vector<uint32_t> gaps = ValuesWithExceptions(100000, 4, 0.0, rng);
  for (size_t i = 0; i < gaps.size(); i += 37) gaps[i] = 16 + (i % 16);  // high part 1
  for (size_t i = 5; i < gaps.size(); i += 3001) gaps[i] = 0x40000000u + static_cast<uint32_t>(i);
  const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
  for (uint32_t block_size : {128u, 512u}) {
    auto image = BuildPForDocids(docids, PFor(block_size, 4));
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_GT(image->desc.num_sub_exceptions, 0u);
    EXPECT_LT(image->desc.high_bits, 8u);
    EXPECT_EQ(ReferenceDecode(*image, DecodeOutput::kDocids).value(), docids);
    ExpectBlocksMatch(*image, block_size, docids, gaps);
  }
}

TEST(PForLayoutTest, ChosenWidthFitsMostGapsAndCompresses) {
  std::mt19937_64 rng(3);
  for (double mean : {1.0, 1.5, 4.0, 16.0, 100.0, 5000.0}) {
    SCOPED_TRACE(::testing::Message() << "mean gap " << mean);
    const std::vector<uint32_t> gaps = GeometricGaps(200000, mean, rng);
    const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
    for (uint32_t block_size : {128u, 512u}) {
      auto image = BuildPForDocids(docids, PFor(block_size));
      ASSERT_TRUE(image.ok()) << image.status();
      const PForDesc& d = image->desc;
      EXPECT_LE(d.num_exceptions, gaps.size() / 5);
      // Geometric gaps need about log2(mean) + 1.5 bits; allow the per-block words on top.
      const double bits = 32.0 * d.image_words / gaps.size();
      EXPECT_LT(bits, std::log2(mean) + 3.0 + 96.0 / block_size) << "bits per posting";
      EXPECT_EQ(ReferenceDecode(*image, DecodeOutput::kDocids).value(), docids);
    }
  }
}

TEST(PForLayoutTest, DocidsNearTheTopOfTheRange) {
  std::mt19937_64 rng(4);
  std::vector<uint32_t> gaps = GeometricGaps(70000, 3.0, rng);
  std::vector<uint32_t> docids = DocidsFromGaps(gaps);
  const uint32_t shift = 0xffffffffu - docids.back();  // the last docID is 2^32 - 1
  for (uint32_t& d : docids) d += shift;
  gaps[0] += shift;
  for (uint32_t block_size : {128u, 512u}) {
    auto image = BuildPForDocids(docids, PFor(block_size));
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(ReferenceDecode(*image, DecodeOutput::kDocids).value(), docids);
    ExpectBlocksMatch(*image, block_size, docids, gaps);
  }
  const std::vector<uint32_t> top = {0xffffffffu};
  EXPECT_EQ(ReferenceDecode(BuildPForDocids(top).value(), DecodeOutput::kDocids).value(), top);
}

TEST(PForLayoutTest, RejectsBadInput) {
  EXPECT_EQ(BuildPForDocids({}).status().code(), absl::StatusCode::kInvalidArgument);
  const std::vector<uint32_t> docids = {1, 2, 3};
  EXPECT_EQ(BuildPForDocids(docids, PFor(256)).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(BuildPForDocids(docids, PFor(128, 33)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(RiceLayoutTest, RoundTripsEveryWidthAndLength) {
  std::mt19937_64 rng(5);
  ForEveryRiceList(
      rng, {0.3, 2.0},
      [](uint32_t b, const std::vector<uint32_t>& gaps, const std::vector<uint32_t>& docids) {
        auto image = BuildRiceDocids(docids, {.bit_width = b});
        ASSERT_TRUE(image.ok()) << image.status();
        EXPECT_EQ(image->desc.bit_width, b);
        EXPECT_EQ(ReferenceDecode(*image, DecodeOutput::kDocids).value(), docids);
        EXPECT_EQ(ReferenceDecode(*image, DecodeOutput::kGaps).value(), gaps);
        if (docids.size() <= 1000) ExpectBlocksMatch(*image, kRiceBlock, docids, gaps);
      });
}

TEST(RiceLayoutTest, ChoosesTheIndexCodecsParameterAndHandlesLongUnaryRuns) {
  std::mt19937_64 rng(6);
  const index::BlockCodec* rice = index::GetBlockCodec("rice");
  ASSERT_NE(rice, nullptr);
  for (double mean : {1.0, 2.5, 16.0, 700.0}) {
    std::vector<uint32_t> gaps = GeometricGaps(50000, mean, rng);
    gaps[777] = 5000000;  // a unary run of millions of bits for small b
    const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
    auto image = BuildRiceDocids(docids);
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_EQ(image->desc.bit_width, rice->ChooseParameter(gaps.data(), gaps.size()));
    EXPECT_EQ(ReferenceDecode(*image, DecodeOutput::kDocids).value(), docids);
    ExpectBlocksMatch(*image, kRiceBlock, docids, gaps);
  }
}

TEST(RiceLayoutTest, RejectsUnaryPartsBeyondTheLayoutsCounters) {
  const std::vector<uint32_t> docids = {0x80000000u, 0xffffffffu, 0x7fffffffu, 0xffffffffu};
  EXPECT_EQ(BuildRiceDocids(docids, {.bit_width = 0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(BuildRiceDocids(docids, {.bit_width = 16}).ok());
}

TEST(FreqLayoutTest, FetchesEveryPositionForEveryWidth) {
  std::mt19937_64 rng(7);
  ForEveryFreqList(
      rng, {1, 127, 128, 129, 2000}, [](uint32_t b, const std::vector<uint32_t>& freqs) {
        auto image = BuildFreqs(freqs, {.bit_width = b});
        ASSERT_TRUE(image.ok()) << image.status();
        const uint32_t n = static_cast<uint32_t>(freqs.size());
        for (uint32_t i = 0; i < n; ++i) {
          auto f = ReferenceFetchFreq(*image, i);
          ASSERT_TRUE(f.ok()) << f.status();
          ASSERT_EQ(*f, freqs[i]) << "position " << i;
        }
        EXPECT_EQ(ReferenceFetchFreq(*image, n).status().code(), absl::StatusCode::kOutOfRange);
      });
}

TEST(FreqLayoutTest, ChosenWidthIsCompactForZipfFrequencies) {
  std::mt19937_64 rng(8);
  const std::vector<uint32_t> freqs = ZipfFrequencies(300000, 100000, rng);
  auto image = BuildFreqs(freqs);
  ASSERT_TRUE(image.ok()) << image.status();
  EXPECT_LE(image->desc.bit_width, 3u);
  EXPECT_LT(32.0 * image->desc.image_words / freqs.size(), 5.0) << "bits per frequency";
  for (uint32_t i = 0; i < freqs.size(); i += 7)
    ASSERT_EQ(ReferenceFetchFreq(*image, i).value(), freqs[i]);
  EXPECT_EQ(BuildFreqs(std::vector<uint32_t>{3, 0, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// The oracle is only as good as its checks: damaged per-block sums must not decode silently.
TEST(ReferenceDecoderTest, RejectsLayoutsWhoseStoredSumsDisagree) {
  std::mt19937_64 rng(9);
  const std::vector<uint32_t> gaps = ValuesWithExceptions(1000, 5, 0.1, rng);
  const std::vector<uint32_t> docids = DocidsFromGaps(gaps);

  PForImage pfor = BuildPForDocids(docids, PFor(128)).value();
  ASSERT_TRUE(ReferenceDecode(pfor, DecodeOutput::kDocids).ok());
  pfor.words[pfor.desc.bases + 3] += 1;
  EXPECT_EQ(ReferenceDecode(pfor, DecodeOutput::kDocids).status().code(),
            absl::StatusCode::kDataLoss);
  EXPECT_EQ(ReferenceDecodeBlock(pfor, 2, DecodeOutput::kDocids).status().code(),
            absl::StatusCode::kDataLoss);

  RiceImage rice = BuildRiceDocids(docids).value();
  ASSERT_TRUE(ReferenceDecode(rice, DecodeOutput::kGaps).ok());
  rice.words[rice.desc.unary_bases + 2] += 1;
  EXPECT_EQ(ReferenceDecode(rice, DecodeOutput::kGaps).status().code(),
            absl::StatusCode::kDataLoss);

  PForImage truncated = BuildPForDocids(docids, PFor(512)).value();
  truncated.words.pop_back();
  EXPECT_EQ(ReferenceDecode(truncated, DecodeOutput::kGaps).status().code(),
            absl::StatusCode::kInvalidArgument);
}

// Real index lists, both on-disk codecs, into every GPU layout.
class TranscodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(TranscodeTest, IndexListsRoundTripThroughEveryGpuLayout) {
  tandem::testing::TempDir dir;
  const std::string path = dir.path() + "/index";
  tandem::testing::CollectionSpec spec;
  spec.num_docs = 3000;
  spec.vocabulary = 400;
  spec.codec = GetParam();
  ASSERT_TRUE(
      tandem::testing::BuildIndex(tandem::testing::RandomDocuments(spec), path, spec.codec).ok());
  auto index = index::Index::Open(path);
  ASSERT_TRUE(index.ok()) << index.status();
  const index::Index& idx = **index;
  EXPECT_EQ(DefaultGpuCodec(idx.codec()), GetParam() == "rice" ? GpuCodec::kRice : GpuCodec::kPFor);

  for (uint64_t t = 0; t < idx.num_terms(); ++t) {
    auto view = idx.postings(idx.term_at(t));
    ASSERT_TRUE(view.ok()) << view.status();
    const uint32_t n = view->num_postings();
    std::vector<uint32_t> docids(n), freqs(n);
    for (uint32_t k = 0; k < view->num_blocks(); ++k) {
      ASSERT_TRUE(view->DecodeDocids(idx.codec(), k, docids.data() + k * index::kBlockSize).ok());
      ASSERT_TRUE(view->DecodeFreqs(idx.codec(), k, freqs.data() + k * index::kBlockSize).ok());
    }
    for (TranscodeOptions options :
         {TranscodeOptions{GpuCodec::kPFor, 128}, TranscodeOptions{GpuCodec::kPFor, 512},
          TranscodeOptions{GpuCodec::kRice, 512}}) {
      auto list = TranscodeList(*view, idx.codec(), options);
      ASSERT_TRUE(list.ok()) << list.status();
      ASSERT_EQ(list->num_postings(), n);
      EXPECT_GT(list->bytes(), 0u);
      auto decoded = std::visit(
          [](const auto& image) { return ReferenceDecode(image, DecodeOutput::kDocids); },
          list->docids);
      ASSERT_TRUE(decoded.ok()) << decoded.status();
      ASSERT_EQ(*decoded, docids) << "term " << idx.term_at(t).term;
      for (uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(ReferenceFetchFreq(list->freqs, i).value(), freqs[i]) << "posting " << i;
      }
    }
  }
}

// With the collection size given, docIDs at or above it are DATA_LOSS: kernels index
// per-document arrays by them.
TEST_P(TranscodeTest, DocidsBeyondTheCollectionAreDataLoss) {
  tandem::testing::TempDir dir;
  tandem::testing::CollectionSpec spec;
  spec.num_docs = 1000;
  spec.codec = GetParam();
  ASSERT_TRUE(tandem::testing::BuildIndex(tandem::testing::RandomDocuments(spec),
                                          dir.path() + "/index", spec.codec)
                  .ok());
  auto index = index::Index::Open(dir.path() + "/index");
  ASSERT_TRUE(index.ok()) << index.status();
  auto view = (*index)->postings((*index)->term_at(0));
  ASSERT_TRUE(view.ok());
  TranscodeOptions options;
  options.codec = DefaultGpuCodec((*index)->codec());
  options.num_docs = (*index)->num_docs();
  EXPECT_TRUE(TranscodeList(*view, (*index)->codec(), options).ok());
  std::vector<uint32_t> docids(view->num_postings());
  for (uint32_t k = 0; k < view->num_blocks(); ++k) {
    ASSERT_TRUE(
        view->DecodeDocids((*index)->codec(), k, docids.data() + k * index::kBlockSize).ok());
  }
  options.num_docs = docids.back();  // the last docID is not below it
  const absl::Status status = TranscodeList(*view, (*index)->codec(), options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_NE(status.message().find("collection size"), std::string::npos) << status;
}

// Frequencies that do not sum to the lexicon's cf (a list changed after its checksum was computed)
// are DATA_LOSS, as on the CPU engine.
TEST_P(TranscodeTest, FrequenciesOffTheLexiconsCfAreDataLoss) {
  tandem::testing::TempDir dir;
  tandem::testing::CollectionSpec spec;
  spec.num_docs = 1000;
  spec.codec = GetParam();
  ASSERT_TRUE(tandem::testing::BuildIndex(tandem::testing::RandomDocuments(spec),
                                          dir.path() + "/index", spec.codec)
                  .ok());
  auto index = index::Index::Open(dir.path() + "/index");
  ASSERT_TRUE(index.ok()) << index.status();
  index::TermInfo term = (*index)->term_at(0);
  ASSERT_GT(term.df, 1u);
  const TranscodeOptions options{.codec = DefaultGpuCodec((*index)->codec())};
  EXPECT_TRUE(TranscodeList(*(*index)->postings(term), (*index)->codec(), options).ok());
  term.cf += 1;  // the lexicon's cf as a damaged list would disagree with it
  const absl::Status status =
      TranscodeList(*(*index)->postings(term), (*index)->codec(), options).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_NE(status.message().find(absl::StrCat("the frequencies sum to ", term.cf - 1,
                                               ", the lexicon's cf is ", term.cf)),
            std::string::npos)
      << status;
}

INSTANTIATE_TEST_SUITE_P(EveryIndexCodec, TranscodeTest,
                         ::testing::ValuesIn(index::BlockCodecNames()));

TEST(SearchRangeTest, NamesParseBackAndUnknownNamesAreRefused) {
  for (int r = 0; r < kNumSearchRanges; ++r) {
    const SearchRange range = static_cast<SearchRange>(r);
    SearchRange parsed =
        range == SearchRange::kBinary ? SearchRange::kHash256 : SearchRange::kBinary;
    EXPECT_TRUE(ParseSearchRange(SearchRangeName(range), &parsed)) << r;
    EXPECT_EQ(parsed, range);
  }
  EXPECT_STREQ(SearchRangeName(SearchRange::kLinearRegression), "lr");
  SearchRange untouched = SearchRange::kHash16;
  EXPECT_FALSE(ParseSearchRange("BS", &untouched));
  EXPECT_FALSE(ParseSearchRange("", &untouched));
  EXPECT_EQ(untouched, SearchRange::kHash16);
}

}  // namespace
}  // namespace tandem::gpu
