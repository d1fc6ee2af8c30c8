// The GPU bitmap builder against the CPU builder: byte-identical columns for both codecs on
// uniform, Zipf-like, clustered (sorted) and multi-valued columns, at sizes around the chunk and
// scan boundaries, gaps longer than one PLWAH fill word, and repeated builds on one builder
// (buffers reused and grown). Skips without a device.
#include "gpu/bitmaps/bitmap_build.h"

#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "filter/bitmap.h"
#include "gmock/gmock.h"
#include "gpu/device/cuda_status.h"
#include "gpu/device/device.h"
#include "gtest/gtest.h"

namespace tandem::gpu {
namespace {

using filter::BitmapCodec;
using ::testing::HasSubstr;

std::unique_ptr<GpuBitmapBuilder> MakeBuilder() {
  auto builder = GpuBitmapBuilder::Create();
  if (!builder.ok()) return nullptr;
  return *std::move(builder);
}

void ExpectSameColumns(GpuBitmapBuilder& gpu, BitmapCodec codec, uint32_t num_rows,
                       const std::vector<uint32_t>& values, const std::vector<uint32_t>& rows) {
  auto expected = filter::BuildBitmaps(codec, num_rows, values, rows);
  ASSERT_TRUE(expected.ok()) << expected.status();
  BitmapBuildTimes times;
  auto got = gpu.Build(codec, num_rows, values, rows, &times);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(got->keys, expected->keys);
  EXPECT_EQ(got->offsets, expected->offsets);
  ASSERT_EQ(got->words.size(), expected->words.size());
  EXPECT_TRUE(got->words == expected->words);
  for (size_t i = 0; i < got->num_columns(); ++i) {
    const auto column = got->Column(i);
    EXPECT_TRUE(filter::ValidateBitmap(codec, num_rows, column.words()).ok()) << "column " << i;
  }
  if (!values.empty()) {
    EXPECT_GT(times.total_ms(), 0.0);
  }
}

TEST(GpuBitmapBuildTest, SameBytesAsTheCpuBuilder) {
  auto gpu = MakeBuilder();
  if (gpu == nullptr) GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 rng(5);
  const uint32_t sizes[] = {1, 30, 31, 32, 1000, 4097, 100000, 1000003};
  for (BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
    for (uint32_t num_rows : sizes) {
      for (uint32_t cardinality : {1u, 2u, 256u, 65536u}) {
        for (int shape = 0; shape < 4; ++shape) {
          SCOPED_TRACE(testing::Message() << filter::BitmapCodecName(codec) << " rows " << num_rows
                                          << " cardinality " << cardinality << " shape " << shape);
          std::vector<uint32_t> values(num_rows);
          for (uint32_t r = 0; r < num_rows; ++r) {
            const double u = double(rng() % 1000000) / 1e6;
            switch (shape) {
              case 0:
                values[r] = uint32_t(u * cardinality);
                break;  // uniform
              case 1:
                values[r] = uint32_t(u * u * u * cardinality);
                break;  // skewed
              case 2:
                values[r] = uint32_t(uint64_t{r} * cardinality / num_rows);
                break;  // sorted
              case 3:   // runs: long stretches of one value with single odd rows inside
                values[r] = (r / 997) % cardinality;
                if (rng() % 101 == 0) values[r] = uint32_t(rng() % cardinality);
                break;
            }
          }
          ExpectSameColumns(*gpu, codec, num_rows, values, {});
        }
      }
    }
  }
}

TEST(GpuBitmapBuildTest, MultiValuedRowsSparseValuesAndLongGaps) {
  auto gpu = MakeBuilder();
  if (gpu == nullptr) GTEST_SKIP() << "no CUDA device";
  std::mt19937_64 rng(9);
  for (BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
    // Several values per row, rows without values, keys spread over 32 bits.
    std::vector<uint32_t> rows, values;
    for (uint32_t r = 0; r < 200000; ++r) {
      const int count = int(rng() % 4);
      for (int c = 0; c < count; ++c) {
        rows.push_back(r);
        values.push_back(uint32_t(rng() % 50) * 80000000u);
      }
    }
    ExpectSameColumns(*gpu, codec, 200000, values, rows);
    // 2^32 - 1 rows and a handful of records: gaps of more than 2^25 chunks.
    const uint32_t huge = 0xFFFFFFFFu;
    ExpectSameColumns(*gpu, codec, huge, {7, 7, 3, 7}, {0, 5, 1u << 31, huge - 1});
    // Nothing at all.
    ExpectSameColumns(*gpu, codec, 10, {}, {});
  }
}

TEST(GpuBitmapBuildTest, BadRowsGetTheCpuBuildersErrors) {
  auto gpu = MakeBuilder();
  if (gpu == nullptr) GTEST_SKIP() << "no CUDA device";
  EXPECT_THAT(
      gpu->Build(BitmapCodec::kWah, 10, std::vector<uint32_t>{1, 2}, std::vector<uint32_t>{5, 3})
          .status()
          .message(),
      HasSubstr("non-decreasing"));
  EXPECT_THAT(gpu->Build(BitmapCodec::kWah, 10, std::vector<uint32_t>{1}, std::vector<uint32_t>{10})
                  .status()
                  .message(),
              HasSubstr("past the last row"));
  EXPECT_THAT(gpu->Build(BitmapCodec::kWah, 1, std::vector<uint32_t>{1, 2}).status().message(),
              HasSubstr("2 values for 1 rows"));
}

// EncodeChunks: chunk payloads already on the device, compressed as filter::FromDense would.
void ExpectEncodedLikeFromDense(DeviceBitmapBuilder& builder, BitmapCodec codec, uint32_t num_rows,
                                const std::vector<uint32_t>& payloads) {
  std::vector<uint64_t> dense((uint64_t{num_rows} + 63) / 64);
  for (uint64_t c = 0; c < payloads.size(); ++c) {
    for (uint32_t b = 0; b < 31; ++b) {
      const uint64_t row = c * 31 + b;
      if ((payloads[c] >> b) & 1) dense[row / 64] |= uint64_t{1} << (row % 64);
    }
  }
  const filter::Bitmap expected = filter::FromDense(codec, num_rows, dense);
  auto stream = CudaStream::Create();
  ASSERT_TRUE(stream.ok());
  auto device = DeviceBuffer<uint32_t>::Allocate(std::max<size_t>(payloads.size(), 1));
  ASSERT_TRUE(device.ok());
  ASSERT_TRUE(device->CopyFromHost(payloads.data(), payloads.size(), stream->get()).ok());
  ASSERT_TRUE(stream->Synchronize().ok());
  PinnedBitmapColumns out;
  ASSERT_TRUE(
      builder.EncodeChunks(codec == BitmapCodec::kPlwah, device->data(), payloads.size(), &out)
          .ok());
  const std::vector<uint32_t> words(out.words, out.words + out.num_words);
  EXPECT_EQ(out.num_keys, expected.words().empty() ? 0u : 1u);
  ASSERT_EQ(words.size(), expected.words().size());
  EXPECT_TRUE(words == expected.words());
}

TEST(GpuBitmapBuildTest, EncodedChunksMatchFromDense) {
  if (!ProbeDevice().ok()) GTEST_SKIP() << "no CUDA device";
  auto builder = DeviceBitmapBuilder::Create();
  ASSERT_TRUE(builder.ok()) << builder.status();
  std::mt19937_64 rng(31);
  constexpr uint32_t kFull = 0x7FFFFFFFu;
  for (BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
    SCOPED_TRACE(std::string(filter::BitmapCodecName(codec)));
    ExpectEncodedLikeFromDense(**builder, codec, 0, {});
    ExpectEncodedLikeFromDense(**builder, codec, 31000, std::vector<uint32_t>(1000, 0));
    // Every row: 1-fills, the last chunk partial.
    std::vector<uint32_t> all(1000, kFull);
    all.back() = (1u << 5) - 1;
    ExpectEncodedLikeFromDense(**builder, codec, 999 * 31 + 5, all);
    // Runs of zero, full, one-bit, one-zero-bit and random chunks, of random lengths.
    for (int trial = 0; trial < 20; ++trial) {
      std::vector<uint32_t> payloads;
      while (payloads.size() < 200000) {
        const int kind = int(rng() % 5);
        for (int i = 0, n = 1 + int(rng() % 60); i < n; ++i) {
          const uint32_t bit = 1u << (rng() % 31);
          payloads.push_back(kind == 0   ? 0u
                             : kind == 1 ? kFull
                             : kind == 2 ? bit
                             : kind == 3 ? kFull & ~bit
                                         : uint32_t(rng()) & kFull);
        }
      }
      ExpectEncodedLikeFromDense(**builder, codec, uint32_t(payloads.size() * 31), payloads);
    }
  }
  // Fills longer than one word of either codec, each followed by a literal that PLWAH folds.
  std::vector<uint32_t> payloads(34000000, kFull);
  payloads.push_back(kFull & ~(1u << 7));
  payloads.resize(payloads.size() + 34000000, 0u);
  payloads.push_back(1u << 3);
  for (BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
    ExpectEncodedLikeFromDense(**builder, codec, uint32_t(payloads.size() * 31), payloads);
  }
}

TEST(GpuBitmapBuildTest, NoDeviceIsAnError) {
  if (ProbeDevice().ok()) GTEST_SKIP() << "a device is present";
  EXPECT_FALSE(GpuBitmapBuilder::Create().ok());
}

}  // namespace
}  // namespace tandem::gpu
