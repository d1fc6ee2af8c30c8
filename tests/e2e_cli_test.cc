// End-to-end tests of tandem-cli against a real tandem-server: readable and JSON output, batch
// input formats, exit codes and one-line errors.
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"
#include "tests/e2e_suites.h"

namespace tandem::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

class CliE2eTest : public ServedIndexE2eTest {
 protected:
  static ProcessResult Cli(std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--server", server_->address()});
    absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_CLI_BINARY, args, kE2eTimeout, input);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or(ProcessResult{});
  }

  // The rows of a readable result table: {rank, score, external_id, docid}.
  static std::vector<std::vector<std::string>> TableRows(const std::string& out) {
    std::vector<std::vector<std::string>> rows;
    for (absl::string_view line : absl::StrSplit(out, '\n')) {
      std::vector<std::string> cells = absl::StrSplit(line, ' ', absl::SkipEmpty());
      int rank;
      if (cells.size() == 4 && absl::SimpleAtoi(cells[0], &rank)) rows.push_back(cells);
    }
    return rows;
  }

  static void ExpectTable(const std::string& out, const index::SearchResult& expected) {
    const std::vector<std::vector<std::string>> rows = TableRows(out);
    ASSERT_EQ(rows.size(), expected.hits.size()) << out;
    for (size_t i = 0; i < rows.size(); ++i) {
      EXPECT_EQ(rows[i][0], absl::StrCat(i + 1));
      EXPECT_EQ(rows[i][1], absl::StrFormat("%.6f", expected.hits[i].score));
      EXPECT_EQ(rows[i][2], absl::StrCat("doc", expected.hits[i].docid));
      EXPECT_EQ(rows[i][3], absl::StrCat(expected.hits[i].docid));
    }
  }
};

TEST_F(CliE2eTest, SearchPrintsTheRankedTable) {
  const ProcessResult run = Cli({"search", "--k", "7", "--mode", "and", "t1", "t2"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  ExpectTable(run.out, index_->Expected(TextRequest("t1 t2", tandem::v1::QUERY_MODE_AND, 7)));
  EXPECT_THAT(run.out, HasSubstr("7 hits; engine cpu, executed and;"));
  EXPECT_THAT(run.out, HasSubstr("terms: t1 t2"));
}

TEST_F(CliE2eTest, SearchJsonCarriesExactScores) {
  const ProcessResult run =
      Cli({"search", "--json", "--mode=and_or", "--k=25", "--engine=cpu", "t3", "t200"});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  const index::SearchResult expected =
      index_->Expected(TextRequest("t3 t200", tandem::v1::QUERY_MODE_AND_OR, 25));
  ASSERT_EQ(j["hits"].size(), expected.hits.size());
  for (size_t i = 0; i < expected.hits.size(); ++i) {
    EXPECT_EQ(j["hits"][i]["docid"].get<uint32_t>(), expected.hits[i].docid);
    EXPECT_EQ(static_cast<float>(j["hits"][i]["score"].get<double>()), expected.hits[i].score);
    EXPECT_EQ(j["hits"][i]["external_id"], absl::StrCat("doc", expected.hits[i].docid));
  }
  EXPECT_EQ(j["stats"]["engine"], "cpu");
}

TEST_F(CliE2eTest, ServerErrorsAreOneLineAndNonZero) {
  ProcessResult run = Cli({"search", "--k", "20000", "t1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "tandem-cli: INVALID_ARGUMENT: k must be between 1 and 10000, got 20000\n");
  EXPECT_EQ(run.out, "");
  run = Cli({"search", "--bm25-b", "3", "t1"});
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_EQ(run.err, "tandem-cli: INVALID_ARGUMENT: bm25.b must be in [0, 1], got 3\n");
}

TEST_F(CliE2eTest, UsageErrorsExitTwo) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{},
                                             {"frobnicate"},
                                             {"search"},
                                             {"search", "--mode", "xor", "t1"},
                                             {"search", "--engine", "tpu", "t1"},
                                             {"info", "extra"}}) {
    const ProcessResult run = Cli(args);
    EXPECT_EQ(run.exit_code, 2) << absl::StrJoin(args, " ") << ": " << run.err;
    EXPECT_THAT(run.err, StartsWith("tandem-cli: "));
    EXPECT_EQ(std::count(run.err.begin(), run.err.end(), '\n'), 1) << run.err;
  }
}

TEST_F(CliE2eTest, BatchReadsEveryLineFormatFromStdin) {
  const std::string input = "q1\tt1 t2\n701:t5\n\nt7 t8 t9\nbad\t   \n";
  const ProcessResult run = Cli({"batch", "--k", "3"}, input);
  EXPECT_EQ(run.exit_code, 1);  // one query failed
  EXPECT_EQ(run.err, "tandem-cli: 1 of 4 queries failed\n");
  EXPECT_THAT(run.out, HasSubstr("query q1: t1 t2\n"));
  EXPECT_THAT(run.out, HasSubstr("query 701: t5\n"));
  EXPECT_THAT(run.out, HasSubstr("query 4: t7 t8 t9\n"));
  EXPECT_THAT(run.out, HasSubstr("query bad:    \nerror: INVALID_ARGUMENT: text is empty\n"));
  EXPECT_EQ(TableRows(run.out).size(), 9u);  // three queries, three hits each
}

TEST_F(CliE2eTest, BatchJsonFromAFileInSmallCalls) {
  TempDir dir;
  const std::string path = dir.path() + "/queries.tsv";
  std::vector<std::string> texts;
  {
    std::ofstream out(path);
    for (int i = 0; i < 7; ++i) {
      texts.push_back(absl::StrCat("t", i, " t", 10 * i + 3));
      out << "id" << i << "\t" << texts.back() << "\n";
    }
  }
  // --batch-size 3 splits the seven queries over three SearchBatch calls.
  const ProcessResult run = Cli({"batch", "--json", "--batch-size", "3", "--mode", "and_or", path});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::vector<std::string> lines = absl::StrSplit(run.out, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), texts.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    const nlohmann::json j = nlohmann::json::parse(lines[i]);
    EXPECT_EQ(j["id"], absl::StrCat("id", i));
    EXPECT_EQ(j["response"]["request_id"], absl::StrCat("id", i));
    const index::SearchResult expected =
        index_->Expected(TextRequest(texts[i], tandem::v1::QUERY_MODE_AND_OR, 10));
    ASSERT_EQ(j["response"]["hits"].size(), expected.hits.size());
    for (size_t h = 0; h < expected.hits.size(); ++h) {
      EXPECT_EQ(j["response"]["hits"][h]["docid"].get<uint32_t>(), expected.hits[h].docid);
    }
  }
}

TEST_F(CliE2eTest, HealthAndInfo) {
  ProcessResult run = Cli({"health"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(run.out, "SERVING\n");
  run = Cli({"health", "--json", "--service", "tandem.v1.SearchService"});
  EXPECT_EQ(run.exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(run.out)["status"], "SERVING");

  run = Cli({"info"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_THAT(run.out,
              HasSubstr(absl::StrFormat("%-24s%d\n", "documents", index_->index().num_docs())));
  EXPECT_THAT(run.out, HasSubstr("engines                 cpu\n"));
  run = Cli({"info", "--json"});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const nlohmann::json j = nlohmann::json::parse(run.out);
  EXPECT_EQ(j["index_id"], index_->index().manifest().index_id);
  EXPECT_EQ(j["codec"], "pfor");
}

TEST_F(CliE2eTest, UnreachableServerIsAnError) {
  absl::StatusOr<ProcessResult> run =
      RunProcess(TANDEM_CLI_BINARY, {"--server", "127.0.0.1:1", "--timeout", "10s", "health"});
  ASSERT_TRUE(run.ok()) << run.status();
  EXPECT_EQ(run->exit_code, 1);
  EXPECT_THAT(run->err, StartsWith("tandem-cli: UNAVAILABLE: "));
  EXPECT_EQ(std::count(run->err.begin(), run->err.end(), '\n'), 1) << run->err;
}

}  // namespace
}  // namespace tandem::testing
