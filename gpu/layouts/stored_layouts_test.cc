// gpu_layouts.bin (gpu/stored_layouts.h): every term of real indexes, in every index codec, reads
// back exactly as TranscodeList builds it; a missing, damaged or foreign file is refused with a
// clear status. Host only: no GPU needed.
#include "gpu/layouts/stored_layouts.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
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

  EXPECT_FALSE(WriteGpuLayouts(*index, {}, dir.path() + "/missing/dir/layouts.bin", 2).ok());
  ASSERT_TRUE(WriteGpuLayouts(*index, {}, path, 2).ok());
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
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

// A list's images as StoredList views over vectors the test may damage.
struct OwnedList {
  std::vector<uint32_t> docid_words, freq_words;
  StoredList list;
};

OwnedList Own(const GpuPostingList& transcoded) {
  OwnedList o;
  if (const auto* p = std::get_if<PForImage>(&transcoded.docids)) {
    o.list.docid_desc = p->desc;
    o.docid_words = p->words;
  } else {
    o.list.docid_desc = std::get<RiceImage>(transcoded.docids).desc;
    o.docid_words = std::get<RiceImage>(transcoded.docids).words;
  }
  o.list.freq_desc = transcoded.freqs.desc;
  o.freq_words = transcoded.freqs.words;
  o.list.docid_words = o.docid_words;
  o.list.freq_words = o.freq_words;
  return o;
}

TEST(CheckStoredListTest, DamagedBlockArraysAndBasesAreDataLoss) {
  tandem::testing::TempDir dir;
  for (const std::string codec : {"pfor", "rice"}) {
    auto index = BuildAndOpen(dir.path() + "/" + codec, 20000, codec);
    ASSERT_NE(index, nullptr);
    // The most frequent term: several blocks, exceptions in every one.
    uint64_t longest = 0;
    for (uint64_t t = 1; t < index->num_terms(); ++t) {
      if (index->term_at(t).df > index->term_at(longest).df) longest = t;
    }
    auto view = index->postings(index->term_at(longest));
    ASSERT_TRUE(view.ok());
    TranscodeOptions options;
    options.codec = DefaultGpuCodec(index->codec());
    options.pfor_block_size = 128;
    auto transcoded = TranscodeList(*view, index->codec(), options);
    ASSERT_TRUE(transcoded.ok()) << transcoded.status();
    const uint32_t num_docs = index->num_docs();
    EXPECT_TRUE(CheckStoredList(Own(*transcoded).list, num_docs).ok());
    // The collection is smaller than the list's docIDs.
    EXPECT_EQ(CheckStoredList(Own(*transcoded).list, 10).code(), absl::StatusCode::kDataLoss);
    auto damaged = [&](auto damage) {
      OwnedList o = Own(*transcoded);
      damage(o);
      o.list.docid_words = o.docid_words;
      o.list.freq_words = o.freq_words;
      return CheckStoredList(o.list, num_docs).code();
    };
    if (codec == "pfor") {
      const PForDesc d = std::get<PForImage>(transcoded->docids).desc;
      ASSERT_GT(d.num_blocks, 2u);
      ASSERT_GT(d.num_exceptions, 0u);
      EXPECT_EQ(damaged([&](OwnedList& o) { o.docid_words[d.exc_begin + 1] = 0xffffff; }),
                absl::StatusCode::kDataLoss);
      EXPECT_EQ(damaged([&](OwnedList& o) { o.docid_words[d.bases + 2] = 0; }),
                absl::StatusCode::kDataLoss);
      EXPECT_EQ(damaged([&](OwnedList& o) { o.docid_words[d.sub_begin + d.num_blocks] += 1; }),
                absl::StatusCode::kDataLoss);
    } else {
      const RiceDesc d = std::get<RiceImage>(transcoded->docids).desc;
      EXPECT_EQ(damaged([&](OwnedList& o) { o.docid_words[d.unary_bases + 1] = 0xffffff; }),
                absl::StatusCode::kDataLoss);
      EXPECT_EQ(damaged([&](OwnedList& o) { o.docid_words[d.bases + d.num_blocks] = num_docs; }),
                absl::StatusCode::kDataLoss);
    }
    const FreqDesc f = transcoded->freqs.desc;
    EXPECT_EQ(damaged([&](OwnedList& o) { o.freq_words[f.exc_begin + f.num_blocks] += 1; }),
              absl::StatusCode::kDataLoss);
  }
}

}  // namespace
}  // namespace tandem::gpu
