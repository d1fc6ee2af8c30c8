#include "index_builder/index_export.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::index_builder {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

// Little-endian uint32s, as PISA reads them.
std::string U32s(const std::vector<uint32_t>& values) {
  std::string out;
  for (uint32_t v : values) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  return out;
}

TEST(ExportPisaTest, WritesPisasBinaryCollectionByteForByte) {
  testing::TempDir tmp;
  // Lists: a -> {0: 2, 2: 1}, b -> {0: 1, 1: 1}, c -> {2: 1}; lengths 3, 1, 2.
  ASSERT_TRUE(
      testing::BuildIndex({{"a", "b", "a"}, {"b"}, {"c", "a"}}, tmp.path() + "/idx", "pfor").ok());
  auto idx = index::Index::Open(tmp.path() + "/idx");
  ASSERT_TRUE(idx.ok()) << idx.status();
  const std::string base = tmp.path() + "/out/tiny";
  std::filesystem::create_directory(tmp.path() + "/out");
  ASSERT_TRUE(ExportPisa(**idx, base).ok());

  EXPECT_EQ(ReadFile(base + ".docs"), U32s({1, 3, /*a*/ 2, 0, 2, /*b*/ 2, 0, 1, /*c*/ 1, 2}));
  EXPECT_EQ(ReadFile(base + ".freqs"), U32s({/*a*/ 2, 2, 1, /*b*/ 2, 1, 1, /*c*/ 1, 1}));
  EXPECT_EQ(ReadFile(base + ".sizes"), U32s({3, 3, 1, 2}));
  EXPECT_EQ(ReadFile(base + ".terms"), "a\nb\nc\n");
  EXPECT_EQ(ReadFile(base + ".documents"), "doc0\ndoc1\ndoc2\n");
  // Only the five files: no temporary left behind.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(tmp.path() + "/out"),
                          std::filesystem::directory_iterator()),
            5);
}

TEST(ExportPisaTest, EveryListOfARandomIndexIsWritten) {
  testing::CollectionSpec spec;
  spec.num_docs = 700;  // lists longer than a block
  testing::TempDir tmp;
  ASSERT_TRUE(
      testing::BuildIndex(testing::RandomDocuments(spec), tmp.path() + "/idx", "rice").ok());
  auto idx = index::Index::Open(tmp.path() + "/idx");
  ASSERT_TRUE(idx.ok());
  auto lists = testing::DecodeAllLists(**idx);
  ASSERT_TRUE(lists.ok());
  ASSERT_TRUE(ExportPisa(**idx, tmp.path() + "/c").ok());
  std::vector<uint32_t> docs = {1, 700}, freqs;
  std::string terms;
  for (const auto& [term, list] : *lists) {
    docs.push_back(static_cast<uint32_t>(list.first.size()));
    docs.insert(docs.end(), list.first.begin(), list.first.end());
    freqs.push_back(static_cast<uint32_t>(list.second.size()));
    freqs.insert(freqs.end(), list.second.begin(), list.second.end());
    terms += term + "\n";
  }
  EXPECT_EQ(ReadFile(tmp.path() + "/c.docs"), U32s(docs));
  EXPECT_EQ(ReadFile(tmp.path() + "/c.freqs"), U32s(freqs));
  EXPECT_EQ(ReadFile(tmp.path() + "/c.terms"), terms);
}

}  // namespace
}  // namespace tandem::index_builder
