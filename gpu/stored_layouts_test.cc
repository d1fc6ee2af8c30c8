// gpu_layouts.bin (gpu/stored_layouts.h): every term of real indexes, in every index codec, reads
// back exactly as TranscodeList builds it; a missing, damaged or foreign file is refused with a
// clear status. Host only: no GPU needed.
#include "gpu/stored_layouts.h"

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "index/block_codec.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::gpu {
namespace {

std::unique_ptr<index::Index> BuildAndOpen(const std::string& dir, uint32_t docs,
                                           const std::string& codec) {
  tandem::testing::CollectionSpec spec;
  spec.num_docs = docs;
  spec.vocabulary = 300;
  spec.codec = codec;
  EXPECT_TRUE(
      tandem::testing::BuildIndex(tandem::testing::RandomDocuments(spec), dir, spec.codec).ok());
  auto index = index::Index::Open(dir);
  EXPECT_TRUE(index.ok()) << index.status();
  return index.ok() ? *std::move(index) : nullptr;
}

template <typename Desc>
bool SameBytes(const Desc& a, const Desc& b) {
  return std::memcmp(&a, &b, sizeof(Desc)) == 0;
}

class StoredLayoutsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StoredLayoutsTest, EveryTermReadsBackAsTranscodeListBuildsIt) {
  tandem::testing::TempDir dir;
  auto index = BuildAndOpen(dir.path() + "/index", 3000, GetParam());
  ASSERT_NE(index, nullptr);
  const std::string path = dir.path() + "/index/" + kStoredLayoutsFile;
  for (uint32_t block_size : {128u, 512u}) {
    TranscodeOptions options;
    options.pfor_block_size = block_size;
    ASSERT_TRUE(WriteGpuLayouts(*index, options, path, 3).ok());
    auto stored = StoredGpuLayouts::Open(path, *index);
    ASSERT_TRUE(stored.ok()) << stored.status();
    EXPECT_EQ((*stored)->codec(), DefaultGpuCodec(index->codec()));
    EXPECT_EQ((*stored)->pfor_block_size(), block_size);
    options.codec = DefaultGpuCodec(index->codec());
    for (uint64_t t = 0; t < index->num_terms(); ++t) {
      const index::TermInfo term = index->term_at(t);
      auto got = (*stored)->Get(term);
      ASSERT_TRUE(got.ok()) << got.status();
      auto view = index->postings(term);
      ASSERT_TRUE(view.ok());
      auto want = TranscodeList(*view, index->codec(), options);
      ASSERT_TRUE(want.ok());
      ASSERT_EQ(got->num_postings(), term.df);
      if (const auto* p = std::get_if<PForImage>(&want->docids)) {
        ASSERT_TRUE(SameBytes(std::get<PForDesc>(got->docid_desc), p->desc)) << "term " << t;
        ASSERT_EQ(std::vector<uint32_t>(got->docid_words.begin(), got->docid_words.end()),
                  p->words);
      } else {
        const RiceImage& r = std::get<RiceImage>(want->docids);
        ASSERT_TRUE(SameBytes(std::get<RiceDesc>(got->docid_desc), r.desc)) << "term " << t;
        ASSERT_EQ(std::vector<uint32_t>(got->docid_words.begin(), got->docid_words.end()), r.words);
      }
      ASSERT_TRUE(SameBytes(got->freq_desc, want->freqs.desc));
      ASSERT_EQ(std::vector<uint32_t>(got->freq_words.begin(), got->freq_words.end()),
                want->freqs.words);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryIndexCodec, StoredLayoutsTest,
                         ::testing::ValuesIn(index::BlockCodecNames()));

TEST(StoredLayoutsFileTest, MissingDamagedAndForeignFilesAreRefused) {
  tandem::testing::TempDir dir;
  auto index = BuildAndOpen(dir.path() + "/a", 2000, "pfor");
  auto other = BuildAndOpen(dir.path() + "/b", 2500, "pfor");
  ASSERT_NE(index, nullptr);
  ASSERT_NE(other, nullptr);
  const std::string path = dir.path() + "/a/" + kStoredLayoutsFile;
  EXPECT_EQ(StoredGpuLayouts::Open(path, *index).status().code(), absl::StatusCode::kNotFound);

  TranscodeOptions bad;
  bad.pfor_block_size = 256;
  EXPECT_EQ(WriteGpuLayouts(*index, bad, path, 2).code(), absl::StatusCode::kInvalidArgument);

  ASSERT_TRUE(WriteGpuLayouts(*index, {}, path, 2).ok());
  ASSERT_TRUE(StoredGpuLayouts::Open(path, *index).ok());
  // Written for another index: the counts differ.
  const absl::Status foreign = StoredGpuLayouts::Open(path, *other).status();
  EXPECT_EQ(foreign.code(), absl::StatusCode::kFailedPrecondition) << foreign;
  EXPECT_NE(foreign.message().find("tandem-index gpu-layouts"), std::string::npos) << foreign;

  // One flipped byte in the middle: the checksum catches it.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  std::string flipped = bytes;
  flipped[flipped.size() / 2] ^= 0x40;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << flipped;
  EXPECT_EQ(StoredGpuLayouts::Open(path, *index).status().code(), absl::StatusCode::kDataLoss);
  // Truncated.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 3);
  EXPECT_EQ(StoredGpuLayouts::Open(path, *index).status().code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tandem::gpu
