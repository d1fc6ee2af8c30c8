// tandem-index build on inputs a user gets wrong: the wrong --format, a collection with many
// malformed documents, repeated external ids, nothing to read. Each fails with exit status 1 and
// one line that says what to do, and the index already at --output is served as before; --format
// auto says which format it picked. tandem-index import and export: a CIFF round trip, PISA's five
// files, a damaged CIFF file and command lines that are wrong. tandem-index shard: shards that
// inspect, lookup and tandem-server's GetIndexInfo place in their collection, and its refusals.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

std::string Source(const std::string& relative) {
  const char* source = std::getenv("TANDEM_SOURCE_DIR");
  return absl::StrCat(source != nullptr ? source : ".", "/", relative);
}

ProcessResult TandemIndex(const std::vector<std::string>& args) {
  absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_INDEX_BINARY, args);
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *run : ProcessResult{.exit_code = -1};
}

ProcessResult Build(std::vector<std::string> args) {
  args.insert(args.begin(), "build");
  return TandemIndex(args);
}

class IndexBuildCliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    out_ = tmp_.path() + "/index";
    ProcessResult first = Build({"--input", Source("tests/data/tiny/corpus.jsonl"), "--format",
                                 "beir", "--output", out_, "--quiet"});
    ASSERT_EQ(first.exit_code, 0) << first.err;
    ExpectTheTinyIndex();
  }

  // The index built in SetUp is still at out_, whole, and nothing else was left beside it.
  void ExpectTheTinyIndex() {
    absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(out_);
    ASSERT_TRUE(idx.ok()) << idx.status();
    EXPECT_EQ((*idx)->manifest().source_format, "beir");
    for (const auto& entry : std::filesystem::directory_iterator(tmp_.path())) {
      EXPECT_THAT(entry.path().filename().string(), ::testing::AnyOf("index", "input"));
    }
  }

  void ExpectFailure(const ProcessResult& run, const std::string& message) {
    EXPECT_EQ(run.exit_code, 1) << run.err;
    EXPECT_THAT(run.err, HasSubstr(message));
    ExpectTheTinyIndex();
  }

  TempDir tmp_;
  std::string out_;
};

TEST_F(IndexBuildCliTest, TheWrongFormatWritesNothing) {
  // JSON lines read as TREC: no document at all.
  ExpectFailure(Build({"--input", Source("tests/data/tiny/corpus.jsonl"), "--format", "trec",
                       "--output", out_, "--quiet"}),
                "the input holds no documents that could be read; nothing was written");
  // TREC read as BEIR JSON lines: every line is a malformed document.
  ExpectFailure(Build({"--input", Source("tests/data/readers/trec/fr940104.trec"), "--format",
                       "beir", "--output", out_, "--quiet"}),
                "nothing was written");
}

// --threads parses in parallel (--parse-chunk-kb 1 cuts the fixture into many chunks): the index
// files, the skipped documents' messages, --strict and --max-bad-fraction are those of --threads 1.
TEST_F(IndexBuildCliTest, ParallelParsingBuildsTheSameIndexAndReportsTheSame) {
  const std::string input = tmp_.path() + "/input";
  std::string jsonl;
  for (int i = 0; i < 400; ++i) {
    absl::StrAppend(&jsonl, i % 150 == 20 ? std::string("{broken\n")
                                          : absl::StrCat("{\"_id\": \"d", i, "\", \"text\": \"word",
                                                         i % 17, " number ", i, "\"}\n"));
  }
  std::ofstream(input, std::ios::binary) << jsonl;
  auto files_of = [](const std::string& dir) {
    std::vector<std::string> files;
    for (const char* f : {"postings.bin", "lexicon.bin", "documents.bin"}) {
      std::ifstream in(dir + "/" + f, std::ios::binary);
      files.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return files;
  };
  TempDir built;  // beside out_ only what ExpectTheTinyIndex allows
  const std::string one = built.path() + "/one", many = built.path() + "/many";
  ProcessResult built_one =
      Build({"--input", input, "--format", "beir", "--output", one, "--threads", "1"});
  ProcessResult built_many = Build({"--input", input, "--format", "beir", "--output", many,
                                    "--threads", "5", "--parse-chunk-kb", "1"});
  ASSERT_EQ(built_one.exit_code, 0) << built_one.err;
  ASSERT_EQ(built_many.exit_code, 0) << built_many.err;
  EXPECT_TRUE(files_of(one) == files_of(many));
  EXPECT_THAT(built_many.err, HasSubstr("input:21: not valid JSON"));
  auto skipped = [](const std::string& err) {
    std::vector<std::string> lines;
    for (absl::string_view line : absl::StrSplit(err, '\n')) {
      if (absl::StrContains(line, "skipped:")) lines.emplace_back(line);
    }
    return lines;
  };
  EXPECT_EQ(skipped(built_many.err), skipped(built_one.err));
  ProcessResult strict = Build({"--input", input, "--format", "beir", "--output", out_, "--threads",
                                "5", "--parse-chunk-kb", "1", "--strict", "--quiet"});
  ExpectFailure(strict, "--strict: " + input + ":21: not valid JSON");
  ProcessResult too_many =
      Build({"--input", input, "--format", "beir", "--output", out_, "--threads", "3",
             "--parse-chunk-kb", "1", "--max-bad-fraction", "0.001", "--quiet"});
  ExpectFailure(too_many, "3 of the 400 documents read");
}

TEST_F(IndexBuildCliTest, TooManyMalformedDocumentsFailUnlessAllowed) {
  // The BEIR fixture has 3 malformed lines among 7.
  const std::vector<std::string> args = {
      "--input", Source("tests/data/readers/beir"), "--format", "beir", "--output", out_,
      "--quiet"};
  ExpectFailure(Build(args),
                "3 of the 7 documents read (42.9%) are malformed, more than "
                "--max-bad-fraction 0.01 allows; nothing was written");
  std::vector<std::string> half = args;
  half.insert(half.end(), {"--max-bad-fraction", "0.4"});
  ExpectFailure(Build(half), "more than --max-bad-fraction 0.4 allows");
  std::vector<std::string> allowed = args;
  allowed.insert(allowed.end(), {"--max-bad-fraction", "0.5"});
  ProcessResult built = Build(allowed);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_THAT(built.out, HasSubstr("documents 4 (3 bad, skipped)"));
  std::vector<std::string> wrong = args;
  wrong.insert(wrong.end(), {"--max-bad-fraction", "-0.1"});
  absl::StatusOr<ProcessResult> refused = RunProcess(TANDEM_INDEX_BINARY, [&] {
    std::vector<std::string> a = wrong;
    a.insert(a.begin(), "build");
    return a;
  }());
  ASSERT_TRUE(refused.ok());
  EXPECT_EQ(refused->exit_code, 1);
  EXPECT_THAT(refused->err, HasSubstr("--max-bad-fraction must be between 0 and 1"));
}

TEST_F(IndexBuildCliTest, RepeatedIdsFailOrKeepTheFirstOrTheLast) {
  const std::string input = tmp_.path() + "/input";
  std::filesystem::create_directory(input);
  std::ofstream(input + "/corpus.jsonl") << R"({"_id": "1", "text": "first"})"
                                         << "\n"
                                         << R"({"_id": "2", "text": "second"})"
                                         << "\n"
                                         << R"({"_id": "1", "text": "again"})"
                                         << "\n";
  const std::vector<std::string> args = {"--input",  input, "--format", "beir",
                                         "--output", out_,  "--quiet"};
  ExpectFailure(Build(args),
                "1 document(s) repeat the external id of an earlier one (the first: "
                "'1' at " +
                    input + "/corpus.jsonl:3)");
  std::vector<std::string> keep = args;
  keep.insert(keep.end(), {"--duplicate-ids", "keep-first"});
  ProcessResult built = Build(keep);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_THAT(built.out, HasSubstr("1 dropped for a repeated id: the first of each kept"));
  absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(out_);
  ASSERT_TRUE(idx.ok());
  ASSERT_EQ((*idx)->num_docs(), 2u);
  EXPECT_EQ((*idx)->external_id(0), "1");
  EXPECT_TRUE((*idx)->Lookup("first").has_value());
  EXPECT_FALSE((*idx)->Lookup("again").has_value());
  idx->reset();
  std::vector<std::string> last = args;
  last.insert(last.end(), {"--duplicate-ids", "keep-last"});
  built = Build(last);
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_THAT(built.out, HasSubstr("1 dropped for a repeated id: the last of each kept"));
  idx = index::Index::Open(out_);
  ASSERT_TRUE(idx.ok());
  ASSERT_EQ((*idx)->num_docs(), 2u);
  EXPECT_EQ((*idx)->external_id(0), "2");
  EXPECT_EQ((*idx)->external_id(1), "1");
  EXPECT_FALSE((*idx)->Lookup("first").has_value());
  EXPECT_TRUE((*idx)->Lookup("again").has_value());
  std::vector<std::string> bogus = args;
  bogus.insert(bogus.end(), {"--duplicate-ids", "keep-newest"});
  EXPECT_THAT(
      Build(bogus).err,
      HasSubstr("--duplicate-ids must be fail, keep-first or keep-last, got \"keep-newest\""));
}

TEST_F(IndexBuildCliTest, FormatAutoSaysWhatItPicked) {
  ProcessResult built = Build({"--input", Source("tests/data/readers/trec"), "--format", "auto",
                               "--output", out_, "--quiet", "--max-bad-fraction", "0.5"});
  ASSERT_EQ(built.exit_code, 0) << built.err;
  EXPECT_THAT(built.err, HasSubstr("--format auto: reading " + Source("tests/data/readers/trec") +
                                   " as trec (1 of the 1 files sampled look like it)"));
  absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(out_);
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ((*idx)->manifest().source_format, "trec");

  const std::string input = tmp_.path() + "/input";
  std::filesystem::create_directory(input);
  std::ofstream(input + "/data.xml") << "<records><r>text</r></records>\n";
  ProcessResult unknown = Build({"--input", input, "--format", "auto", "--output", out_});
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_THAT(unknown.err, HasSubstr("cannot tell the format of " + input));
}

TEST_F(IndexBuildCliTest, LookupSaysWhenATermIsAStopWord) {
  absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_INDEX_BINARY, {"lookup", out_, "The"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 2);
  EXPECT_EQ(run->err,
            "tandem-index: 'The' is a stop word of this index's analyzer "
            "(standard+possessive+lowercase+stop(lucene)+porter): it is not indexed, and queries "
            "drop it\n");
  absl::StatusOr<ProcessResult> absent =
      RunProcess(TANDEM_INDEX_BINARY, {"lookup", out_, "zzzqqq"});
  ASSERT_TRUE(absent.ok());
  EXPECT_EQ(absent->exit_code, 2);
  EXPECT_THAT(absent->err, HasSubstr("'zzzqqq' is not in the index"));
}

TEST_F(IndexBuildCliTest, ExportToCiffAndImportItBack) {
  const std::string input = tmp_.path() + "/input";
  std::filesystem::create_directory(input);
  const std::string ciff = input + "/tiny.ciff";
  ProcessResult exported = TandemIndex({"export", "--format", "ciff", out_, ciff});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_THAT(exported.out, HasSubstr("exported " + out_ + " as ciff to " + ciff));

  const std::string copy = input + "/copy";
  ProcessResult imported =
      TandemIndex({"import", "--format", "ciff", ciff, "--output", copy, "--codec", "rice"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_THAT(imported.out, HasSubstr("imported " + ciff + " into " + copy));
  EXPECT_THAT(imported.out, HasSubstr("analyzer recorded: standard+possessive+lowercase+"
                                      "stop(lucene)+porter (CIFF does not say which made its "
                                      "terms; --tokenizer, --stopwords and --stemmer set it)"));
  absl::StatusOr<std::unique_ptr<index::Index>> want = index::Index::Open(out_);
  absl::StatusOr<std::unique_ptr<index::Index>> got = index::Index::Open(copy);
  ASSERT_TRUE(want.ok() && got.ok());
  EXPECT_EQ((*got)->manifest().source_format, "ciff");
  EXPECT_EQ((*got)->manifest().codec, "rice");
  EXPECT_EQ((*got)->stats().num_postings, (*want)->stats().num_postings);
  EXPECT_EQ((*got)->stats().total_doc_length, (*want)->stats().total_doc_length);
  EXPECT_EQ((*got)->external_id(3), (*want)->external_id(3));

  // A damaged file leaves the index at --output as it was.
  std::filesystem::resize_file(ciff, std::filesystem::file_size(ciff) - 1);
  ExpectFailure(TandemIndex({"import", "--format", "ciff", ciff, "--output", out_}),
                "past the end of the file (");
  ExpectFailure(TandemIndex({"import", "--format", "ciff", ciff, "--output", out_}),
                "; nothing was written");
  ExpectFailure(TandemIndex({"import", "--format", "ciff", input + "/none.ciff", "--output", out_}),
                "cannot open '" + input + "/none.ciff'");
}

TEST_F(IndexBuildCliTest, ExportToPisaWritesFiveFiles) {
  const std::string base = tmp_.path() + "/input/tiny";
  std::filesystem::create_directory(tmp_.path() + "/input");
  ProcessResult exported = TandemIndex({"export", "--format", "pisa", out_, base});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_THAT(exported.out, HasSubstr("to " + base + ".{docs,freqs,sizes,terms,documents}"));
  absl::StatusOr<std::unique_ptr<index::Index>> idx = index::Index::Open(out_);
  ASSERT_TRUE(idx.ok());
  const uint64_t n = (*idx)->num_docs();
  EXPECT_EQ(std::filesystem::file_size(base + ".docs"),
            4 * (2 + (*idx)->num_terms() + (*idx)->stats().num_postings));
  EXPECT_EQ(std::filesystem::file_size(base + ".freqs"),
            4 * ((*idx)->num_terms() + (*idx)->stats().num_postings));
  EXPECT_EQ(std::filesystem::file_size(base + ".sizes"), 4 * (1 + n));
  EXPECT_TRUE(std::filesystem::exists(base + ".terms"));
  EXPECT_TRUE(std::filesystem::exists(base + ".documents"));
}

TEST_F(IndexBuildCliTest, ImportAndExportCommandLinesThatAreWrong) {
  ExpectFailure(TandemIndex({"import", "some.ciff", "--output", out_}),
                "import needs --format ciff FILE --output DIR");
  ExpectFailure(TandemIndex({"import", "--format", "trec", "some.ciff", "--output", out_}),
                "import needs --format ciff FILE --output DIR (not --format trec)");
  ExpectFailure(TandemIndex({"export", "--format", "lucene", out_, tmp_.path() + "/input/x"}),
                "export needs --format ciff or --format pisa, not lucene");
  ExpectFailure(TandemIndex({"export", "--format", "ciff", tmp_.path() + "/nothing", "x.ciff"}),
                "nothing");
  ProcessResult usage = TandemIndex({"import", "--format", "ciff"});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.err, HasSubstr("tandem-index import --format ciff FILE --output DIR"));
  ProcessResult help = TandemIndex({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("tandem-index export --format ciff DIR OUT.ciff"));
  EXPECT_THAT(help.out, HasSubstr("tandem-index export --format pisa DIR BASE"));
  EXPECT_THAT(help.out, HasSubstr("import: ciff. export: ciff (one file)"));
}

// The manifest names attributes.bin: inspect (and so the node) refuses the index when it is gone
// or comes from another build, instead of passing it and failing every filtered query.
TEST_F(IndexBuildCliTest, InspectRefusesAMissingOrForeignAttributesFile) {
  const std::string corpus = tmp_.path() + "/input/labelled.jsonl";
  const std::string relabelled = tmp_.path() + "/input/relabelled.jsonl";
  std::filesystem::create_directories(tmp_.path() + "/input");
  std::ofstream(corpus) << R"({"_id": "a", "text": "salmon river", "label": "fish"})"
                           "\n"
                        << R"({"_id": "b", "text": "old mill", "label": "mill"})"
                           "\n";
  std::ofstream(relabelled) << R"({"_id": "a", "text": "salmon river", "label": "river"})"
                               "\n"
                            << R"({"_id": "b", "text": "old mill", "label": "town"})"
                               "\n";
  const std::string with = tmp_.path() + "/input/with", other = tmp_.path() + "/input/other";
  for (const std::string& out : {with, other}) {
    ProcessResult built = Build({"--input", out == with ? corpus : relabelled, "--format", "beir",
                                 "--output", out, "--attributes", "label", "--quiet"});
    ASSERT_EQ(built.exit_code, 0) << built.err;
  }
  ProcessResult whole = TandemIndex({"inspect", with});
  ASSERT_EQ(whole.exit_code, 0) << whole.err;
  EXPECT_THAT(whole.out, HasSubstr("checksums  OK (all 5 files, each the one the manifest names)"));

  const std::string attributes = with + "/" + index::kAttributesFile;
  std::filesystem::copy_file(other + "/" + index::kAttributesFile, attributes,
                             std::filesystem::copy_options::overwrite_existing);
  ProcessResult foreign = TandemIndex({"inspect", with});
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_THAT(foreign.err, HasSubstr(absl::StrCat("index file '", attributes, "' is not the one ",
                                                  with, "/manifest.bin names")));
  std::filesystem::remove(attributes);
  ProcessResult missing = TandemIndex({"inspect", with});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_THAT(missing.err, HasSubstr(absl::StrCat("index file '", attributes, "' is missing")));
  EXPECT_THAT(missing.out, Not(HasSubstr("checksums  OK")));
}

TEST_F(IndexBuildCliTest, ShardCutsTheIndexIntoShardsThatKnowTheirPlace) {
  absl::StatusOr<std::unique_ptr<index::Index>> whole = index::Index::Open(out_);
  ASSERT_TRUE(whole.ok());
  const uint32_t n = (*whole)->num_docs();
  const std::string& id = (*whole)->manifest().index_id;
  const std::string shards = tmp_.path() + "/input/shards";
  ProcessResult cut = TandemIndex({"shard", "--shards", "4", out_, shards, "--threads", "2"});
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  // Consecutive ranges, sizes differing by at most one.
  const uint32_t first2 = 2 * (n / 4) + std::min(2u, n % 4),
                 first3 = 3 * (n / 4) + std::min(3u, n % 4);
  EXPECT_THAT(cut.out, HasSubstr(absl::StrCat("sharded ", out_, " into ", shards)));
  EXPECT_THAT(cut.out, HasSubstr(absl::StrCat("4 shards of ", n, " documents:")));
  EXPECT_THAT(cut.out, HasSubstr(absl::StrCat("shard-002  docIDs ", first2, "..", first3 - 1)));

  const std::string shard2 = shards + "/shard-002";
  ProcessResult inspect = TandemIndex({"inspect", shard2});
  ASSERT_EQ(inspect.exit_code, 0) << inspect.err;
  EXPECT_THAT(inspect.out, HasSubstr(absl::StrCat("shard 2 of 4, docIDs ", first2, "..", first3 - 1,
                                                  " of ", n)));
  EXPECT_THAT(inspect.out, HasSubstr(absl::StrCat("the collection's statistics (index ", id,
                                                  "): ", n, " documents")));
  EXPECT_THAT(inspect.out,
              HasSubstr("checksums  OK (all 5 files, each the one the manifest names)"));
  ProcessResult plain = TandemIndex({"inspect", out_});
  EXPECT_THAT(plain.out, HasSubstr("checksums  OK (all 4 files, each the one the manifest names)"));
  EXPECT_THAT(plain.out, Not(HasSubstr("collection's statistics")));
  // lookup gives the idf of the whole index.
  ProcessResult lookup_whole = TandemIndex({"lookup", out_, "river"});
  ProcessResult lookup_shard = TandemIndex({"lookup", shards + "/shard-000", "river"});
  ASSERT_EQ(lookup_shard.exit_code, 0) << lookup_shard.err;
  EXPECT_THAT(lookup_shard.out, HasSubstr(absl::StrCat("(in the collection's ", n, " documents)")));
  const auto idf_line = [](const std::string& out) {
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      if (absl::StartsWith(line, "idf")) return std::string(line);
    }
    return std::string("none");
  };
  EXPECT_EQ(idf_line(lookup_shard.out), idf_line(lookup_whole.out));
  EXPECT_NE(idf_line(lookup_shard.out), "none");

  // tandem-server serves a shard and GetIndexInfo gives its place; its counts are its own.
  absl::StatusOr<std::unique_ptr<index::Index>> part = index::Index::Open(shard2);
  ASSERT_TRUE(part.ok()) << part.status();
  auto server = ServerProcess::Start({"--index", shard2, "--threads", "1"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = NewStub((*server)->address());
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::GetIndexInfoResponse info;
  ASSERT_TRUE(stub->GetIndexInfo(&context, {}, &info).ok());
  EXPECT_EQ(info.index_id(), (*part)->manifest().index_id);
  EXPECT_EQ(info.documents(), first3 - first2);
  EXPECT_EQ(info.postings(), (*part)->stats().num_postings);
  ASSERT_TRUE(info.has_shard());
  EXPECT_EQ(info.shard().shard(), 2u);
  EXPECT_EQ(info.shard().shards(), 4u);
  EXPECT_EQ(info.shard().first_docid(), first2);
  EXPECT_EQ(info.shard().collection_documents(), n);
  EXPECT_EQ(info.shard().collection_average_document_length(), (*whole)->avg_doc_length());
  EXPECT_EQ(info.shard().collection_index_id(), id);

  // A second run replaces the shards of the first whole.
  cut = TandemIndex({"shard", "--shards", "2", out_, shards});
  ASSERT_EQ(cut.exit_code, 0) << cut.err;
  EXPECT_TRUE(std::filesystem::exists(shards + "/shard-001"));
  EXPECT_FALSE(std::filesystem::exists(shards + "/shard-002"));
  ExpectTheTinyIndex();
}

TEST_F(IndexBuildCliTest, ShardCommandLinesThatAreWrong) {
  absl::StatusOr<std::unique_ptr<index::Index>> whole = index::Index::Open(out_);
  ASSERT_TRUE(whole.ok());
  const uint32_t n = (*whole)->num_docs();
  const std::string shards = tmp_.path() + "/input/shards";
  ExpectFailure(TandemIndex({"shard", out_, shards}), "shard needs --shards S, at least 1");
  ExpectFailure(TandemIndex({"shard", "--shards", "0", out_, shards}),
                "shard needs --shards S, at least 1");
  ExpectFailure(TandemIndex({"shard", "--shards", "-3", out_, shards}), "at least 1 (not -3)");
  ExpectFailure(TandemIndex({"shard", "--shards", absl::StrCat(n + 1), out_, shards}),
                absl::StrCat("cannot cut ", n, " documents into ", n + 1,
                             " shards: every shard needs a document (--shards at most ", n,
                             "); nothing was written"));
  ExpectFailure(TandemIndex({"shard", "--shards", "2", tmp_.path() + "/nothing", shards}),
                tmp_.path() + "/nothing/manifest.bin");
  EXPECT_FALSE(std::filesystem::exists(shards));
  // An output that holds anything but shards, such as the index itself, is left alone.
  ExpectFailure(TandemIndex({"shard", "--shards", "2", out_, out_}),
                "' is not empty and holds no shards; refusing to replace it");
  // A shard is not cut again.
  ASSERT_EQ(TandemIndex({"shard", "--shards", "2", out_, shards}).exit_code, 0);
  ExpectFailure(
      TandemIndex({"shard", "--shards", "2", shards + "/shard-001", shards + "2"}),
      absl::StrCat("is already a shard (shard 1 of 2 of index ", (*whole)->manifest().index_id,
                   "); shard the collection's index instead"));
  EXPECT_FALSE(std::filesystem::exists(shards + "2"));
  // A damaged shard does not open: its statistics file is named.
  std::filesystem::remove(shards + "/shard-000/collection_df.bin");
  ProcessResult damaged = TandemIndex({"inspect", shards + "/shard-000"});
  EXPECT_EQ(damaged.exit_code, 1);
  EXPECT_THAT(damaged.err, HasSubstr(shards + "/shard-000/collection_df.bin' is missing"));
  ProcessResult usage = TandemIndex({"shard", "--shards", "2", out_});
  EXPECT_EQ(usage.exit_code, 2);
  EXPECT_THAT(usage.err, HasSubstr("tandem-index shard --shards S DIR OUT"));
}

}  // namespace
}  // namespace tandem::testing
