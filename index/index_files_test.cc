// The manifest binds the index's files (FORMAT.md, "Files"): a file deleted, added or taken from
// another build fails Index::Open naming it, and a manifest written before manifests named their
// files still opens an index that has no file only the manifest could vouch for.
#include <filesystem>
#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "filter/bitmap.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/test_collection.h"

namespace tandem::index {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

constexpr uint32_t kDocs = 200;

// Attributes of kDocs documents: a keyword `label` whose value is docID mod `modulus`.
std::unique_ptr<filter::AttributeIndex> Labels(uint32_t modulus) {
  std::vector<uint32_t> label;
  for (uint32_t d = 0; d < kDocs; ++d) label.push_back(d % modulus);
  filter::AttributeField l;
  l.name = "label";
  for (uint32_t v = 0; v < modulus; ++v) l.values.push_back(absl::StrCat("v", v));
  l.columns = *filter::BuildBitmaps(filter::BitmapCodec::kPlwah, kDocs, label);
  std::vector<filter::AttributeField> fields;
  fields.push_back(std::move(l));
  return *filter::AttributeIndex::Create(kDocs, filter::BitmapCodec::kPlwah, std::move(fields));
}

class IndexFilesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CollectionSpec spec;
    spec.num_docs = kDocs;
    docs_ = testing::RandomDocuments(spec);
    with_ = tmp_.path() + "/with";
    other_ = tmp_.path() + "/other";
    plain_ = tmp_.path() + "/plain";
    ASSERT_TRUE(testing::BuildIndex(docs_, with_, "pfor", Labels(3)).ok());
    ASSERT_TRUE(testing::BuildIndex(docs_, other_, "pfor", Labels(4)).ok());
    ASSERT_TRUE(testing::BuildIndex(docs_, plain_, "pfor").ok());
  }

  static IndexManifest ReadManifest(const std::string& dir) {
    auto file = MappedFile::Open(dir + "/" + kManifestFile, FileKind::kManifest);
    EXPECT_TRUE(file.ok()) << file.status();
    auto manifest = IndexManifest::FromJson(file->payload());
    EXPECT_TRUE(manifest.ok()) << manifest.status();
    return *manifest;
  }
  static void WriteManifest(const std::string& dir, const std::string& json) {
    auto f = FileWriter::Create(dir + "/" + kManifestFile, FileKind::kManifest);
    ASSERT_TRUE(f.ok());
    ASSERT_TRUE((*f)->Append(json).ok());
    ASSERT_TRUE((*f)->Finish().ok());
  }
  // The manifest of `dir` as an index written before manifests named their files.
  static void MakeLegacy(const std::string& dir) {
    IndexManifest m = ReadManifest(dir);
    m.files.reset();
    WriteManifest(dir, m.ToJson());
  }

  static void ExpectError(const std::string& dir, absl::StatusCode code,
                          const std::string& message) {
    auto idx = Index::Open(dir);
    ASSERT_FALSE(idx.ok());
    EXPECT_EQ(idx.status().code(), code) << idx.status();
    EXPECT_THAT(std::string(idx.status().message()), HasSubstr(message));
  }

  testing::TempDir tmp_;
  std::vector<std::vector<std::string>> docs_;
  std::string with_, other_, plain_;
};

TEST_F(IndexFilesTest, DeletedAttributesFailOpenNamingTheFile) {
  fs::remove(with_ + "/" + kAttributesFile);
  ExpectError(with_, absl::StatusCode::kNotFound,
              absl::StrCat("index file '", with_, "/attributes.bin' is missing: ", with_,
                           "/manifest.bin names it"));
}

TEST_F(IndexFilesTest, AttributesOfAnotherBuildAreRefused) {
  fs::copy_file(other_ + "/" + kAttributesFile, with_ + "/" + kAttributesFile,
                fs::copy_options::overwrite_existing);
  ExpectError(with_, absl::StatusCode::kDataLoss,
              absl::StrCat("index file '", with_, "/attributes.bin' is not the one ", with_,
                           "/manifest.bin names"));
}

TEST_F(IndexFilesTest, AnyNamedFileOfAnotherBuildIsRefused) {
  // Same documents, other attributes: every other file is byte-equal but for the manifest's id,
  // so take the lists of an index of other documents.
  testing::CollectionSpec spec;
  spec.num_docs = kDocs;
  spec.seed = 99;
  const std::string third = tmp_.path() + "/third";
  ASSERT_TRUE(testing::BuildIndex(testing::RandomDocuments(spec), third, "pfor").ok());
  for (const char* name : {kLexiconFile, kPostingsFile, kDocumentsFile}) {
    SCOPED_TRACE(name);
    const std::string copy = tmp_.path() + "/copy-" + name;
    fs::copy(plain_, copy);
    fs::copy_file(third + "/" + name, copy + "/" + name, fs::copy_options::overwrite_existing);
    ExpectError(copy, absl::StatusCode::kDataLoss, absl::StrCat(name, "' is not the one"));
  }
}

TEST_F(IndexFilesTest, AnUnnamedAttributesFileIsRefused) {
  fs::copy_file(with_ + "/" + kAttributesFile, plain_ + "/" + kAttributesFile);
  ExpectError(plain_, absl::StatusCode::kDataLoss,
              absl::StrCat("index file '", plain_, "/attributes.bin' is not named by ", plain_,
                           "/manifest.bin"));
}

TEST_F(IndexFilesTest, ManifestNamingAnUnknownFileOrABadChecksumIsRefused) {
  IndexManifest m = ReadManifest(plain_);
  (*m.files)["extra.bin"] = ManifestFile{.bytes = 48, .checksum = 1};
  WriteManifest(plain_, m.ToJson());
  ExpectError(plain_, absl::StatusCode::kDataLoss, "names a file 'extra.bin'");

  m.files->erase("extra.bin");
  std::string json = m.ToJson();
  const size_t at = json.find("\"xxh3\": \"");
  ASSERT_NE(at, std::string::npos);
  json.replace(at + 9, 16, "not-hex-digits!!");
  WriteManifest(plain_, json);
  ExpectError(plain_, absl::StatusCode::kDataLoss, "manifest field \"xxh3\" is not 16 hex digits");
}

TEST_F(IndexFilesTest, LegacyManifestWithAttributesIsRefusedWithTheWayOut) {
  MakeLegacy(with_);
  ExpectError(with_, absl::StatusCode::kFailedPrecondition,
              "was written before manifests named their files; rebuild");
  fs::remove(with_ + "/" + kAttributesFile);
  auto idx = Index::Open(with_);
  ASSERT_TRUE(idx.ok()) << idx.status();
  EXPECT_EQ((*idx)->attributes(), nullptr);
}

TEST_F(IndexFilesTest, LegacyManifestWithoutOptionalFilesOpens) {
  MakeLegacy(plain_);
  auto idx = Index::Open(plain_, {.verify_lists = true});
  ASSERT_TRUE(idx.ok()) << idx.status();
  EXPECT_FALSE((*idx)->manifest().files.has_value());
  EXPECT_EQ((*idx)->num_docs(), kDocs);
}

TEST_F(IndexFilesTest, ManifestNamesEveryFileWithItsSizeAndChecksum) {
  for (const std::string& dir : {with_, plain_}) {
    auto idx = Index::Open(dir);
    ASSERT_TRUE(idx.ok()) << idx.status();
    const auto& files = (*idx)->manifest().files;
    ASSERT_TRUE(files.has_value());
    std::set<std::string> on_disk, named;
    for (const auto& entry : fs::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name != kManifestFile) on_disk.insert(name);
    }
    for (const auto& [name, file] : *files) {
      named.insert(name);
      EXPECT_EQ(file.bytes, fs::file_size(dir + "/" + name)) << name;
    }
    EXPECT_EQ(named, on_disk);
    // The JSON keeps every digit of the checksums.
    auto again = IndexManifest::FromJson((*idx)->manifest().ToJson());
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(again->files, files);
  }
}

}  // namespace
}  // namespace tandem::index
