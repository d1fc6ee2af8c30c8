#include "index_builder/inverter.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/data_dir.h"
#include "tests/test_collection.h"

namespace tandem::index_builder {
namespace {

// Serves documents from memory; the terms are joined with spaces so the analyzer sees them again.
class VectorReader : public DocumentReader {
 public:
  explicit VectorReader(std::vector<std::vector<std::string>> docs) : docs_(std::move(docs)) {}
  absl::StatusOr<bool> Next(Document* doc) override {
    if (next_ == docs_.size()) return false;
    doc->Clear();
    doc->external_id = absl::StrCat("doc", next_);
    doc->text = absl::StrJoin(docs_[next_], " ");
    doc->fields = {{"n", absl::StrCat(next_)}};
    ++next_;
    return true;
  }

 private:
  std::vector<std::vector<std::string>> docs_;
  size_t next_ = 0;
};

// Every list, decoded, as term -> (docids, freqs).
testing::DecodedLists Dump(const index::Index& idx) {
  absl::StatusOr<testing::DecodedLists> lists = testing::DecodeAllLists(idx);
  EXPECT_TRUE(lists.ok()) << lists.status();
  return lists.ok() ? *std::move(lists) : testing::DecodedLists();
}

class InverterTest : public ::testing::TestWithParam<int> {};

TEST_P(InverterTest, SpillAndMergeGivesTheSameIndexAsInMemoryInversion) {
  testing::CollectionSpec spec;
  spec.num_docs = 3000;
  auto docs = testing::RandomDocuments(spec);
  testing::TempDir tmp;
  ASSERT_TRUE(testing::BuildIndex(docs, tmp.path() + "/want", "pfor").ok());

  // Merged as one range of terms and as one range per mark of the runs.
  for (const uint64_t range_bytes : {uint64_t{1} << 40, uint64_t{1}}) {
    SCOPED_TRACE(range_bytes);
    VectorReader reader(docs);
    InverterOptions options;
    options.threads = GetParam();
    options.memory_budget_bytes = 64 << 10;  // forces many spilled runs
    options.merge_range_bytes = range_bytes;
    index::IndexWriterOptions w;
    absl::StatusOr<BuildSummary> s = BuildIndex(reader, tmp.path() + "/got", w, options);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_EQ(s->documents, 3000u);
    EXPECT_GT(s->spilled_runs, 4u);

    auto want = index::Index::Open(tmp.path() + "/want");
    auto got = index::Index::Open(tmp.path() + "/got", {.verify_lists = true});
    ASSERT_TRUE(want.ok() && got.ok());
    EXPECT_EQ((*got)->num_docs(), 3000u);
    EXPECT_EQ((*got)->stats().num_postings, (*want)->stats().num_postings);
    EXPECT_EQ(s->postings, (*want)->stats().num_postings);
    EXPECT_EQ(Dump(**got), Dump(**want));
    for (uint32_t d : {0u, 1234u, 2999u}) {
      EXPECT_EQ((*got)->external_id(d), absl::StrCat("doc", d));
      EXPECT_EQ((*got)->doc_length(d), (*want)->doc_length(d));
      ASSERT_EQ((*got)->stored_fields(d).size(), 1u);
      EXPECT_EQ((*got)->stored_fields(d)[0].second, absl::StrCat(d));
    }
    // No spill directory is left behind.
    for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
      EXPECT_THAT(e.path().filename().string(), ::testing::Not(::testing::HasSubstr("spill")));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Threads, InverterTest, ::testing::Values(1, 3));

TEST(InverterStrictTest, InputCheckStopsTheBuildAndLeavesNoIndex) {
  VectorReader reader({{"a"}, {"b"}, {"c"}});
  testing::TempDir tmp;
  InverterOptions options;
  int seen = 0;
  options.input_check = [&]() -> absl::Status {
    return ++seen == 2 ? absl::InvalidArgumentError("x:2: bad") : absl::OkStatus();
  };
  auto s = BuildIndex(reader, tmp.path() + "/out", {}, options);
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_FALSE(std::filesystem::exists(tmp.path() + "/out"));
}

// Serves (external id, text) pairs.
class IdReader : public DocumentReader {
 public:
  explicit IdReader(std::vector<std::pair<std::string, std::string>> docs)
      : docs_(std::move(docs)) {}
  absl::StatusOr<bool> Next(Document* doc) override {
    if (next_ == docs_.size()) return false;
    doc->Clear();
    doc->external_id = docs_[next_].first;
    doc->text = docs_[next_].second;
    doc->fields = {{"text", docs_[next_].second}};
    doc->location = absl::StrCat("mem:", next_ + 1);
    ++next_;
    return true;
  }

 private:
  std::vector<std::pair<std::string, std::string>> docs_;
  size_t next_ = 0;
};

// An index at `dir` with one document "old".
void BuildOldIndex(const std::string& dir) {
  IdReader reader(std::vector<std::pair<std::string, std::string>>{{"old", "previous index"}});
  ASSERT_TRUE(BuildIndex(reader, dir, {}, {}).ok());
}

void ExpectOldIndex(const std::string& dir) {
  absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(dir);
  ASSERT_TRUE(idx.ok()) << idx.status();
  ASSERT_EQ((*idx)->num_docs(), 1u);
  EXPECT_EQ((*idx)->external_id(0), "old");
}

TEST(InverterInputTest, AnInputWithoutDocumentsFailsAndLeavesTheOldIndex) {
  testing::TempDir tmp;
  const std::string out = tmp.path() + "/out";
  BuildOldIndex(out);
  VectorReader reader({});
  auto s = BuildIndex(reader, out, {}, {});
  EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("no documents"));
  ExpectOldIndex(out);
  // Nothing but the old index is left beside it.
  for (const auto& e : std::filesystem::directory_iterator(tmp.path())) {
    EXPECT_EQ(e.path().filename().string(), "out");
  }
}

TEST(InverterInputTest, RepeatedIdsFailByDefaultNamingTheFirstRepeat) {
  testing::TempDir tmp;
  const std::string out = tmp.path() + "/out";
  BuildOldIndex(out);
  IdReader reader({{"a", "one"}, {"b", "two"}, {"a", "three"}, {"c", "four"}, {"b", "five"}});
  auto s = BuildIndex(reader, out, {}, {});
  ASSERT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.status().message()),
              ::testing::AllOf(::testing::StartsWith("2 document(s) repeat the external id"),
                               ::testing::HasSubstr("the first: 'a' at mem:3"),
                               ::testing::HasSubstr("--duplicate-ids keep-first")));
  ExpectOldIndex(out);
}

TEST(InverterInputTest, KeepFirstSkipsTheLaterDocumentsOfAnId) {
  testing::TempDir tmp;
  const std::string out = tmp.path() + "/out";
  IdReader reader({{"a", "one"}, {"b", "two"}, {"a", "three"}, {"c", "four"}, {"b", "five"}});
  InverterOptions options;
  options.duplicate_ids = DuplicateIds::kKeepFirst;
  auto s = BuildIndex(reader, out, {}, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->documents, 3u);
  EXPECT_EQ(s->duplicate_documents, 2u);
  EXPECT_THAT(s->Describe(),
              ::testing::HasSubstr("2 dropped for a repeated id: the first of each kept"));
  auto idx = index::Index::Open(out, {.verify_lists = true});
  ASSERT_TRUE(idx.ok()) << idx.status();
  ASSERT_EQ((*idx)->num_docs(), 3u);
  EXPECT_EQ((*idx)->external_id(0), "a");
  EXPECT_EQ((*idx)->external_id(1), "b");
  EXPECT_EQ((*idx)->external_id(2), "c");
  const testing::DecodedLists lists = Dump(**idx);
  EXPECT_TRUE(lists.contains("on"));  // "one", stemmed
  EXPECT_FALSE(lists.contains("three"));
  EXPECT_FALSE(lists.contains("five"));
}

TEST(InverterInputTest, KeepLastReplacesTheEarlierDocumentOfAnId) {
  testing::TempDir tmp;
  const std::string out = tmp.path() + "/out";
  IdReader reader({{"a", "one"}, {"b", "two"}, {"a", "three"}, {"c", "four"}, {"b", "five"}});
  InverterOptions options;
  options.duplicate_ids = DuplicateIds::kKeepLast;
  auto s = BuildIndex(reader, out, {}, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->documents, 3u);
  EXPECT_EQ(s->duplicate_documents, 2u);
  EXPECT_THAT(s->Describe(),
              ::testing::HasSubstr("2 dropped for a repeated id: the last of each kept"));
  auto idx = index::Index::Open(out, {.verify_lists = true});
  ASSERT_TRUE(idx.ok()) << idx.status();
  ASSERT_EQ((*idx)->num_docs(), 3u);
  const char* ids[] = {"a", "c", "b"};
  const char* texts[] = {"three", "four", "five"};
  for (uint32_t d = 0; d < 3; ++d) {
    EXPECT_EQ((*idx)->external_id(d), ids[d]);
    ASSERT_EQ((*idx)->stored_fields(d).size(), 1u);
    EXPECT_EQ((*idx)->stored_fields(d)[0].second, texts[d]);
  }
  const testing::DecodedLists lists = Dump(**idx);
  EXPECT_FALSE(lists.contains("on"));  // "one", stemmed: its document was replaced
  EXPECT_FALSE(lists.contains("two"));
  ASSERT_TRUE(lists.contains("five"));
  EXPECT_EQ(lists.at("five").first, std::vector<uint32_t>{2});
}

// Keep-last over many repeats, with spilled runs and several threads, gives the index of the
// input with every replaced document left out.
class KeepLastTest : public ::testing::TestWithParam<int> {};

TEST_P(KeepLastTest, EqualsTheIndexOfTheDeduplicatedInput) {
  testing::CollectionSpec spec;
  spec.num_docs = 2500;
  const auto texts = testing::RandomDocuments(spec);
  std::mt19937 rng(GetParam());
  std::vector<std::pair<std::string, std::string>> input;
  for (const auto& t : texts) {
    input.emplace_back(absl::StrCat("id", rng() % 1500), absl::StrJoin(t, " "));
  }
  std::map<std::string, size_t> last;
  for (size_t i = 0; i < input.size(); ++i) last[input[i].first] = i;
  std::vector<std::pair<std::string, std::string>> kept;
  for (size_t i = 0; i < input.size(); ++i) {
    if (last[input[i].first] == i) kept.push_back(input[i]);
  }
  ASSERT_LT(kept.size(), input.size());

  testing::TempDir tmp;
  IdReader want_reader(kept);
  ASSERT_TRUE(BuildIndex(want_reader, tmp.path() + "/want", {}, {}).ok());
  IdReader reader(input);
  InverterOptions options;
  options.threads = 1 + GetParam() % 3;
  options.memory_budget_bytes = 64 << 10;
  options.merge_range_bytes = GetParam() == 2 ? 1 : 0;  // renumbered in many ranges, or few
  options.duplicate_ids = DuplicateIds::kKeepLast;
  auto s = BuildIndex(reader, tmp.path() + "/got", {}, options);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->documents, kept.size());
  EXPECT_EQ(s->duplicate_documents, input.size() - kept.size());
  EXPECT_GT(s->spilled_runs, 2u);

  auto want = index::Index::Open(tmp.path() + "/want");
  auto got = index::Index::Open(tmp.path() + "/got", {.verify_lists = true});
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ((*got)->stats().num_postings, (*want)->stats().num_postings);
  EXPECT_EQ((*got)->stats().num_terms, (*want)->stats().num_terms);
  EXPECT_EQ((*got)->avg_doc_length(), (*want)->avg_doc_length());
  EXPECT_EQ(s->postings, (*want)->stats().num_postings);
  EXPECT_EQ(Dump(**got), Dump(**want));
  for (uint32_t d = 0; d < kept.size(); ++d) {
    ASSERT_EQ((*got)->external_id(d), kept[d].first);
    EXPECT_EQ((*got)->doc_length(d), (*want)->doc_length(d));
    ASSERT_EQ((*got)->stored_fields(d).size(), 1u);
    EXPECT_EQ((*got)->stored_fields(d)[0].second, kept[d].second);
  }
  // Block maxima come from the kept documents' norms: every list's maximum score agrees.
  for (uint64_t t = 0; t < (*want)->stats().num_terms; ++t) {
    EXPECT_EQ((*got)->term_at(t).max_score, (*want)->term_at(t).max_score);
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, KeepLastTest, ::testing::Values(1, 2, 3));

TEST(InverterInputTest, BeforeWriteSeesTheDocumentCountAndCanRefuse) {
  testing::TempDir tmp;
  const std::string out = tmp.path() + "/out";
  BuildOldIndex(out);
  IdReader reader({{"a", "one"}, {"b", "two"}});
  InverterOptions options;
  uint64_t seen = 0;
  options.before_write = [&](uint64_t documents) {
    seen = documents;
    return absl::InvalidArgumentError("too many bad documents");
  };
  auto s = BuildIndex(reader, out, {}, options);
  EXPECT_EQ(s.status().message(), "too many bad documents");
  EXPECT_EQ(seen, 2u);
  ExpectOldIndex(out);
}

// Parallel parsing (ReaderOptions::threads): the index files are those of a one-thread build byte
// for byte, and the bad documents are reported alike, whatever the threads and the chunk size.
struct ParallelBuild {
  absl::Status status;
  std::vector<std::string> files;  // postings.bin, lexicon.bin, documents.bin
  std::vector<std::string> bad;
};

std::string FileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

ParallelBuild BuildWithThreads(const std::string& format, const std::string& input,
                               const std::string& out, int threads, uint64_t chunk_bytes,
                               DuplicateIds duplicate_ids = DuplicateIds::kFail) {
  ParallelBuild build;
  ReaderOptions reader_options;
  reader_options.threads = threads;
  reader_options.chunk_bytes = chunk_bytes;
  reader_options.on_bad_document = [&](const absl::Status& s) {
    build.bad.emplace_back(s.message());
  };
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader(format, input, reader_options);
  if (!reader.ok()) {
    build.status = reader.status();
    return build;
  }
  InverterOptions options;
  options.threads = threads;
  options.memory_budget_bytes = 256 << 10;  // spilled runs too
  options.duplicate_ids = duplicate_ids;
  build.status = BuildIndex(**reader, out, {}, options).status();
  for (const char* f : {index::kPostingsFile, index::kLexiconFile, index::kDocumentsFile}) {
    build.files.push_back(FileBytes(out + "/" + f));
  }
  return build;
}

void ExpectSameIndexWhateverTheThreads(const std::string& format, const std::string& input,
                                       DuplicateIds duplicate_ids = DuplicateIds::kFail) {
  testing::TempDir tmp;
  const ParallelBuild want =
      BuildWithThreads(format, input, tmp.path() + "/t1", 1, 256 << 10, duplicate_ids);
  ASSERT_TRUE(want.status.ok()) << want.status;
  for (int threads : {2, 5}) {
    for (uint64_t chunk : {uint64_t{512}, uint64_t{64} << 10}) {
      const ParallelBuild got =
          BuildWithThreads(format, input, absl::StrCat(tmp.path(), "/t", threads, "-", chunk),
                           threads, chunk, duplicate_ids);
      ASSERT_TRUE(got.status.ok()) << got.status;
      EXPECT_TRUE(got.files == want.files) << format << " " << input << ": index files differ with "
                                           << threads << " threads, chunks of " << chunk;
      EXPECT_EQ(got.bad, want.bad);
    }
  }
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A directory of WikiExtractor files, a large BEIR corpus and a large TREC file, each with some
// malformed documents.
class ParallelParsingInputs {
 public:
  ParallelParsingInputs() {
    std::filesystem::create_directory(dir_.path() + "/wiki");
    const std::vector<std::string> words = {"alpha",  "beta", "gamma", "delta", "epsilon",
                                            "zeta",   "eta",  "theta", "iota",  "kappa",
                                            "lambda", "mu",   "nu",    "xi",    "omicron"};
    auto text = [&](int i) {
      std::string t;
      for (int w = 0; w < 5 + i % 23; ++w) absl::StrAppend(&t, words[(i * 7 + w * w) % 15], " ");
      return t;
    };
    int id = 0;
    for (int f = 0; f < 9; ++f) {
      std::string wiki;
      for (int d = 0; d < 30 + 7 * f; ++d, ++id) {
        absl::StrAppend(&wiki, "<doc id=\"", id % 97 == 13 ? "" : absl::StrCat(id),
                        "\" url=\"u\" title=\"T", id, "\">\n", text(id), "\n", text(id + 1), "\n");
        if (id % 101 != 50) wiki += "</doc>\n";
      }
      WriteFile(absl::StrCat(dir_.path(), "/wiki/wiki_0", f), wiki);
    }
    std::string beir, trec;
    for (int i = 0; i < 2500; ++i) {
      if (i % 300 == 7) {
        beir += "{\"title\": \"no id\"}\n";
      } else {
        absl::StrAppend(&beir, "{\"_id\": \"d", i, "\", \"title\": \"t", i % 9, "\", \"text\": \"",
                        text(i), "\"}\n");
      }
      absl::StrAppend(&trec, "<DOC>\n",
                      i % 250 == 9 ? "" : absl::StrCat("<DOCNO> X-", i, " </DOCNO>\n"), "<TEXT>\n",
                      text(i), "\n</TEXT>\n</DOC>\n");
    }
    WriteFile(dir_.path() + "/corpus.jsonl", beir);
    WriteFile(dir_.path() + "/big.trec", trec);
  }
  std::string path(const std::string& relative) const { return dir_.path() + "/" + relative; }

 private:
  testing::TempDir dir_;
};

TEST(InverterParallelParsingTest, IndexFilesAreTheSameWhateverTheThreads) {
  const ParallelParsingInputs inputs;
  ExpectSameIndexWhateverTheThreads("wikiextractor", inputs.path("wiki"));
  ExpectSameIndexWhateverTheThreads("beir", inputs.path("corpus.jsonl"));
  ExpectSameIndexWhateverTheThreads("trec", inputs.path("big.trec"));
}

TEST(InverterParallelParsingTest, RealCollectionsGiveTheSameIndexWhateverTheThreads) {
  // Wikipedia's documents are compared one by one in parallel_reader_test; Reuters is built here.
  for (const auto& [format, relative] :
       std::vector<std::pair<std::string, std::string>>{{"reuters", "text/reuters21578"}}) {
    const std::string input = testing::DataFile(relative);
    if (input.empty()) continue;
    testing::TempDir tmp;
    const ParallelBuild want = BuildWithThreads(format, input, tmp.path() + "/t1", 1, 256 << 10);
    ASSERT_TRUE(want.status.ok()) << want.status;
    const ParallelBuild got = BuildWithThreads(format, input, tmp.path() + "/t4", 4, 64 << 10);
    ASSERT_TRUE(got.status.ok()) << got.status;
    EXPECT_TRUE(got.files == want.files) << input;
    EXPECT_EQ(got.bad, want.bad);
  }
}

TEST(InverterParallelParsingTest, KeepFirstAndKeepLastAreTheSameWhateverTheThreads) {
  testing::TempDir tmp;
  std::string beir;
  for (int i = 0; i < 3000; ++i) {
    absl::StrAppend(&beir, "{\"_id\": \"d", (i * 7919) % 900, "\", \"text\": \"v", i % 31, " w",
                    i % 7, " version ", i, "\"}\n");
  }
  WriteFile(tmp.path() + "/corpus.jsonl", beir);
  ExpectSameIndexWhateverTheThreads("beir", tmp.path() + "/corpus.jsonl", DuplicateIds::kKeepFirst);
  ExpectSameIndexWhateverTheThreads("beir", tmp.path() + "/corpus.jsonl", DuplicateIds::kKeepLast);
  // Under the default the build fails the same way, naming the same first repeat.
  const ParallelBuild one =
      BuildWithThreads("beir", tmp.path() + "/corpus.jsonl", tmp.path() + "/f1", 1, 256 << 10);
  const ParallelBuild five =
      BuildWithThreads("beir", tmp.path() + "/corpus.jsonl", tmp.path() + "/f5", 5, 512);
  EXPECT_FALSE(one.status.ok());
  EXPECT_EQ(five.status, one.status);
}

TEST(InverterParallelParsingTest, AFileThatCannotBeReadStopsTheBuildAndLeavesTheOldIndex) {
  testing::TempDir tmp;
  const std::string out = tmp.path() + "/out";
  BuildOldIndex(out);
  std::filesystem::create_directory(tmp.path() + "/in");
  for (int f = 0; f < 8; ++f) {
    std::string text;
    for (int i = 0; i < 300; ++i) absl::StrAppend(&text, "file ", f, " line ", i, "\n");
    WriteFile(absl::StrCat(tmp.path(), "/in/f", f, ".txt"), text);
  }
  ReaderOptions reader_options;
  reader_options.threads = 4;
  reader_options.chunk_bytes = 256;
  absl::StatusOr<std::unique_ptr<DocumentReader>> reader =
      OpenDocumentReader("lines", tmp.path() + "/in", reader_options);
  ASSERT_TRUE(reader.ok());
  std::filesystem::remove(tmp.path() + "/in/f5.txt");  // listed, then gone
  InverterOptions options;
  options.threads = 4;
  auto s = BuildIndex(**reader, out, {}, options);
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("cannot open"));
  EXPECT_THAT(std::string(s.status().message()), ::testing::HasSubstr("f5.txt"));
  ExpectOldIndex(out);
}

}  // namespace
}  // namespace tandem::index_builder
