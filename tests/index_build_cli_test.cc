// tandem-index build on inputs a user gets wrong: the wrong --format, a collection with many
// malformed documents, repeated external ids, nothing to read. Each fails with exit status 1 and
// one line that says what to do, and the index already at --output is served as before; --format
// auto says which format it picked.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using ::testing::HasSubstr;

std::string Source(const std::string& relative) {
  const char* source = std::getenv("TANDEM_SOURCE_DIR");
  return absl::StrCat(source != nullptr ? source : ".", "/", relative);
}

ProcessResult Build(std::vector<std::string> args) {
  args.insert(args.begin(), "build");
  absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_INDEX_BINARY, args);
  EXPECT_TRUE(run.ok()) << run.status();
  return run.ok() ? *run : ProcessResult{.exit_code = -1};
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
  EXPECT_THAT(Build(bogus).err,
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

}  // namespace
}  // namespace tandem::testing
