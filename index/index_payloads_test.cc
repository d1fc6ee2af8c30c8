// The checks Index::Open runs on its files' contents, through Index::FromPayloads (the same checks
// over payloads already in memory) and VerifyFrame (the frame MappedFile::Open checks): a payload
// that passed its checksum may still be hostile, and what it claims must never make the reader
// leave it. The index fuzzers (fuzz/index_reader_fuzzer.cc, fuzz/index_frame_fuzzer.cc) feed the
// same entry points arbitrary bytes; the cases here are what they and reviews found.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/file_format.h"
#include "index/index.h"
#include "index/varint.h"
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

  IndexPayloads Views() const { return {manifest_, lexicon_, postings_, documents_, {}, {}}; }

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

// A manifest number that nlohmann's get<> would convert by a plain cast: a float beyond the
// field's range (undefined behavior), a negative or a too large integer (a wrong value).
TEST_F(IndexPayloadsTest, ManifestNumbersOutOfRangeAreDataLoss) {
  const std::string original = manifest_;
  for (const char* bad : {"2.03e35", "-1", "4294967296", "1.5"}) {
    manifest_ = original;
    const size_t at = manifest_.find("\"num_docs\": ");
    ASSERT_NE(at, std::string::npos);
    const size_t value = at + std::strlen("\"num_docs\": ");
    manifest_.replace(value, manifest_.find_first_of(",\n}", value) - value, bad);
    const absl::Status s = Load();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << bad;
    EXPECT_THAT(std::string(s.message()), HasSubstr("num_docs")) << bad;
  }
  manifest_ = original;
  const size_t k1 = manifest_.find("\"k1\": ");
  ASSERT_NE(k1, std::string::npos);
  const size_t value = k1 + std::strlen("\"k1\": ");
  manifest_.replace(value, manifest_.find_first_of(",\n}", value) - value, "1e39");
  EXPECT_EQ(Load().code(), absl::StatusCode::kDataLoss);
}

// The lexicon's entry-bytes field chosen so that header + samples + entries wraps around 2^64 to
// the payload's size, which ends inside the samples: the entries would start past the payload.
TEST_F(IndexPayloadsTest, LexiconPoolSizeThatWrapsIsDataLoss) {
  uint64_t samples;
  std::memcpy(&samples, lexicon_.data() + 8, 8);
  lexicon_.resize(24 + 16 * samples - 8);
  Put64(&lexicon_, 16, ~uint64_t{0} - 7);  // 24 + 16 * samples + (2^64 - 8) = the size
  const absl::Status s = Load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("lexicon.bin"));
}

// Changed bytes anywhere in the packed lexicon or in the postings are refused (DATA_LOSS at load
// or when the lists are verified) or leave an index whose every lookup and list reads inside the
// payloads; none makes the reader leave them.
TEST_F(IndexPayloadsTest, ChangedLexiconAndPostingBytesAreDataLossOrHarmless) {
  for (std::string* payload : {&lexicon_, &postings_}) {
    const std::string intact = *payload;
    const size_t stride = std::max<size_t>(1, intact.size() / 1500);
    for (size_t at = 0; at < intact.size(); at += stride) {
      for (const uint8_t flip : {0x01, 0x80}) {
        *payload = intact;
        (*payload)[at] = static_cast<char>((*payload)[at] ^ flip);
        absl::StatusOr<std::unique_ptr<Index>> index =
            Index::FromPayloads(Views(), "mem", {.verify_lists = true});
        if (!index.ok()) {
          ASSERT_EQ(index.status().code(), absl::StatusCode::kDataLoss) << index.status();
          continue;
        }
        for (uint64_t t = 0; t < (*index)->num_terms(); ++t) {
          const TermInfo term = (*index)->term_at(t);
          const std::optional<TermInfo> found = (*index)->Lookup(term.term);
          ASSERT_TRUE(found.has_value());
          ASSERT_EQ(found->list_offset, term.list_offset);
          ASSERT_TRUE((*index)->postings(term).ok());
        }
      }
    }
    *payload = intact;
  }
}

// An entry that takes fewer bytes from the term before it than the two share decodes to the same
// term, but lookups compare entries as stored and rely on the shared prefix being the longest:
// such a lexicon is DATA_LOSS at load, never an index whose lookups miss terms it holds.
TEST_F(IndexPayloadsTest, FrontCodingThatSharesLessThanItCouldIsDataLoss) {
  uint64_t header[3];  // terms, samples, entry bytes
  std::memcpy(header, lexicon_.data(), sizeof(header));
  const size_t entries_at = sizeof(header) + 16 * header[1];
  const auto* const begin = reinterpret_cast<const uint8_t*>(lexicon_.data());
  const uint8_t* const end = begin + lexicon_.size();
  const uint8_t* p = begin + entries_at;
  // Walks the first block to an entry that shares a prefix of at most 127 bytes and a suffix of
  // at most 126, so that both varints keep their single byte when the prefix shrinks by one.
  std::string previous;
  size_t rewrite_at = 0;
  uint64_t shared = 0, length = 0;
  for (uint64_t i = 0; i < std::min<uint64_t>(header[0], kLexiconBlock); ++i) {
    const uint8_t* const at = p;
    shared = 0;
    if (i > 0) p = GetVarint(p, end, &shared);
    p = GetVarint(p, end, &length);
    ASSERT_NE(p, nullptr);
    const std::string term =
        previous.substr(0, shared) + std::string(reinterpret_cast<const char*>(p), length);
    p += length;
    uint64_t field = 0;
    p = GetVarint(GetVarint(p, end, &field), end, &field);  // df, cf - df
    p = GetVarint(p + 4, end, &field);                      // max score, list bytes
    if (i > 0 && shared >= 1 && shared <= 127 && length <= 126) {
      rewrite_at = at - begin;
      break;
    }
    previous = term;
  }
  ASSERT_GT(rewrite_at, 0u) << "no entry of the first block shares a prefix";
  // [shared][length][suffix] becomes [shared - 1][length + 1][previous[shared - 1] suffix].
  lexicon_[rewrite_at] = static_cast<char>(shared - 1);
  lexicon_[rewrite_at + 1] = static_cast<char>(length + 1);
  lexicon_.insert(rewrite_at + 2, 1, previous[shared - 1]);
  Put64(&lexicon_, 16, header[2] + 1);
  for (uint64_t s = 1; s < header[1]; ++s) {  // later blocks start a byte further on
    uint64_t offset;
    std::memcpy(&offset, lexicon_.data() + 24 + 16 * s, 8);
    Put64(&lexicon_, 24 + 16 * s, offset + 1);
  }
  const absl::Status s = Load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("longest prefix"));
}

// The writer stores 4-byte document offsets below 4 GiB of pools and leaves out the field offsets
// when no document has stored fields; the same table with 8-byte offsets reads the same.
TEST_F(IndexPayloadsTest, DocumentOffsetsOfEitherWidthReadTheSame) {
  uint64_t header[4];
  std::memcpy(header, documents_.data(), sizeof(header));
  ASSERT_EQ(header[3], 4u);
  const uint64_t n = header[0];
  const auto align8 = [](uint64_t x) { return (x + 7) & ~uint64_t{7}; };
  const uint64_t ids_at = 32 + align8(4 * n);
  const uint64_t narrow_table = align8(4 * (n + 1));
  const uint64_t tables = header[2] > 0 ? 2 : 1;
  std::string wide = documents_.substr(0, ids_at);
  for (uint64_t t = 0; t < tables; ++t) {
    for (uint64_t i = 0; i <= n; ++i) {
      uint32_t v;
      std::memcpy(&v, documents_.data() + ids_at + t * narrow_table + 4 * i, 4);
      const uint64_t v64 = v;
      wide.append(reinterpret_cast<const char*>(&v64), 8);
    }
  }
  wide += documents_.substr(ids_at + tables * narrow_table);
  Put64(&wide, 24, 8);
  const std::string narrow = documents_;
  documents_ = wide;
  auto loaded = Index::FromPayloads(Views(), "mem");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto opened = Index::Open(dir_);
  ASSERT_TRUE(opened.ok());
  for (uint32_t d = 0; d < (*opened)->num_docs(); ++d) {
    ASSERT_EQ((*loaded)->external_id(d), (*opened)->external_id(d));
    ASSERT_EQ((*loaded)->stored_fields(d), (*opened)->stored_fields(d));
  }
  documents_ = narrow;
}

// A document table whose offset width is neither 4 nor 8 is DATA_LOSS.
TEST_F(IndexPayloadsTest, DocumentOffsetWidthOtherThan4Or8IsDataLoss) {
  for (const uint64_t width : {0, 2, 5, 16}) {
    Put64(&documents_, 24, width);
    const absl::Status s = Load();
    EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  }
}

// The document table's id pool size chosen so that the offsets of the pools wrap around 2^64 and
// add up to a 32-byte payload, while the manifest and the table claim a million documents: their
// lengths and offsets would be read far past the payload.
TEST_F(IndexPayloadsTest, DocumentPoolSizeThatWrapsIsDataLoss) {
  constexpr uint64_t kDocs = 1000000;
  const size_t at = manifest_.find("\"num_docs\": 300");
  ASSERT_NE(at, std::string::npos);
  manifest_.replace(at, std::strlen("\"num_docs\": 300"), "\"num_docs\": 1000000");
  documents_.assign(32, '\0');
  const uint64_t id_pool_at = 32 + 4 * kDocs + 2 * 8 * (kDocs + 1);
  Put64(&documents_, 0, kDocs);
  Put64(&documents_, 24, 8);              // 8-byte offsets
  Put64(&documents_, 8, 0 - id_pool_at);  // the field pool then starts at 0 (mod 2^64)
  Put64(&documents_, 16, 32);             // and ends at 32, the payload's size
  const absl::Status s = Load();
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_THAT(std::string(s.message()), HasSubstr("documents.bin"));
}

}  // namespace
}  // namespace tandem::index
