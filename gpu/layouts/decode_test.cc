// The GPU decoders against the CPU reference decoders of gpu/list_layout.h, on random lists of
// every bit width, exception pattern and length around the block sizes, block subsets, docIDs near
// 2^32, million-posting lists, and real index lists. Label "gpu": every test skips when no device
// is there.
#include "gpu/layouts/decode.h"

#include <algorithm>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gpu/layouts/layout_test_util.h"
#include "gpu/layouts/list_layout.h"
#include "gpu/layouts/random_lists.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::gpu {
namespace {

using testing::DocidsFromGaps;
using testing::ForEveryFreqList;
using testing::ForEveryPForList;
using testing::ForEveryRiceList;
using testing::ForEveryWidth;
using testing::GeometricGaps;
using testing::kExceptionShares;
using testing::kLengths;
using testing::PFor;
using testing::RiceGaps;
using testing::ValuesWithExceptions;

constexpr uint32_t kPoison = 0xa5a5a5a5u;
constexpr size_t kGuard = 64;  // poisoned words after every output, checked untouched

const DecodeOutput kOutputs[] = {DecodeOutput::kDocids, DecodeOutput::kGaps};

const char* Name(DecodeOutput output) {
  return output == DecodeOutput::kDocids ? "docids" : "gaps";
}

// Block subsets to try on a list of nb blocks: everything in reverse, a sorted random tenth, the
// last block alone, the first and last, duplicates, and an index past the end (writes nothing).
std::vector<std::vector<uint32_t>> Selections(uint32_t nb, std::mt19937_64& rng) {
  std::vector<uint32_t> all(nb), tenth;
  for (uint32_t k = 0; k < nb; ++k) all[k] = nb - 1 - k;
  std::bernoulli_distribution pick(0.1);
  for (uint32_t k = 0; k < nb; ++k) {
    if (pick(rng)) tenth.push_back(k);
  }
  return {all, tenth, {nb - 1}, {0, nb - 1}, {nb / 2, nb / 2, 0}, {nb, 0, nb + 100}};
}

class DecodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<DeviceInfo> info = ProbeDevice();
    if (!info.ok()) GTEST_SKIP() << "no CUDA device: " << info.status().message();
    absl::StatusOr<CudaStream> stream = CudaStream::Create();
    ASSERT_TRUE(stream.ok()) << stream.status();
    stream_ = *std::move(stream);
  }

  DeviceBuffer<uint32_t> Upload(const std::vector<uint32_t>& words) {
    absl::StatusOr<DeviceBuffer<uint32_t>> buffer = DeviceBuffer<uint32_t>::Allocate(words.size());
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    if (!buffer.ok()) return {};
    EXPECT_TRUE(buffer->CopyFromHost(words.data(), words.size(), stream_.get()).ok());
    return *std::move(buffer);
  }

  // A poisoned output of n values plus the guard.
  DeviceBuffer<uint32_t> PoisonedOutput(size_t n) {
    absl::StatusOr<DeviceBuffer<uint32_t>> out = DeviceBuffer<uint32_t>::Allocate(n + kGuard);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    EXPECT_EQ(cudaMemsetAsync(out->data(), 0xa5, out->bytes(), stream_.get()), cudaSuccess);
    return *std::move(out);
  }

  // Waits for the stream, copies n values back and checks that the guard words stayed poisoned.
  std::vector<uint32_t> Download(const DeviceBuffer<uint32_t>& out, size_t n) {
    std::vector<uint32_t> host(out.size());
    EXPECT_TRUE(out.CopyToHost(host.data(), host.size(), stream_.get()).ok());
    const absl::Status synced = stream_.Synchronize();
    EXPECT_TRUE(synced.ok()) << synced;
    for (size_t i = n; i < host.size(); ++i) {
      EXPECT_EQ(host[i], kPoison) << "written past the output at " << i;
      if (host[i] != kPoison) break;
    }
    host.resize(n);
    return host;
  }

  // Uploads the image, runs launch(device list, output) on the stream and returns the n values it
  // wrote.
  template <typename Image, typename Launch>
  std::vector<uint32_t> RunOnDevice(const Image& image, size_t n, Launch launch) {
    DeviceBuffer<uint32_t> d_image = Upload(image.words);
    DeviceBuffer<uint32_t> out = PoisonedOutput(n);
    const absl::Status s =
        launch(DeviceImage<decltype(image.desc)>{image.desc, d_image.data()}, out.data());
    EXPECT_TRUE(s.ok()) << s;
    return Download(out, n);
  }

  // PForDelta, Rice and ParaPFor lists.
  template <typename Image>
  std::vector<uint32_t> DecodeWhole(const Image& image, DecodeOutput output) {
    return RunOnDevice(image, image.desc.num_postings, [&](const auto& list, uint32_t* out) {
      return DecodeAll(list, output, out, stream_.get());
    });
  }
  std::vector<uint32_t> DecodeWhole(const LrcImage& image) {
    return RunOnDevice(image, image.desc.num_postings,
                       [&](const DeviceLrcList& list, uint32_t* out) {
                         return DecodeLrcList(list, out, stream_.get());
                       });
  }

  // Expects a built list to decode to its docIDs and to its gaps.
  template <typename Image>
  void ExpectDecodes(const absl::StatusOr<Image>& image, const std::vector<uint32_t>& docids,
                     const std::vector<uint32_t>& gaps) {
    ASSERT_TRUE(image.ok()) << image.status();
    ASSERT_EQ(DecodeWhole(*image, DecodeOutput::kDocids), docids);
    ASSERT_EQ(DecodeWhole(*image, DecodeOutput::kGaps), gaps);
  }

  // Fetches at positions: LRC docIDs, or frequencies.
  template <typename Image>
  std::vector<uint32_t> Fetch(const Image& image, const std::vector<uint32_t>& positions) {
    DeviceBuffer<uint32_t> d_positions = Upload(positions);
    const auto count = static_cast<uint32_t>(positions.size());
    return RunOnDevice(image, positions.size(), [&](const auto& list, uint32_t* out) {
      if constexpr (std::is_same_v<Image, LrcImage>) {
        return FetchLrcDocids(list, d_positions.data(), count, out, stream_.get());
      } else {
        return FetchFreqs(list, d_positions.data(), count, out, stream_.get());
      }
    });
  }

  // Decodes the selected blocks and checks every slot of the output: each selected block's values
  // equal the reference, and every other slot (tails of a short last block, invalid indices) stays
  // poisoned.
  template <typename Image>
  void ExpectBlocksDecode(const Image& image, uint32_t block_size,
                          const std::vector<uint32_t>& selection, DecodeOutput output) {
    DeviceBuffer<uint32_t> d_image = Upload(image.words);
    DeviceBuffer<uint32_t> d_blocks = Upload(selection);
    const size_t slots = selection.size() * block_size;
    DeviceBuffer<uint32_t> out = PoisonedOutput(slots);
    const absl::Status s =
        DecodeBlocks(DeviceImage<decltype(image.desc)>{image.desc, d_image.data()}, d_blocks.data(),
                     static_cast<uint32_t>(selection.size()), output, out.data(), stream_.get());
    ASSERT_TRUE(s.ok()) << s;
    const std::vector<uint32_t> got = Download(out, slots);
    for (size_t sel = 0; sel < selection.size(); ++sel) {
      std::vector<uint32_t> expected;
      if (selection[sel] < image.desc.num_blocks) {
        auto block = ReferenceDecodeBlock(image, selection[sel], output);
        ASSERT_TRUE(block.ok()) << block.status();
        expected = *block;
      }
      for (size_t i = 0; i < block_size; ++i) {
        const uint32_t want = i < expected.size() ? expected[i] : kPoison;
        ASSERT_EQ(got[sel * block_size + i], want)
            << "selection " << sel << " (block " << selection[sel] << ") value " << i;
      }
    }
  }

  // ExpectBlocksDecode for every subset of Selections() and both outputs.
  template <typename Image>
  void ExpectEverySelectionDecodes(const Image& image, uint32_t block_size, std::mt19937_64& rng) {
    for (const std::vector<uint32_t>& selection : Selections(image.desc.num_blocks, rng)) {
      for (DecodeOutput output : kOutputs) {
        SCOPED_TRACE(::testing::Message() << Name(output) << " " << selection.size() << " blocks");
        ExpectBlocksDecode(image, block_size, selection, output);
      }
    }
  }

  CudaStream stream_;
};

TEST_F(DecodeTest, PForMatchesReferenceForEveryWidthLengthAndExceptionPattern) {
  std::mt19937_64 rng(11);
  ForEveryPForList(rng, [&](uint32_t block_size, uint32_t b, const std::vector<uint32_t>& gaps,
                            const std::vector<uint32_t>& docids) {
    ExpectDecodes(BuildPForDocids(docids, PFor(block_size, b)), docids, gaps);
  });
}

TEST_F(DecodeTest, PForDecodesMillionPostingLists) {
  std::mt19937_64 rng(12);
  const size_t n = 1000003;
  for (double mean : {1.0, 2.0, 64.0, 4000.0}) {
    const std::vector<uint32_t> docids = DocidsFromGaps(GeometricGaps(n, mean, rng));
    for (uint32_t block_size : {128u, 512u}) {
      SCOPED_TRACE(::testing::Message() << "mean=" << mean << " B=" << block_size);
      auto image = BuildPForDocids(docids, PFor(block_size));
      ASSERT_TRUE(image.ok()) << image.status();
      for (DecodeOutput output : kOutputs) {
        SCOPED_TRACE(Name(output));
        ASSERT_EQ(DecodeWhole(*image, output), ReferenceDecode(*image, output).value());
      }
    }
  }
  // A narrow forced width with a third of the gaps as exceptions (tens of them per block).
  const std::vector<uint32_t> gaps = ValuesWithExceptions(n, 3, 0.33, rng);
  for (uint32_t block_size : {128u, 512u}) {
    auto image = BuildPForDocids(DocidsFromGaps(gaps), PFor(block_size, 3));
    ASSERT_TRUE(image.ok()) << image.status();
    EXPECT_GT(image->desc.num_sub_exceptions, 0u);
    ASSERT_EQ(DecodeWhole(*image, DecodeOutput::kGaps), gaps);
    ASSERT_EQ(DecodeWhole(*image, DecodeOutput::kDocids), DocidsFromGaps(gaps));
  }
}

TEST_F(DecodeTest, PForDecodesBlockSubsets) {
  std::mt19937_64 rng(13);
  for (uint32_t block_size : {128u, 512u}) {
    for (size_t n : {size_t{1}, size_t{513}, size_t{100003}}) {
      const std::vector<uint32_t> gaps = ValuesWithExceptions(n, 7, 0.1, rng);
      auto image = BuildPForDocids(DocidsFromGaps(gaps), PFor(block_size));
      ASSERT_TRUE(image.ok()) << image.status();
      SCOPED_TRACE(::testing::Message() << "B=" << block_size << " n=" << n);
      ExpectEverySelectionDecodes(*image, block_size, rng);
    }
  }
}

TEST_F(DecodeTest, RiceMatchesReferenceForEveryWidthAndLength) {
  std::mt19937_64 rng(14);
  ForEveryRiceList(
      rng, {0.3, 3.0},
      [&](uint32_t b, const std::vector<uint32_t>& gaps, const std::vector<uint32_t>& docids) {
        ExpectDecodes(BuildRiceDocids(docids, {.bit_width = b}), docids, gaps);
      });
}

TEST_F(DecodeTest, RiceDecodesMillionPostingListsAndLongUnaryRuns) {
  std::mt19937_64 rng(15);
  const size_t n = 1000003;
  for (double mean : {1.0, 2.0, 64.0, 4000.0}) {
    SCOPED_TRACE(::testing::Message() << "mean=" << mean);
    std::vector<uint32_t> gaps = GeometricGaps(n, mean, rng);
    // Outliers: unary runs of thousands to millions of bits, several 1024-bit rounds of a warp.
    gaps[5] += 3000000;
    gaps[n / 2] += 100000;
    gaps[n - 1] += 40000;
    const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
    ExpectDecodes(BuildRiceDocids(docids), docids, gaps);
  }
}

TEST_F(DecodeTest, RiceDecodesBlockSubsets) {
  std::mt19937_64 rng(16);
  for (size_t n : {size_t{1}, size_t{129}, size_t{100003}}) {
    auto image = BuildRiceDocids(DocidsFromGaps(GeometricGaps(n, 20.0, rng)));
    ASSERT_TRUE(image.ok()) << image.status();
    SCOPED_TRACE(::testing::Message() << "n=" << n);
    ExpectEverySelectionDecodes(*image, kRiceBlock, rng);
  }
}

TEST_F(DecodeTest, DocidsNearTheTopOfTheRange) {
  std::mt19937_64 rng(17);
  std::vector<uint32_t> docids = DocidsFromGaps(GeometricGaps(300001, 5.0, rng));
  const uint32_t shift = 0xffffffffu - docids.back();  // the last docID is 2^32 - 1
  for (uint32_t& d : docids) d += shift;
  for (uint32_t block_size : {128u, 512u}) {
    auto image = BuildPForDocids(docids, PFor(block_size));
    ASSERT_TRUE(image.ok()) << image.status();
    ASSERT_EQ(DecodeWhole(*image, DecodeOutput::kDocids), docids);
    ExpectBlocksDecode(*image, block_size, {image->desc.num_blocks - 1, 0}, DecodeOutput::kDocids);
  }
  auto rice = BuildRiceDocids(docids);
  ASSERT_TRUE(rice.ok()) << rice.status();
  ASSERT_EQ(DecodeWhole(*rice, DecodeOutput::kDocids), docids);
  ExpectBlocksDecode(*rice, kRiceBlock, {rice->desc.num_blocks - 1, 0}, DecodeOutput::kDocids);

  const std::vector<uint32_t> top = {0xfffffffeu, 0xffffffffu};
  ASSERT_EQ(DecodeWhole(BuildPForDocids(top).value(), DecodeOutput::kDocids), top);
  ASSERT_EQ(DecodeWhole(BuildRiceDocids(top).value(), DecodeOutput::kDocids), top);
}

TEST_F(DecodeTest, FreqFetchMatchesReferenceForEveryWidth) {
  std::mt19937_64 rng(18);
  ForEveryFreqList(rng, {1, 127, 128, 129, 3000},
                   [&](uint32_t b, const std::vector<uint32_t>& freqs) {
                     auto image = BuildFreqs(freqs, {.bit_width = b});
                     ASSERT_TRUE(image.ok()) << image.status();
                     // Every position, then random ones with repeats, and two past the end (fetch
                     // 0).
                     const auto n = static_cast<uint32_t>(freqs.size());
                     std::vector<uint32_t> positions(n);
                     for (uint32_t i = 0; i < n; ++i) positions[i] = i;
                     std::uniform_int_distribution<uint32_t> any(0, n - 1);
                     for (int r = 0; r < 500; ++r) positions.push_back(any(rng));
                     positions.push_back(n);
                     positions.push_back(0xffffffffu);
                     const std::vector<uint32_t> got = Fetch(*image, positions);
                     for (size_t t = 0; t < positions.size(); ++t) {
                       const uint32_t want = positions[t] < n ? freqs[positions[t]] : 0;
                       ASSERT_EQ(got[t], want) << "position " << positions[t];
                     }
                   });
}

TEST_F(DecodeTest, FreqFetchAtRandomPositionsOfAMillionPostingList) {
  std::mt19937_64 rng(19);
  const size_t n = 1000003;
  const std::vector<uint32_t> freqs = testing::ZipfFrequencies(n, 1 << 20, rng);
  auto image = BuildFreqs(freqs);
  ASSERT_TRUE(image.ok()) << image.status();
  std::vector<uint32_t> positions(2000000);
  std::uniform_int_distribution<uint32_t> any(0, static_cast<uint32_t>(n - 1));
  for (uint32_t& p : positions) p = any(rng);
  const std::vector<uint32_t> got = Fetch(*image, positions);
  for (size_t t = 0; t < positions.size(); ++t) {
    ASSERT_EQ(got[t], freqs[positions[t]]) << "position " << positions[t];
  }
}

// Real index lists (both on-disk codecs), transcoded and decoded on the device, equal the index.
TEST_F(DecodeTest, TranscodedIndexListsDecodeLikeTheIndex) {
  for (const std::string codec : {"pfor", "rice"}) {
    SCOPED_TRACE(codec);
    tandem::testing::TempDir dir;
    const std::string path = dir.path() + "/index";
    tandem::testing::CollectionSpec spec;
    spec.num_docs = 5000;
    spec.vocabulary = 300;
    spec.codec = codec;
    ASSERT_TRUE(
        tandem::testing::BuildIndex(tandem::testing::RandomDocuments(spec), path, codec).ok());
    auto index = index::Index::Open(path);
    ASSERT_TRUE(index.ok()) << index.status();
    const index::Index& idx = **index;
    for (uint64_t t = 0; t < idx.num_terms(); t += 3) {
      auto view = idx.postings(idx.term_at(t));
      ASSERT_TRUE(view.ok()) << view.status();
      const uint32_t n = view->num_postings();
      std::vector<uint32_t> docids(n), freqs(n), positions(n);
      for (uint32_t k = 0; k < view->num_blocks(); ++k) {
        ASSERT_TRUE(view->DecodeDocids(idx.codec(), k, docids.data() + k * index::kBlockSize).ok());
        ASSERT_TRUE(view->DecodeFreqs(idx.codec(), k, freqs.data() + k * index::kBlockSize).ok());
      }
      for (uint32_t i = 0; i < n; ++i) positions[i] = i;
      for (const TranscodeOptions& options :
           {TranscodeOptions{GpuCodec::kPFor, 128}, TranscodeOptions{GpuCodec::kPFor, 512},
            TranscodeOptions{GpuCodec::kRice, 512}}) {
        auto list = TranscodeList(*view, idx.codec(), options);
        ASSERT_TRUE(list.ok()) << list.status();
        const std::vector<uint32_t> got =
            std::visit([&](const auto& image) { return DecodeWhole(image, DecodeOutput::kDocids); },
                       list->docids);
        ASSERT_EQ(got, docids) << "term " << idx.term_at(t).term;
        ASSERT_EQ(Fetch(list->freqs, positions), freqs) << "term " << idx.term_at(t).term;
      }
    }
  }
}

TEST_F(DecodeTest, ParaPForMatchesReferenceForEveryWidthLengthAndExceptionPattern) {
  std::mt19937_64 rng(21);
  ForEveryWidth("share", kExceptionShares, kLengths, [&](uint32_t b, double share, size_t n) {
    const std::vector<uint32_t> gaps = ValuesWithExceptions(n, b, share, rng);
    const std::vector<uint32_t> docids = DocidsFromGaps(gaps);
    ParaPForOptions forced;
    forced.bit_width = b;
    for (const ParaPForOptions& options : {forced, ParaPForOptions{}}) {
      ExpectDecodes(BuildParaPForDocids(docids, options), docids, gaps);
    }
  });
}

TEST_F(DecodeTest, ParaPForDecodesMillionPostingListsAndBlockSubsets) {
  std::mt19937_64 rng(22);
  const size_t n = 1000003;
  for (double mean : {1.0, 64.0, 4000.0}) {
    for (double share : {0.0, 0.1, 0.6}) {
      SCOPED_TRACE(::testing::Message() << "mean=" << mean << " share=" << share);
      const std::vector<uint32_t> docids = DocidsFromGaps(GeometricGaps(n, mean, rng));
      ParaPForOptions options;
      options.max_exception_share = share;
      auto image = BuildParaPForDocids(docids, options);
      ASSERT_TRUE(image.ok()) << image.status();
      for (DecodeOutput output : kOutputs) {
        SCOPED_TRACE(Name(output));
        ASSERT_EQ(DecodeWhole(*image, output), ReferenceDecode(*image, output).value());
      }
    }
  }
  for (size_t m : {size_t{1}, size_t{129}, size_t{100003}}) {
    auto image = BuildParaPForDocids(DocidsFromGaps(ValuesWithExceptions(m, 7, 0.2, rng)));
    ASSERT_TRUE(image.ok()) << image.status();
    SCOPED_TRACE(::testing::Message() << "n=" << m);
    ExpectEverySelectionDecodes(*image, kParaPForBlock, rng);
  }
}

TEST_F(DecodeTest, LrcDecodesEveryKindWholeAndPostingByPosting) {
  std::mt19937_64 rng(23);
  for (LrcKind kind : {LrcKind::kLrc, LrcKind::kLrcSeg, LrcKind::kSegLrc, LrcKind::kHsLrc}) {
    for (double mean : {1.0, 40.0, 3000.0}) {
      for (size_t n :
           {size_t{1}, size_t{255}, size_t{256}, size_t{257}, size_t{4097}, size_t{1000003}}) {
        SCOPED_TRACE(::testing::Message()
                     << "kind=" << static_cast<int>(kind) << " mean=" << mean << " n=" << n);
        const std::vector<uint32_t> docids = DocidsFromGaps(GeometricGaps(n, mean, rng));
        if (docids.back() < docids.front()) continue;  // wrapped past 2^32
        LrcOptions options;
        options.kind = kind;
        auto image = BuildLrcDocids(docids, options);
        ASSERT_TRUE(image.ok()) << image.status();
        ASSERT_EQ(DecodeWhole(*image), docids);
        std::vector<uint32_t> positions(std::min<size_t>(n, 5000));
        std::uniform_int_distribution<uint32_t> any(0, static_cast<uint32_t>(n - 1));
        for (uint32_t& p : positions) p = any(rng);
        positions.push_back(static_cast<uint32_t>(n));  // past the list: 0
        const std::vector<uint32_t> got = Fetch(*image, positions);
        for (size_t t = 0; t + 1 < positions.size(); ++t) {
          ASSERT_EQ(got[t], docids[positions[t]]) << "position " << positions[t];
        }
        EXPECT_EQ(got.back(), 0u);
      }
    }
  }
  // Arbitrary values and docIDs at the top of the range.
  std::vector<uint32_t> values(3000);
  std::uniform_int_distribution<uint32_t> any;
  for (uint32_t& v : values) v = any(rng);
  ASSERT_EQ(DecodeWhole(BuildLrcDocids(values).value()), values);
  const std::vector<uint32_t> top = {5, 0x80000000u, 0xfffffff0u, 0xffffffffu};
  LrcOptions hs;
  hs.kind = LrcKind::kHsLrc;
  ASSERT_EQ(DecodeWhole(BuildLrcDocids(top, hs).value()), top);
}

// Argument checks happen before any CUDA call, so this runs without a device too.
TEST(DecodeArgumentsTest, RejectsBadArguments) {
  auto image = BuildPForDocids(std::vector<uint32_t>{1, 5, 9}, PFor(128));
  ASSERT_TRUE(image.ok());
  alignas(16) static uint32_t fake[64];  // never dereferenced: every call below is refused
  const cudaStream_t some_stream = reinterpret_cast<cudaStream_t>(0x1000);
  DevicePForList list{image->desc, fake};
  auto code = [](const absl::Status& s) { return s.code(); };
  EXPECT_EQ(code(DecodePForList(list, DecodeOutput::kDocids, fake, nullptr)),
            absl::StatusCode::kInvalidArgument);  // the legacy default stream
  EXPECT_EQ(code(DecodePForList(list, DecodeOutput::kDocids, fake + 1, some_stream)),
            absl::StatusCode::kInvalidArgument);  // misaligned output
  EXPECT_EQ(code(DecodePForList({image->desc, nullptr}, DecodeOutput::kDocids, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(DecodePForBlocks(list, nullptr, 3, DecodeOutput::kDocids, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  PForDesc bad = image->desc;
  bad.block_size = 256;
  EXPECT_EQ(code(DecodePForList({bad, fake}, DecodeOutput::kDocids, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  bad = image->desc;
  bad.image_words = 3;
  EXPECT_EQ(code(DecodePForList({bad, fake}, DecodeOutput::kGaps, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  RiceDesc rice{};
  EXPECT_EQ(code(DecodeRiceList({rice, fake}, DecodeOutput::kDocids, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  FreqDesc freq{};
  EXPECT_EQ(code(FetchFreqs({freq, fake}, fake, 1, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  ParaPForDesc para{};
  EXPECT_EQ(code(DecodeParaPForList({para, fake}, DecodeOutput::kDocids, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  auto lrc = BuildLrcDocids(std::vector<uint32_t>{1, 5, 9});
  ASSERT_TRUE(lrc.ok());
  EXPECT_EQ(code(DecodeLrcList({lrc->desc, fake}, fake, nullptr)),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(code(FetchLrcDocids({lrc->desc, fake}, nullptr, 2, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
  LrcDesc bad_lrc = lrc->desc;
  bad_lrc.kind = LrcKind::kLrcSeg;
  bad_lrc.segment_length = 0;
  EXPECT_EQ(code(DecodeLrcList({bad_lrc, fake}, fake, some_stream)),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tandem::gpu
