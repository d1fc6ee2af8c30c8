// tandem-bench-query over a small real index: each timed query's time recorded exactly or, with
// --whole-microseconds, truncated to whole microseconds as PISA's queries tool records it; its
// per-query file and its JSON agree; command lines that are wrong fail with one line.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using ::testing::HasSubstr;

constexpr int kQueries = 40;
constexpr int kRuns = 2;

class BenchQueryCliTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    index_ = E2eIndex::Build().release();
    ASSERT_NE(index_, nullptr);
    tmp_ = new TempDir();
    std::ofstream queries(Path("queries.txt"));
    for (int q = 0; q < kQueries; ++q) {
      queries << q << ":t" << q % 7 << " t" << (q * 13) % 50 << " t" << (q * 29) % 120 << "\n";
    }
  }
  static void TearDownTestSuite() {
    delete tmp_;
    delete index_;
  }
  void SetUp() override { ASSERT_NE(index_, nullptr); }

  static std::string Path(const std::string& name) { return absl::StrCat(tmp_->path(), "/", name); }

  // One OR row (MaxScore, k 10) on one thread, 5 queries checked against the reference scorer.
  static ProcessResult Bench(std::vector<std::string> extra) {
    std::vector<std::string> args = absl::StrSplit(
        "--modes or --ks 10 --or_algorithms maxscore --threads 1 --throughput=false --verify 5 "
        "--timed_from term-ids",
        ' ');
    args.insert(args.end(), {"--index", index_->dir(), "--queries", Path("queries.txt"), "--runs",
                             std::to_string(kRuns)});
    args.insert(args.end(), extra.begin(), extra.end());
    absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_BENCH_QUERY_BINARY, args, kE2eTimeout);
    EXPECT_TRUE(run.ok()) << run.status();
    return run.value_or(ProcessResult{});
  }

  // The per-query file's microseconds column, as written.
  static std::vector<std::string> Micros(const std::string& path) {
    std::ifstream in(path);
    std::string line;
    std::getline(in, line);
    EXPECT_EQ(line, "mode\tk\talgorithm\tqid\trun\tusec");
    std::vector<std::string> micros;
    while (std::getline(in, line)) {
      std::vector<std::string> cells = absl::StrSplit(line, '\t');
      EXPECT_EQ(cells.size(), 6u) << line;
      if (cells.size() == 6) micros.push_back(cells[5]);
    }
    return micros;
  }

  static nlohmann::json Json(const std::string& path) {
    std::ifstream in(path);
    return nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  }

  static E2eIndex* index_;
  static TempDir* tmp_;
};

E2eIndex* BenchQueryCliTest::index_ = nullptr;
TempDir* BenchQueryCliTest::tmp_ = nullptr;

// The mean of the per-query file's times equals the JSON's latency mean.
void ExpectSameMean(const std::vector<std::string>& micros, const nlohmann::json& row) {
  double sum = 0;
  for (const std::string& m : micros) {
    double v;
    ASSERT_TRUE(absl::SimpleAtod(m, &v)) << m;
    sum += v;
  }
  const double mean_us = row["latency_seconds"]["mean"].get<double>() * 1e6;
  EXPECT_NEAR(sum / static_cast<double>(micros.size()), mean_us, 1e-3 + 1e-4 * mean_us);
}

TEST_F(BenchQueryCliTest, WholeMicrosecondsTruncatesEveryTimedQuery) {
  const ProcessResult r = Bench(
      {"--whole_microseconds", "--per_query", Path("whole.tsv"), "--json", Path("whole.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> micros = Micros(Path("whole.tsv"));
  ASSERT_EQ(micros.size(), static_cast<size_t>(kQueries * kRuns));
  for (const std::string& m : micros) {
    int64_t whole;
    EXPECT_TRUE(absl::SimpleAtoi(m, &whole)) << "not a whole count of microseconds: " << m;
    EXPECT_GE(whole, 0);
  }
  const nlohmann::json j = Json(Path("whole.json"));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["queries"]["query_time_resolution"], "whole microseconds, truncated");
  ASSERT_EQ(j["results"].size(), 1u);
  EXPECT_EQ(j["results"][0]["verified_against_reference"], 5);
  ExpectSameMean(micros, j["results"][0]);
}

TEST_F(BenchQueryCliTest, ExactTimesByDefault) {
  const ProcessResult r = Bench({"--per_query", Path("exact.tsv"), "--json", Path("exact.json")});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> micros = Micros(Path("exact.tsv"));
  ASSERT_EQ(micros.size(), static_cast<size_t>(kQueries * kRuns));
  // The steady clock counts nanoseconds: some of 80 times are not whole microseconds.
  int fractional = 0;
  for (const std::string& m : micros) fractional += m.find('.') != std::string::npos;
  EXPECT_GT(fractional, 0);
  const nlohmann::json j = Json(Path("exact.json"));
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["queries"]["query_time_resolution"], "exact");
  ASSERT_EQ(j["results"].size(), 1u);
  ExpectSameMean(micros, j["results"][0]);
}

TEST_F(BenchQueryCliTest, WrongCommandLinesFailWithOneLine) {
  const struct {
    std::vector<std::string> args;
    std::string says;
  } cases[] = {
      {{"--runs", "0"}, "--runs must be >= 1"},
      {{"--timed_from", "bytes"}, "--timed-from takes text or term-ids"},
      {{"--share", "3/2"}, "share"},
      {{"--per_query", "/nonexistent-dir/q.tsv"}, "cannot write --per-query"},
  };
  for (const auto& c : cases) {
    const ProcessResult r = Bench(c.args);
    EXPECT_NE(r.exit_code, 0) << c.says;
    EXPECT_THAT(r.err, HasSubstr(c.says));
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace
}  // namespace tandem::testing
