// Ranking end to end over the tiny corpus checked into tests/data/tiny (PISA's clueweb1k idea): the
// real tandem-index builds it, then cpu::DaatEngine (both OR algorithms), cpu::ReferenceEngine and
// the real tandem-server must give the answers in expected.tsv, which make_expected.py computed
// from the text alone. Needs nothing from ../shared/data.
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cpu/daat_engine.h"
#include "cpu/reference_engine.h"
#include "gtest/gtest.h"
#include "index/engine.h"
#include "index/index.h"
#include "index/query.h"
#include "server/request_validation.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

// The modes and k of every query in expected.tsv (make_expected.py's MODES and KS).
constexpr index::QueryMode kModes[] = {index::QueryMode::kAnd, index::QueryMode::kOr,
                                       index::QueryMode::kAndOr};
constexpr uint32_t kKs[] = {3, 10};
constexpr double kRelativeTolerance = 1e-6;

std::string TinyDir() {
  const char* source = std::getenv("TANDEM_SOURCE_DIR");
  return absl::StrCat(source != nullptr ? source : ".", "/tests/data/tiny");
}

struct Answer {
  std::string external_id;
  float score = 0.0f;
};

// One query in one mode with one k, and its known answer (empty: no hits).
struct Case {
  std::string query_id;
  std::string text;
  index::QueryMode mode = index::QueryMode::kOr;
  uint32_t k = 10;
  std::vector<Answer> expected;

  std::string Name() const {
    return absl::StrCat(query_id, " '", text, "' ", index::QueryModeName(mode), " k=", k);
  }
};

absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line[0] != '#') lines.push_back(line);
  }
  return lines;
}

// Every query of queries.tsv in every mode and k, with the hits expected.tsv lists for it.
absl::StatusOr<std::vector<Case>> ReadCases() {
  using Key = std::tuple<std::string, index::QueryMode, uint32_t>;
  absl::StatusOr<std::vector<std::string>> queries = ReadLines(TinyDir() + "/queries.tsv");
  if (!queries.ok()) return queries.status();
  absl::StatusOr<std::vector<std::string>> expected = ReadLines(TinyDir() + "/expected.tsv");
  if (!expected.ok()) return expected.status();

  std::map<Key, std::vector<Answer>> answers;
  for (const std::string& line : *expected) {
    const std::vector<std::string> f = absl::StrSplit(line, '\t');
    Key key;
    uint32_t rank = 0;
    Answer answer;
    if (f.size() != 6 || !index::ParseQueryMode(f[1], &std::get<1>(key)) ||
        !absl::SimpleAtoi(f[2], &std::get<2>(key)) || !absl::SimpleAtoi(f[3], &rank) ||
        !absl::SimpleAtof(f[5], &answer.score)) {
      return absl::DataLossError(absl::StrCat("expected.tsv: bad line '", line, "'"));
    }
    std::get<0>(key) = f[0];
    answer.external_id = f[4];
    std::vector<Answer>& hits = answers[key];
    if (rank != hits.size() + 1) {
      return absl::DataLossError(absl::StrCat("expected.tsv: rank out of order: '", line, "'"));
    }
    hits.push_back(std::move(answer));
  }

  std::vector<Case> cases;
  for (const std::string& line : *queries) {
    const std::vector<std::string> f = absl::StrSplit(line, absl::MaxSplits('\t', 1));
    if (f.size() != 2) {
      return absl::DataLossError(absl::StrCat("queries.tsv: bad line '", line, "'"));
    }
    for (index::QueryMode mode : kModes) {
      for (uint32_t k : kKs) {
        Case c;
        c.query_id = f[0];
        c.text = f[1];
        c.mode = mode;
        c.k = k;
        if (auto it = answers.find({c.query_id, mode, k}); it != answers.end()) {
          c.expected = std::move(it->second);
          answers.erase(it);
        }
        cases.push_back(std::move(c));
      }
    }
  }
  if (!answers.empty()) {
    return absl::DataLossError(absl::StrCat("expected.tsv: answers for ",
                                            std::get<0>(answers.begin()->first),
                                            " in a mode, k or query that queries.tsv lacks"));
  }
  return cases;
}

void ExpectAnswers(const std::vector<Answer>& got, const std::vector<Answer>& expected) {
  ASSERT_EQ(got.size(), expected.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].external_id, expected[i].external_id) << "rank " << i + 1;
    EXPECT_NEAR(got[i].score, expected[i].score, kRelativeTolerance * std::fabs(expected[i].score))
        << "rank " << i + 1 << " (" << expected[i].external_id << ")";
  }
}

class TinyCorpusTest : public ::testing::Test {
 protected:
  struct Shared {
    std::vector<Case> cases;
    TempDir tmp;
    std::unique_ptr<index::Index> index;
    // DaatEngine with MaxScore OR, DaatEngine with exhaustive OR, ReferenceEngine.
    std::vector<std::unique_ptr<index::Engine>> engines;
    std::vector<std::string> engine_names;
    std::unique_ptr<ServerProcess> server;
  };

  static void SetUpTestSuite() {
    auto shared = std::make_unique<Shared>();
    absl::StatusOr<std::vector<Case>> cases = ReadCases();
    ASSERT_TRUE(cases.ok()) << cases.status();
    shared->cases = *std::move(cases);

    const std::string dir = shared->tmp.path() + "/index";
    absl::StatusOr<ProcessResult> built = RunProcess(
        TANDEM_INDEX_BINARY, {"build", "--input", TinyDir() + "/corpus.jsonl", "--format", "beir",
                              "--output", dir, "--strict", "--quiet", "--threads", "1"});
    ASSERT_TRUE(built.ok()) << built.status();
    ASSERT_EQ(built->exit_code, 0) << built->err;

    absl::StatusOr<std::unique_ptr<index::Index>> index = index::Index::Open(dir);
    ASSERT_TRUE(index.ok()) << index.status();
    shared->index = *std::move(index);
    for (cpu::OrAlgorithm algorithm : cpu::AllOrAlgorithms()) {
      auto engine = cpu::DaatEngine::Create(*shared->index, {.or_algorithm = algorithm});
      ASSERT_TRUE(engine.ok()) << engine.status();
      shared->engines.push_back(*std::move(engine));
      shared->engine_names.push_back(absl::StrCat("cpu/", cpu::OrAlgorithmName(algorithm)));
    }
    shared->engines.push_back(std::make_unique<cpu::ReferenceEngine>(*shared->index));
    shared->engine_names.push_back("reference");

    auto server = ServerProcess::Start({"--index", dir, "--threads", "2"});
    ASSERT_TRUE(server.ok()) << server.status();
    shared->server = *std::move(server);
    shared_ = shared.release();
  }
  static void TearDownTestSuite() {
    delete shared_;
    shared_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(shared_, nullptr) << "the suite's set-up failed";
    stub_ = NewStub(shared_->server->address());
  }

  static const std::vector<Case>& cases() { return shared_->cases; }
  // The known answer to `text` in `mode` with `k`; fails the test when queries.tsv lacks the query.
  static std::vector<Answer> Known(const std::string& text, index::QueryMode mode, uint32_t k) {
    for (const Case& c : cases()) {
      if (c.text == text && c.mode == mode && c.k == k) return c.expected;
    }
    ADD_FAILURE() << "no query '" << text << "' in queries.tsv";
    return {};
  }
  static size_t num_engines() { return shared_->engines.size(); }
  static const std::string& engine_name(size_t e) { return shared_->engine_names[e]; }

  // The answer of engine `e` (an index into Shared::engines) to `text`, analyzed as the server
  // analyzes it.
  static std::vector<Answer> EngineSearch(size_t e, const std::string& text, index::QueryMode mode,
                                          uint32_t k) {
    index::Query query;
    query.mode = mode;
    query.k = k;
    std::vector<std::string> terms;
    shared_->index->analyzer().Analyze(text, &terms);
    for (std::string& t : terms) query.terms.push_back({.term = std::move(t)});
    absl::StatusOr<index::SearchResult> result =
        shared_->engines[e]->Search(query, index::SearchContext{});
    EXPECT_TRUE(result.ok()) << result.status();
    std::vector<Answer> answers;
    if (!result.ok()) return answers;
    for (const index::Hit& hit : result->hits) {
      answers.push_back({std::string(shared_->index->external_id(hit.docid)), hit.score});
    }
    return answers;
  }

  std::vector<Answer> ServerSearch(const std::string& text, index::QueryMode mode, uint32_t k) {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::SearchResponse response;
    const grpc::Status status =
        stub_->Search(&context, TextRequest(text, server::ToProtoMode(mode), k), &response);
    EXPECT_TRUE(status.ok()) << status.error_code() << ": " << status.error_message();
    std::vector<Answer> answers;
    for (const tandem::v1::Hit& hit : response.hits()) {
      answers.push_back({hit.external_id(), hit.score()});
    }
    return answers;
  }

  static Shared* shared_;
  std::unique_ptr<tandem::v1::SearchService::Stub> stub_;
};

TinyCorpusTest::Shared* TinyCorpusTest::shared_ = nullptr;

TEST_F(TinyCorpusTest, IndexHoldsEveryDocument) {
  absl::StatusOr<std::vector<std::string>> corpus = ReadLines(TinyDir() + "/corpus.jsonl");
  ASSERT_TRUE(corpus.ok()) << corpus.status();
  EXPECT_EQ(shared_->index->num_docs(), corpus->size());
}

TEST_F(TinyCorpusTest, EnginesGiveTheKnownAnswers) {
  for (const Case& c : cases()) {
    for (size_t e = 0; e < num_engines(); ++e) {
      SCOPED_TRACE(absl::StrCat(c.Name(), " on ", engine_name(e)));
      ExpectAnswers(EngineSearch(e, c.text, c.mode, c.k), c.expected);
    }
  }
}

TEST_F(TinyCorpusTest, ServerGivesTheKnownAnswers) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.Name());
    ExpectAnswers(ServerSearch(c.text, c.mode, c.k), c.expected);
  }
}

// SearchRequest.fields: each hit carries the stored fields asked for ("*": all), nothing else.
TEST_F(TinyCorpusTest, ServerReturnsTheStoredFieldsAskedFor) {
  auto search = [&](std::vector<std::string> fields, tandem::v1::SearchResponse* response) {
    tandem::v1::SearchRequest request = TextRequest("salmon", tandem::v1::QUERY_MODE_OR, 10);
    for (std::string& f : fields) request.add_fields(std::move(f));
    return CallSearch(*stub_, request, response, kE2eTimeout);
  };
  for (const std::vector<std::string>& fields :
       std::vector<std::vector<std::string>>{{"title"}, {"*"}, {"title", "nope"}}) {
    tandem::v1::SearchResponse response;
    ASSERT_TRUE(search(fields, &response).ok());
    ASSERT_EQ(response.hits_size(), 6);
    for (const tandem::v1::Hit& hit : response.hits()) {
      SCOPED_TRACE(hit.external_id());
      const auto stored = shared_->index->stored_fields(hit.docid());
      ASSERT_EQ(stored.size(), 1u);  // BEIR keeps the title
      ASSERT_EQ(hit.fields_size(), 1);
      EXPECT_EQ(hit.fields(0).name(), "title");
      EXPECT_EQ(hit.fields(0).value(), stored[0].second);
      if (hit.external_id() == "river-01") EXPECT_EQ(hit.fields(0).value(), "salmon run");
    }
  }
  for (const std::vector<std::string>& fields :
       std::vector<std::vector<std::string>>{{}, {"nope"}, {"Title"}}) {
    tandem::v1::SearchResponse response;
    ASSERT_TRUE(search(fields, &response).ok());
    for (const tandem::v1::Hit& hit : response.hits()) EXPECT_EQ(hit.fields_size(), 0);
  }
  tandem::v1::SearchResponse response;
  grpc::Status status = search({""}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "fields: a field name has 1 to 128 bytes, got 0");
  status = search(std::vector<std::string>(33, "title"), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(status.error_message(), "fields names 33 stored fields, at most 32");
}

TEST_F(TinyCorpusTest, StopWordsOnlyQueryHasNoHits) {
  const std::string text = "the and of it";
  std::vector<std::string> terms;
  shared_->index->analyzer().Analyze(text, &terms);
  EXPECT_TRUE(terms.empty());
  for (index::QueryMode mode : kModes) {
    SCOPED_TRACE(index::QueryModeName(mode));
    for (size_t e = 0; e < num_engines(); ++e) {
      EXPECT_TRUE(EngineSearch(e, text, mode, 10).empty()) << engine_name(e);
    }
    EXPECT_TRUE(ServerSearch(text, mode, 10).empty());
  }
}

TEST_F(TinyCorpusTest, MissingTermEmptiesAndButNotOr) {
  // "salmon" matches six documents; "volcano" none.
  const std::vector<Answer> salmon = Known("salmon", index::QueryMode::kOr, 10);
  ASSERT_EQ(salmon.size(), 6u);
  for (size_t e = 0; e < num_engines(); ++e) {
    SCOPED_TRACE(engine_name(e));
    EXPECT_TRUE(EngineSearch(e, "salmon volcano", index::QueryMode::kAnd, 10).empty());
    ExpectAnswers(EngineSearch(e, "salmon volcano", index::QueryMode::kOr, 10), salmon);
    ExpectAnswers(EngineSearch(e, "salmon volcano", index::QueryMode::kAndOr, 10), salmon);
  }
  EXPECT_TRUE(ServerSearch("salmon volcano", index::QueryMode::kAnd, 10).empty());
  ExpectAnswers(ServerSearch("salmon volcano", index::QueryMode::kOr, 10), salmon);
  ExpectAnswers(ServerSearch("salmon volcano", index::QueryMode::kAndOr, 10), salmon);
}

TEST_F(TinyCorpusTest, KLargerThanTheMatchesReturnsEveryMatch) {
  int checked = 0;
  for (const Case& c : cases()) {
    if (c.k != 10 || c.expected.size() >= c.k) continue;  // every match is in the answer
    SCOPED_TRACE(c.Name() + " with k=10000");
    for (size_t e = 0; e < num_engines(); ++e) {
      SCOPED_TRACE(engine_name(e));
      ExpectAnswers(EngineSearch(e, c.text, c.mode, index::kMaxK), c.expected);
    }
    ExpectAnswers(ServerSearch(c.text, c.mode, index::kMaxK), c.expected);
    ++checked;
  }
  EXPECT_GT(checked, 10);
}

}  // namespace
}  // namespace tandem::testing
