#include "index/index.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index_writer.h"
#include "tests/test_collection.h"

namespace tandem::index {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class IndexTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::CollectionSpec spec;
    spec.num_docs = 500;
    docs_ = testing::RandomDocuments(spec);
    dir_ = tmp_.path() + "/idx";
    ASSERT_TRUE(testing::BuildIndex(docs_, dir_, "pfor").ok());
  }

  std::string File(const char* name) { return dir_ + "/" + name; }

  void FlipByte(const std::string& path, uint64_t offset) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c;
    f.read(&c, 1);
    c ^= 0x5a;
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
  }

  testing::TempDir tmp_;
  std::string dir_;
  std::vector<std::vector<std::string>> docs_;
};

TEST_F(IndexTest, RoundTrip) {
  auto index = Index::Open(dir_, {.verify_lists = true});
  ASSERT_TRUE(index.ok()) << index.status();
  const Index& idx = **index;
  EXPECT_EQ(idx.num_docs(), 500u);
  uint64_t total = 0;
  for (const auto& d : docs_) total += d.size();
  EXPECT_EQ(idx.stats().total_doc_length, total);
  EXPECT_FLOAT_EQ(idx.avg_doc_length(), static_cast<float>(total / 500.0));
  EXPECT_EQ(idx.external_id(7), "doc7");
  EXPECT_EQ(idx.doc_length(7), docs_[7].size());
  // t0's list equals the documents containing t0, with their counts.
  auto t0 = idx.Lookup("t0");
  ASSERT_TRUE(t0.has_value());
  auto list = idx.postings(*t0);
  ASSERT_TRUE(list.ok());
  std::vector<uint32_t> want_docs, want_freqs;
  for (uint32_t d = 0; d < docs_.size(); ++d) {
    uint32_t f = static_cast<uint32_t>(std::count(docs_[d].begin(), docs_[d].end(), "t0"));
    if (f > 0) {
      want_docs.push_back(d);
      want_freqs.push_back(f);
    }
  }
  std::vector<uint32_t> got_docs, got_freqs;
  uint32_t buf[kBlockSize], fbuf[kBlockSize];
  for (uint32_t b = 0; b < list->num_blocks(); ++b) {
    ASSERT_TRUE(list->DecodeDocids(idx.codec(), b, buf).ok());
    ASSERT_TRUE(list->DecodeFreqs(idx.codec(), b, fbuf).ok());
    got_docs.insert(got_docs.end(), buf, buf + list->block_postings(b));
    got_freqs.insert(got_freqs.end(), fbuf, fbuf + list->block_postings(b));
  }
  EXPECT_EQ(got_docs, want_docs);
  EXPECT_EQ(got_freqs, want_freqs);
  EXPECT_FALSE(idx.Lookup("nonexistent").has_value());
  EXPECT_FALSE(idx.Lookup("").has_value());
  EXPECT_EQ(idx.manifest().analyzer, AnalyzerConfig{});
  EXPECT_EQ(idx.manifest().index_id.size(), 32u);
}

// The packed lexicon: every term is found at its ordinal with the list term_at gives, across block
// boundaries and front-coded entries; terms between, before and after the stored ones are not.
TEST_F(IndexTest, LexiconLookupsAcrossBlocks) {
  auto index = Index::Open(dir_);
  ASSERT_TRUE(index.ok()) << index.status();
  const Index& idx = **index;
  ASSERT_GT(idx.num_terms(), 3 * kLexiconBlock);
  uint64_t list_end = 0;
  for (uint64_t t = 0; t < idx.num_terms(); ++t) {
    const TermInfo info = idx.term_at(t);
    EXPECT_EQ(info.ordinal, t);
    EXPECT_EQ(info.num_blocks, (info.df + kBlockSize - 1) / kBlockSize);
    // Lists follow one another; only a full-form list is aligned.
    EXPECT_GE(info.list_offset, list_end);
    EXPECT_LT(info.list_offset, list_end + (info.df > kBlockSize ? kFullListAlignment : 1));
    list_end = info.list_offset + info.list_bytes;
    const std::optional<TermInfo> found = idx.Lookup(info.term);
    ASSERT_TRUE(found.has_value()) << info.term;
    EXPECT_EQ(found->ordinal, t);
    EXPECT_EQ(found->term, info.term);
    EXPECT_EQ(found->list_offset, info.list_offset);
    EXPECT_EQ(found->list_bytes, info.list_bytes);
    EXPECT_EQ(found->cf, info.cf);
    EXPECT_EQ(found->max_score, info.max_score);
    EXPECT_FALSE(idx.Lookup(info.term + std::string(1, '\0')).has_value());
    EXPECT_FALSE(idx.Lookup(info.term.substr(0, info.term.size() - 1) + "\x01").has_value());
    ASSERT_TRUE(idx.postings(info).ok());
  }
  EXPECT_FALSE(idx.Lookup("").has_value());
  EXPECT_FALSE(idx.Lookup("\xff\xff").has_value());
}

// Terms that share their first 8 bytes across many lexicon blocks (the lookup's integer keys
// tie there and the terms themselves decide), shorter terms, a term that is another's prefix,
// and bytes above 0x7f; every term is found and every probe between them is not.
// Random terms over a small alphabet (so blocks are full of shared prefixes, and terms are
// prefixes of others), each in the documents of its own choosing with its own counts: every term
// is found with its df, cf and its own list (the list offsets are summed along the block's scan),
// and random probes are found exactly when they are terms.
TEST_F(IndexTest, LexiconLookupsOfRandomTermsFindTheirOwnLists) {
  std::mt19937 rng(7);
  const std::string alphabet = "ab\xc3\xa9\xff";
  auto random_term = [&] {
    std::string t(1 + rng() % 9, 'a');
    for (char& c : t) c = alphabet[rng() % alphabet.size()];
    return t;
  };
  std::set<std::string> terms;
  while (terms.size() < 1500) terms.insert(random_term());
  const std::vector<std::string> term_list(terms.begin(), terms.end());
  std::vector<std::vector<std::string>> docs(400);
  std::map<std::string, std::vector<std::pair<uint32_t, uint32_t>>> want;  // (doc, tf)
  for (const std::string& t : term_list) {
    // Mostly one document, some terms long enough lists to take full blocks.
    const uint32_t df = rng() % 20 == 0 ? 150 + rng() % 250 : 1 + rng() % 3;
    std::set<uint32_t> chosen;
    while (chosen.size() < df) chosen.insert(rng() % docs.size());
    for (uint32_t d : chosen) {
      const uint32_t tf = 1 + rng() % 3;
      for (uint32_t j = 0; j < tf; ++j) docs[d].push_back(t);
      want[t].emplace_back(d, tf);
    }
  }
  for (auto& d : docs) d.push_back("filler");  // no document is empty
  want["filler"];
  ASSERT_TRUE(testing::BuildIndex(docs, tmp_.path() + "/random", "pfor").ok());
  auto index = Index::Open(tmp_.path() + "/random", {.verify_lists = true});
  ASSERT_TRUE(index.ok()) << index.status();
  const Index& idx = **index;
  ASSERT_EQ(idx.num_terms(), want.size());
  for (const auto& [t, postings] : want) {
    const std::optional<TermInfo> found = idx.Lookup(t);
    ASSERT_TRUE(found.has_value()) << t;
    EXPECT_EQ(found->term, t);
    EXPECT_EQ(idx.term_at(found->ordinal).term, t);
    EXPECT_EQ(idx.term_at(found->ordinal).list_offset, found->list_offset) << t;
    if (t == "filler") continue;
    ASSERT_EQ(found->df, postings.size()) << t;
    uint64_t cf = 0;
    for (const auto& [d, tf] : postings) cf += tf;
    EXPECT_EQ(found->cf, cf) << t;
    absl::StatusOr<PostingListView> list = idx.postings(*found);
    ASSERT_TRUE(list.ok()) << list.status();
    std::vector<std::pair<uint32_t, uint32_t>> got;
    uint32_t buf[kBlockSize], fbuf[kBlockSize];
    for (uint32_t b = 0; b < list->num_blocks(); ++b) {
      ASSERT_TRUE(list->DecodeDocids(idx.codec(), b, buf).ok());
      ASSERT_TRUE(list->DecodeFreqs(idx.codec(), b, fbuf).ok());
      for (uint32_t i = 0; i < list->block_postings(b); ++i) got.emplace_back(buf[i], fbuf[i]);
    }
    EXPECT_EQ(got, postings) << t;
  }
  for (int i = 0; i < 20000; ++i) {
    std::string probe = random_term();
    if (i % 3 == 0) probe = term_list[rng() % term_list.size()] + random_term().substr(0, 1);
    if (i % 3 == 1) probe = term_list[rng() % term_list.size()].substr(0, 1 + rng() % 4);
    EXPECT_EQ(idx.Lookup(probe).has_value(), want.count(probe) > 0) << "'" << probe << "'";
  }
}

TEST_F(IndexTest, LexiconLookupsWithSharedPrefixes) {
  std::set<std::string> terms = {"a",
                                 "inter",
                                 "interna",
                                 "internal",
                                 "internals",
                                 "internat",
                                 "internationalization",
                                 "internationalize",
                                 "internationally",
                                 "\xc3\xa9lan",
                                 "\xc3\xa9l\xc3\xa8ve",
                                 "\xff\xfe",
                                 "z"};
  for (int i = 0; i < 5 * static_cast<int>(kLexiconBlock); ++i) {
    terms.insert(absl::StrCat("prefix00", i));
    terms.insert(absl::StrCat("prefix00", i, "x"));
    terms.insert(absl::StrCat("prefix0", i));
  }
  std::vector<std::vector<std::string>> docs;
  for (const std::string& t : terms) docs.push_back({t, "common"});
  terms.insert("common");
  ASSERT_TRUE(testing::BuildIndex(docs, tmp_.path() + "/prefixes", "pfor").ok());
  auto index = Index::Open(tmp_.path() + "/prefixes");
  ASSERT_TRUE(index.ok()) << index.status();
  const Index& idx = **index;
  ASSERT_EQ(idx.num_terms(), terms.size());
  std::set<std::string> probes = {"",          "\x01",        "prefix", "prefix00", "prefix000",
                                  "prefix00~", "internation", "\xff",   "\xff\xff", "zz"};
  for (const std::string& t : terms) {
    const std::optional<TermInfo> found = idx.Lookup(t);
    ASSERT_TRUE(found.has_value()) << t;
    EXPECT_EQ(found->term, t);
    EXPECT_EQ(idx.term_at(found->ordinal).term, t);
    probes.insert(t + std::string(1, '\0'));
    probes.insert(t.substr(0, t.size() - 1));
    std::string before = t, after = t;
    before.back() = static_cast<char>(static_cast<uint8_t>(before.back()) - 1);
    after.back() = static_cast<char>(static_cast<uint8_t>(after.back()) + 1);
    probes.insert(before);
    probes.insert(after);
  }
  for (const std::string& p : probes) {
    EXPECT_EQ(idx.Lookup(p).has_value(), terms.count(p) > 0) << "'" << p << "'";
  }
}

TEST_F(IndexTest, StoredFields) {
  IndexWriterOptions o;
  auto w = IndexWriter::Create(tmp_.path() + "/fields", o);
  ASSERT_TRUE(w.ok());
  std::vector<std::pair<std::string, std::string>> fields = {{"From", "a@b.c"},
                                                             {"Subject", "hi\nthere"}};
  ASSERT_TRUE((*w)->AddDocument("m1", 2, fields).ok());
  ASSERT_TRUE((*w)->AddDocument("m2", 1).ok());
  ASSERT_TRUE(
      (*w)->AddPostingList("hi", std::vector<uint32_t>{0, 1}, std::vector<uint32_t>{1, 1}).ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto idx = Index::Open(tmp_.path() + "/fields");
  ASSERT_TRUE(idx.ok()) << idx.status();
  auto f = (*idx)->stored_fields(0);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[1].first, "Subject");
  EXPECT_EQ(f[1].second, "hi\nthere");
  EXPECT_TRUE((*idx)->stored_fields(1).empty());
}

// Every file checked the same way, the postings mapped or copied into huge pages.
constexpr FileMemory kEveryMemory[] = {FileMemory::kMapped, FileMemory::kHugePages};

// The copy of the index in `dir` that a test may damage: its path.
std::string CopyIndexInto(const testing::TempDir& dir, const std::string& index) {
  const std::string copy = dir.path() + "/idx";
  fs::copy(index, copy);
  return copy;
}

// Opening the damaged index in `dir` fails as DATA_LOSS naming the damaged file, postings mapped
// or copied into huge pages.
void ExpectDataLossNaming(const std::string& dir, const char* name) {
  for (FileMemory memory : kEveryMemory) {
    auto idx = Index::Open(dir, {.postings_memory = memory});
    ASSERT_FALSE(idx.ok());
    EXPECT_EQ(idx.status().code(), absl::StatusCode::kDataLoss) << idx.status();
    EXPECT_THAT(std::string(idx.status().message()), HasSubstr(name));
  }
}

TEST_F(IndexTest, FlippedByteInAnyFileIsDetected) {
  for (const char* name : {kManifestFile, kLexiconFile, kPostingsFile, kDocumentsFile}) {
    testing::TempDir copy;
    const std::string d = CopyIndexInto(copy, dir_);
    const std::string path = d + "/" + name;
    const uint64_t size = fs::file_size(path);
    for (uint64_t offset : {uint64_t{40}, size / 2, size - 20}) {
      FlipByte(path, offset);
      SCOPED_TRACE(absl::StrCat(name, " offset ", offset));
      ExpectDataLossNaming(d, name);
      FlipByte(path, offset);  // restore
    }
    for (FileMemory memory : kEveryMemory) {
      EXPECT_TRUE(Index::Open(d, {.postings_memory = memory}).ok());
    }
  }
}

TEST_F(IndexTest, TruncatedFileIsDetected) {
  for (const char* name : {kLexiconFile, kPostingsFile, kDocumentsFile, kManifestFile}) {
    testing::TempDir copy;
    const std::string d = CopyIndexInto(copy, dir_);
    const std::string path = d + "/" + name;
    for (uint64_t size : {fs::file_size(path) - 1, uint64_t{47}, uint64_t{10}, uint64_t{0}}) {
      fs::resize_file(path, size);
      ExpectDataLossNaming(d, name);
    }
  }
}

// Postings copied into huge pages read exactly as mapped ones: every list, block by block.
TEST_F(IndexTest, PostingsInHugePagesReadAsMapped) {
  auto mapped = Index::Open(dir_);
  auto huge = Index::Open(dir_, {.verify_lists = true, .postings_memory = FileMemory::kHugePages});
  ASSERT_TRUE(mapped.ok()) << mapped.status();
  ASSERT_TRUE(huge.ok()) << huge.status();
  EXPECT_EQ((*mapped)->postings_memory(), FileMemory::kMapped);
  EXPECT_EQ((*huge)->postings_memory(), FileMemory::kHugePages);
  EXPECT_EQ((*huge)->index_bytes(), (*mapped)->index_bytes());
  // /proc/self/smaps finds both; how much of the copy is in huge pages is the kernel's choice.
  EXPECT_TRUE((*mapped)->postings_huge_page_bytes().has_value());
  EXPECT_TRUE((*huge)->postings_huge_page_bytes().has_value());
  ASSERT_EQ((*huge)->num_terms(), (*mapped)->num_terms());
  uint32_t a[kBlockSize], b[kBlockSize];
  for (uint64_t t = 0; t < (*mapped)->num_terms(); ++t) {
    auto la = (*mapped)->postings((*mapped)->term_at(t));
    auto lb = (*huge)->postings((*huge)->term_at(t));
    ASSERT_TRUE(la.ok() && lb.ok()) << t;
    ASSERT_NE(la->num_blocks(), 0u);
    ASSERT_EQ(la->num_blocks(), lb->num_blocks()) << t;
    for (uint32_t block = 0; block < la->num_blocks(); ++block) {
      ASSERT_EQ(la->block_max(block), lb->block_max(block));
      ASSERT_TRUE(la->DecodeDocids((*mapped)->codec(), block, a).ok());
      ASSERT_TRUE(lb->DecodeDocids((*huge)->codec(), block, b).ok());
      ASSERT_TRUE(std::equal(a, a + la->block_postings(block), b)) << t << " block " << block;
      ASSERT_TRUE(la->DecodeFreqs((*mapped)->codec(), block, a).ok());
      ASSERT_TRUE(lb->DecodeFreqs((*huge)->codec(), block, b).ok());
      ASSERT_TRUE(std::equal(a, a + la->block_postings(block), b)) << t << " block " << block;
    }
  }
}

TEST(FileMemoryTest, NamesParseAndBadOnesAreRefused) {
  for (FileMemory memory : kEveryMemory) {
    auto parsed = ParseFileMemory(FileMemoryName(memory));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, memory);
  }
  auto bad = ParseFileMemory("hugepages");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), HasSubstr("'hugepages' (mapped, huge-pages)"));
}

TEST_F(IndexTest, WrongVersionIsDetected) {
  // The version field sits at bytes 16..19 of the header.
  const std::string path = File(kLexiconFile);
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(16);
  const uint32_t v = kFormatVersion + 1;
  f.write(reinterpret_cast<const char*>(&v), 4);
  f.close();
  auto idx = Index::Open(dir_);
  ASSERT_FALSE(idx.ok());
  EXPECT_EQ(idx.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(idx.status().message()),
              HasSubstr(absl::StrCat("has format version ", v, ", this build reads version ",
                                     kFormatVersion, "; rebuild")));
}

TEST_F(IndexTest, SwappedFilesAreDetected) {
  fs::rename(File(kLexiconFile), File("tmp"));
  fs::rename(File(kDocumentsFile), File(kLexiconFile));
  auto idx = Index::Open(dir_);
  ASSERT_FALSE(idx.ok());
  EXPECT_THAT(std::string(idx.status().message()), HasSubstr("wrong kind"));
}

TEST_F(IndexTest, MissingFileOrDirectory) {
  fs::remove(File(kPostingsFile));
  auto idx = Index::Open(dir_);
  EXPECT_EQ(idx.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(idx.status().message()), HasSubstr(kPostingsFile));
  EXPECT_EQ(Index::Open(tmp_.path() + "/nope").status().code(), absl::StatusCode::kNotFound);
}

TEST_F(IndexTest, NotAnIndexFile) {
  std::ofstream(File(kManifestFile), std::ios::trunc) << std::string(100, 'x');
  auto idx = Index::Open(dir_);
  EXPECT_EQ(idx.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(std::string(idx.status().message()), HasSubstr("not a Tandem index file"));
}

TEST_F(IndexTest, InterruptedBuildLeavesNothing) {
  const std::string out = tmp_.path() + "/interrupted";
  {
    auto w = IndexWriter::Create(out, {});
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE((*w)->AddDocument("a", 1).ok());
    ASSERT_TRUE((*w)->AddPostingList("x", std::vector<uint32_t>{0}, std::vector<uint32_t>{1}).ok());
    // Destroyed without Finish(): as if the build was killed.
  }
  EXPECT_FALSE(fs::exists(out));
  for (const auto& e : fs::directory_iterator(tmp_.path())) {
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr("interrupted")));
  }
}

TEST_F(IndexTest, RebuildReplacesIndexAtomically) {
  auto before = Index::Open(dir_);
  ASSERT_TRUE(before.ok());
  const std::string old_id = (*before)->manifest().index_id;
  ASSERT_TRUE(testing::BuildIndex({{"a"}}, dir_, "rice").ok());
  auto after = Index::Open(dir_);
  ASSERT_TRUE(after.ok());
  EXPECT_NE((*after)->manifest().index_id, old_id);
  EXPECT_EQ((*after)->manifest().codec, "rice");
  // The old mapping stays valid while held.
  EXPECT_EQ((*before)->num_docs(), 500u);
  // Nothing is left beside the index: the old one went with the exchange.
  for (const auto& e : fs::directory_iterator(fs::path(dir_).parent_path())) {
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr(".old-")));
    EXPECT_THAT(e.path().filename().string(), ::testing::Not(HasSubstr(".tmp-")));
  }
}

// A build killed mid-way leaves its temporary directory behind; the next build of the same index
// removes it, and leaves those of builds still running.
TEST_F(IndexTest, NextBuildRemovesTheLeftoversOfKilledBuilds) {
  const fs::path parent = fs::path(dir_).parent_path();
  const std::string name = fs::path(dir_).filename().string();
  const fs::path killed = parent / (name + ".tmp-4194400-0a1b2c3d4e5f");  // no such process
  const fs::path killed_old = parent / (name + ".old-4194400-0a1b2c3d4e5f");
  const fs::path running = parent / (name + ".tmp-1-0a1b2c3d4e5f");  // init: always there
  for (const fs::path& p : {killed, killed_old, running}) {
    fs::create_directories(p);
    std::ofstream(p / "postings.bin") << "half-written";
  }
  ASSERT_TRUE(testing::BuildIndex({{"a"}}, dir_, "pfor").ok());
  EXPECT_FALSE(fs::exists(killed));
  EXPECT_FALSE(fs::exists(killed_old));
  EXPECT_TRUE(fs::exists(running));
  EXPECT_TRUE(Index::Open(dir_).ok());
}

TEST_F(IndexTest, RefusesToReplaceANonIndexDirectory) {
  const std::string d = tmp_.path() + "/precious";
  fs::create_directory(d);
  std::ofstream(d + "/thesis.tex") << "years of work";
  auto w = IndexWriter::Create(d, {});
  EXPECT_EQ(w.status().code(), absl::StatusCode::kAlreadyExists);
  EXPECT_TRUE(fs::exists(d + "/thesis.tex"));
}

TEST_F(IndexTest, RemovedDocumentsLeaveTheTableAndLaterOnesMoveDown) {
  auto w = IndexWriter::Create(tmp_.path() + "/removed", {});
  ASSERT_TRUE(w.ok());
  for (int d = 0; d < 6; ++d) {
    // Documents 1 and 2 have no fields, so the kept byte ranges of the two pools differ.
    std::vector<std::pair<std::string, std::string>> fields;
    if (d != 1 && d != 2) fields.emplace_back("n", absl::StrCat("value-", d));
    ASSERT_TRUE((*w)->AddDocument(absl::StrCat("id", d), 10 + d, fields).ok());
  }
  using V = std::vector<uint32_t>;
  EXPECT_EQ((*w)->RemoveDocuments(V{2, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->RemoveDocuments(V{1, 1}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ((*w)->RemoveDocuments(V{6}).code(), absl::StatusCode::kInvalidArgument);
  ASSERT_TRUE((*w)->RemoveDocuments(V{0, 2, 3}).ok());
  EXPECT_EQ((*w)->RemoveDocuments(V{0}).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*w)->AddDocument("late", 1).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ((*w)->num_docs(), 3u);
  ASSERT_TRUE((*w)->AddPostingList("t", V{0, 2}, V{1, 3}).ok());
  EXPECT_EQ((*w)->RemoveDocuments(V{0}).code(), absl::StatusCode::kFailedPrecondition);
  ASSERT_TRUE((*w)->Finish().ok());
  auto idx = Index::Open(tmp_.path() + "/removed");
  ASSERT_TRUE(idx.ok()) << idx.status();
  ASSERT_EQ((*idx)->num_docs(), 3u);
  const char* ids[] = {"id1", "id4", "id5"};
  for (uint32_t d = 0; d < 3; ++d) EXPECT_EQ((*idx)->external_id(d), ids[d]);
  EXPECT_EQ((*idx)->doc_length(0), 11u);
  EXPECT_EQ((*idx)->doc_length(2), 15u);
  EXPECT_FLOAT_EQ((*idx)->avg_doc_length(), (11 + 14 + 15) / 3.0f);
  EXPECT_TRUE((*idx)->stored_fields(0).empty());
  ASSERT_EQ((*idx)->stored_fields(1).size(), 1u);
  EXPECT_EQ((*idx)->stored_fields(1)[0].second, "value-4");
  EXPECT_EQ((*idx)->stored_fields(2)[0].second, "value-5");
}

TEST_F(IndexTest, WriterRejectsBadInput) {
  auto w = IndexWriter::Create(tmp_.path() + "/bad", {});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->AddDocument("a", 1).ok());
  ASSERT_TRUE((*w)->AddDocument("b", 1).ok());
  using V = std::vector<uint32_t>;
  EXPECT_FALSE((*w)->AddPostingList("m", V{1, 0}, V{1, 1}).ok());  // not increasing
  EXPECT_FALSE((*w)->AddPostingList("m", V{0, 5}, V{1, 1}).ok());  // docid >= num_docs
  EXPECT_FALSE((*w)->AddPostingList("m", V{0}, V{0}).ok());        // tf 0
  EXPECT_FALSE((*w)->AddPostingList("m", V{}, V{}).ok());          // empty
  ASSERT_TRUE((*w)->AddPostingList("m", V{0}, V{1}).ok());
  EXPECT_FALSE((*w)->AddPostingList("a", V{0}, V{1}).ok());  // out of order
  EXPECT_FALSE((*w)->AddDocument("c", 1).ok());              // documents after lists
  IndexWriterOptions unknown_codec;
  unknown_codec.codec = "zip";
  EXPECT_EQ(IndexWriter::Create(tmp_.path() + "/x", unknown_codec).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(IndexTest, EmptyIndex) {
  const std::string d = tmp_.path() + "/empty";
  auto w = IndexWriter::Create(d, {});
  ASSERT_TRUE(w.ok());
  ASSERT_TRUE((*w)->Finish().ok());
  auto idx = Index::Open(d, {.verify_lists = true});
  ASSERT_TRUE(idx.ok()) << idx.status();
  EXPECT_EQ((*idx)->num_docs(), 0u);
  EXPECT_FALSE((*idx)->Lookup("a").has_value());
}

}  // namespace
}  // namespace tandem::index
