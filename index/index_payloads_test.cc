// The checks Index::Open runs on its files' contents, through Index::FromPayloads (the same checks
// over payloads already in memory) and VerifyFrame (the frame MappedFile::Open checks): a payload
// that passed its checksum may still be hostile, and what it claims must never make the reader
// leave it. Fuzzers can feed the same entry points arbitrary bytes.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/file_format.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::index {
namespace {

using ::testing::HasSubstr;

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// The payloads of a real index, each in its own string (heap data, 16-byte aligned).
class IndexPayloadsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CollectionSpec spec;
    spec.num_docs = 300;
    dir_ = tmp_.path() + "/idx";
    ASSERT_TRUE(testing::BuildIndex(testing::RandomDocuments(spec), dir_, "pfor").ok());
    manifest_ = Payload(kManifestFile, FileKind::kManifest);
    lexicon_ = Payload(kLexiconFile, FileKind::kLexicon);
    postings_ = Payload(kPostingsFile, FileKind::kPostings);
    documents_ = Payload(kDocumentsFile, FileKind::kDocuments);
  }

  std::string Payload(const char* name, FileKind kind) {
    const std::string file = ReadWholeFile(dir_ + "/" + name);
    absl::StatusOr<absl::string_view> payload = VerifyFrame(file, kind, name);
    EXPECT_TRUE(payload.ok()) << payload.status();
    return std::string(*payload);
  }

  IndexPayloads Views() const { return {manifest_, lexicon_, postings_, documents_}; }

  absl::Status Load() { return Index::FromPayloads(Views(), "mem").status(); }

  // Overwrites 8 bytes of `payload` at `offset`.
  static void Put64(std::string* payload, size_t offset, uint64_t value) {
    std::memcpy(payload->data() + offset, &value, 8);
  }

  testing::TempDir tmp_;
  std::string dir_;
  std::string manifest_, lexicon_, postings_, documents_;
};

TEST_F(IndexPayloadsTest, FromPayloadsReadsWhatOpenReads) {
  auto opened = Index::Open(dir_);
  ASSERT_TRUE(opened.ok()) << opened.status();
  auto loaded = Index::FromPayloads(Views(), "mem", {.verify_lists = true});
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ((*loaded)->manifest().ToJson(), (*opened)->manifest().ToJson());
  EXPECT_EQ((*loaded)->num_terms(), (*opened)->num_terms());
  EXPECT_EQ((*loaded)->external_id(299), "doc299");
  EXPECT_EQ((*loaded)->index_bytes(), 0u);
  auto from_memory = testing::DecodeAllLists(**loaded);
  auto from_files = testing::DecodeAllLists(**opened);
  ASSERT_TRUE(from_memory.ok() && from_files.ok());
  EXPECT_EQ(*from_memory, *from_files);
}

TEST_F(IndexPayloadsTest, FromPayloadsNamesTheFileAndWantsAlignment) {
  lexicon_.resize(lexicon_.size() - 8);
  const absl::Status truncated = Load();
  EXPECT_EQ(truncated.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(truncated.message()), HasSubstr("mem/lexicon.bin"));

  const std::string shifted = " " + documents_;
  IndexPayloads views = Views();
  views.documents = absl::string_view(shifted).substr(1);
  EXPECT_EQ(Index::FromPayloads(views, "mem").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(IndexPayloadsTest, VerifyFrameChecksKindAndChecksum) {
  std::string file = ReadWholeFile(dir_ + "/" + kLexiconFile);
  EXPECT_THAT(std::string(VerifyFrame(file, FileKind::kPostings, "x").status().message()),
              HasSubstr("wrong kind"));
  file[40] ^= 1;
  const absl::Status corrupted = VerifyFrame(file, FileKind::kLexicon, "x").status();
  EXPECT_EQ(corrupted.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(corrupted.message()), HasSubstr("checksum"));
  EXPECT_EQ(
      VerifyFrame(absl::string_view(file).substr(0, 47), FileKind::kLexicon, "x").status().code(),
      absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace tandem::index
