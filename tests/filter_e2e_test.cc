// End-to-end tests of filtered search (SearchRequest.filter_text and filter) through the real
// tandem-index and tandem-server: a BEIR corpus whose documents carry a label, a year and a topic
// (each missing from some) is indexed with --attributes, and every filtered answer must be the
// unfiltered ranking of the same query restricted to the documents the filter allows, scores bit
// for bit, whether the filter comes as text or as a tree, on every engine the node has, alone or
// in SearchBatch and SearchStream. Bad filters are INVALID_ARGUMENT naming the problem, on an
// index without attributes too; a filter that allows nothing answers no hits.
#include <algorithm>
#include <cstdint>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using tandem::v1::DocumentFilter;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using ::testing::HasSubstr;

constexpr int kDocuments = 400;
constexpr uint32_t kAll = 10000;  // more hits than the collection has documents

// What the corpus says about one document, for the brute-force side of each check.
struct Doc {
  std::string id;
  std::optional<std::string> label;  // "spam" or "ham"
  std::optional<int64_t> year;       // 1998..2005
  std::optional<std::string> topic;  // "grain", "wheat", "corn" or "oil"
};

// A deterministic corpus: text over t0..t9 (left as they are by the default analyzer), every
// attribute missing from some documents.
std::vector<Doc> WriteCorpus(const std::string& path) {
  static const char* const kLabels[] = {"spam", "ham"};
  static const char* const kTopics[] = {"grain", "wheat", "corn", "oil"};
  uint32_t seed = 2002;
  auto next = [&seed] { return (seed = seed * 1103515245u + 12345u) >> 16; };
  std::vector<Doc> docs;
  std::ofstream out(path);
  for (int i = 0; i < kDocuments; ++i) {
    Doc d;
    d.id = absl::StrCat("d", i);
    std::string json = absl::StrCat(R"({"_id": ")", d.id, R"(", "text": ")");
    std::vector<std::string> words;
    for (int w = 0, n = 1 + static_cast<int>(next() % 8); w < n; ++w) {
      words.push_back(absl::StrCat("t", next() % 10));
    }
    absl::StrAppend(&json, absl::StrJoin(words, " "), "\"");
    if (i % 7 != 3) {
      d.label = kLabels[next() % 2];
      absl::StrAppend(&json, R"(, "label": ")", *d.label, "\"");
    }
    if (i % 11 != 5) {
      d.year = 1998 + static_cast<int64_t>(next() % 8);
      absl::StrAppend(&json, R"(, "year": )", *d.year);
    }
    if (i % 5 != 2) {
      d.topic = kTopics[next() % 4];
      absl::StrAppend(&json, R"(, "topic": ")", *d.topic, "\"");
    }
    out << json << "}\n";
    docs.push_back(std::move(d));
  }
  return docs;
}

DocumentFilter Equals(const std::string& field, const std::string& value) {
  DocumentFilter f;
  f.mutable_equals()->set_field(field);
  f.mutable_equals()->set_value(value);
  return f;
}
DocumentFilter In(const std::string& field, const std::vector<std::string>& values) {
  DocumentFilter f;
  f.mutable_in()->set_field(field);
  for (const std::string& v : values) f.mutable_in()->add_values(v);
  return f;
}
DocumentFilter Range(const std::string& field, std::optional<int64_t> min,
                     std::optional<int64_t> max) {
  DocumentFilter f;
  f.mutable_range()->set_field(field);
  if (min) f.mutable_range()->set_min(*min);
  if (max) f.mutable_range()->set_max(*max);
  return f;
}
DocumentFilter And(const std::vector<DocumentFilter>& children) {
  DocumentFilter f;
  f.mutable_and_();  // set even without children
  for (const DocumentFilter& c : children) *f.mutable_and_()->add_filters() = c;
  return f;
}
DocumentFilter Or(const std::vector<DocumentFilter>& children) {
  DocumentFilter f;
  f.mutable_or_();
  for (const DocumentFilter& c : children) *f.mutable_or_()->add_filters() = c;
  return f;
}
DocumentFilter Not(const DocumentFilter& child) {
  DocumentFilter f;
  *f.mutable_not_() = child;
  return f;
}

// One filter in both forms, and the documents it allows.
struct FilterCase {
  std::string text;
  DocumentFilter tree;
  std::function<bool(const Doc&)> allows;
};

std::vector<FilterCase> FilterCases() {
  auto is = [](const std::optional<std::string>& v, const char* value) {
    return v.has_value() && *v == value;
  };
  return {
      {"label = spam", Equals("label", "spam"), [=](const Doc& d) { return is(d.label, "spam"); }},
      {"label = spam AND year >= 2002",
       And({Equals("label", "spam"), Range("year", 2002, std::nullopt)}),
       [=](const Doc& d) { return is(d.label, "spam") && d.year && *d.year >= 2002; }},
      {"topic IN (grain, wheat) OR year = 1998..1999",
       Or({In("topic", {"grain", "wheat"}), Range("year", 1998, 1999)}),
       [=](const Doc& d) {
         return is(d.topic, "grain") || is(d.topic, "wheat") ||
                (d.year && *d.year >= 1998 && *d.year <= 1999);
       }},
      // NOT keeps the documents without a label.
      {"NOT label = ham", Not(Equals("label", "ham")),
       [=](const Doc& d) { return !is(d.label, "ham"); }},
      {"(year < 2001 OR topic = corn) AND NOT topic = oil AND label = ham",
       And({Or({Range("year", std::nullopt, 2000), Equals("topic", "corn")}),
            Not(Equals("topic", "oil")), Equals("label", "ham")}),
       [=](const Doc& d) {
         return ((d.year && *d.year < 2001) || is(d.topic, "corn")) && !is(d.topic, "oil") &&
                is(d.label, "ham");
       }},
  };
}

void ExpectSameHits(const SearchResponse& actual, const std::vector<tandem::v1::Hit>& expected) {
  ASSERT_EQ(actual.hits_size(), static_cast<int>(expected.size()));
  for (size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(absl::StrCat("rank ", i + 1));
    EXPECT_EQ(actual.hits(i).docid(), expected[i].docid());
    EXPECT_EQ(actual.hits(i).external_id(), expected[i].external_id());
    EXPECT_EQ(actual.hits(i).score(), expected[i].score());  // bit for bit: scores are unchanged
  }
}

class FilterE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new base::TempDir();
    const std::string corpus = tmp_->path() + "/corpus.jsonl";
    docs_ = new std::vector<Doc>(WriteCorpus(corpus));
    for (const bool attributes : {true, false}) {
      const std::string out = tmp_->path() + (attributes ? "/index" : "/plain");
      std::vector<std::string> args = {"build", "--input",  corpus, "--format",
                                       "beir",  "--output", out,    "--quiet"};
      if (attributes) args.insert(args.end(), {"--attributes", "label,year:integer,topic"});
      absl::StatusOr<ProcessResult> built = RunProcess(TANDEM_INDEX_BINARY, args);
      ASSERT_TRUE(built.ok()) << built.status();
      ASSERT_EQ(built->exit_code, 0) << built->err;
      auto server = ServerProcess::Start({"--index", out, "--threads", "2"});
      ASSERT_TRUE(server.ok()) << server.status();
      (attributes ? server_ : plain_server_) = server->release();
    }
  }
  static void TearDownTestSuite() {
    delete server_;
    delete plain_server_;
    delete docs_;
    delete tmp_;
  }
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    ASSERT_NE(plain_server_, nullptr);
    stub_ = NewStub(server_->address());
  }

  static grpc::Status Search(tandem::v1::SearchService::Stub& stub, const SearchRequest& request,
                             SearchResponse* response) {
    return CallSearch(stub, request, response, kE2eTimeout);
  }
  SearchResponse SearchOk(const SearchRequest& request) {
    SearchResponse response;
    grpc::Status status = Search(*stub_, request, &response);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return response;
  }

  // The unfiltered ranking of `request`'s query by the CPU engine, every match, kept to the
  // documents `allows`.
  std::vector<tandem::v1::Hit> Restricted(SearchRequest request,
                                          const std::function<bool(const Doc&)>& allows) {
    request.clear_filter_text();
    request.clear_filter();
    request.set_k(kAll);
    request.set_engine(tandem::v1::ENGINE_HINT_CPU);
    const SearchResponse unfiltered = SearchOk(request);
    std::vector<tandem::v1::Hit> hits;
    for (const tandem::v1::Hit& h : unfiltered.hits()) {
      if (allows((*docs_)[h.docid()])) hits.push_back(h);
    }
    return hits;
  }

  // Expects `request` to fail with INVALID_ARGUMENT and a message holding `message`.
  void ExpectInvalid(const SearchRequest& request, const std::string& message,
                     tandem::v1::SearchService::Stub* stub = nullptr) {
    SCOPED_TRACE(request.ShortDebugString());
    SearchResponse response;
    grpc::Status status = Search(stub != nullptr ? *stub : *stub_, request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << status.error_message();
    EXPECT_THAT(status.error_message(), HasSubstr(message));
  }

  // The engine hints to check: the scheduler's choice, the CPU, and the GPU where the node has one.
  std::vector<tandem::v1::EngineHint> Engines() {
    std::vector<tandem::v1::EngineHint> engines = {tandem::v1::ENGINE_HINT_AUTO,
                                                   tandem::v1::ENGINE_HINT_CPU};
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::GetIndexInfoResponse info;
    EXPECT_TRUE(stub_->GetIndexInfo(&context, {}, &info).ok());
    for (const std::string& e : info.engines()) {
      if (e == "gpu") engines.push_back(tandem::v1::ENGINE_HINT_GPU);
    }
    return engines;
  }

  static base::TempDir* tmp_;
  static std::vector<Doc>* docs_;
  static ServerProcess* server_;
  static ServerProcess* plain_server_;
  std::unique_ptr<tandem::v1::SearchService::Stub> stub_;
};

base::TempDir* FilterE2eTest::tmp_ = nullptr;
std::vector<Doc>* FilterE2eTest::docs_ = nullptr;
ServerProcess* FilterE2eTest::server_ = nullptr;
ServerProcess* FilterE2eTest::plain_server_ = nullptr;

const char* const kQueries[] = {"t1 t2", "t3", "t0 t4 t5 t9"};
constexpr tandem::v1::QueryMode kModes[] = {tandem::v1::QUERY_MODE_OR, tandem::v1::QUERY_MODE_AND,
                                            tandem::v1::QUERY_MODE_AND_OR};

TEST_F(FilterE2eTest, DocIdsFollowTheCorpus) {
  // Restricted() reads each hit's attributes by docID: the index numbers documents in input order.
  SearchResponse r = SearchOk(TextRequest("t1", tandem::v1::QUERY_MODE_OR, kAll));
  ASSERT_GT(r.hits_size(), 0);
  for (const tandem::v1::Hit& h : r.hits()) {
    ASSERT_LT(h.docid(), docs_->size());
    EXPECT_EQ(h.external_id(), (*docs_)[h.docid()].id);
  }
}

TEST_F(FilterE2eTest, FilteredHitsAreTheRankingRestrictedToTheFilter) {
  for (const tandem::v1::EngineHint engine : Engines()) {
    for (const FilterCase& c : FilterCases()) {
      for (const char* query : kQueries) {
        for (tandem::v1::QueryMode mode : kModes) {
          SCOPED_TRACE(absl::StrCat(tandem::v1::EngineHint_Name(engine), " | ", c.text, " | ",
                                    query, " | ", tandem::v1::QueryMode_Name(mode)));
          for (const uint32_t k : {kAll, 5u}) {
            SearchRequest by_text = TextRequest(query, mode, k);
            by_text.set_engine(engine);
            by_text.set_filter_text(c.text);
            SearchRequest by_tree = by_text;
            by_tree.clear_filter_text();
            *by_tree.mutable_filter() = c.tree;
            const SearchResponse text_answer = SearchOk(by_text);
            const SearchResponse tree_answer = SearchOk(by_tree);
            std::vector<tandem::v1::Hit> top = Restricted(by_text, c.allows);
            if (mode == tandem::v1::QUERY_MODE_AND_OR) {
              // AND+OR answers OR when AND finds fewer than k of the allowed documents.
              top = Restricted(TextRequest(query, tandem::v1::QUERY_MODE_AND, kAll), c.allows);
              const bool and_enough = top.size() >= k;
              if (!and_enough) {
                top = Restricted(TextRequest(query, tandem::v1::QUERY_MODE_OR, kAll), c.allows);
              }
              EXPECT_EQ(text_answer.stats().executed_mode(),
                        and_enough ? tandem::v1::QUERY_MODE_AND : tandem::v1::QUERY_MODE_OR);
            }
            top.resize(std::min<size_t>(k, top.size()));
            ExpectSameHits(text_answer, top);
            if (engine == tandem::v1::ENGINE_HINT_GPU) {
              EXPECT_EQ(text_answer.stats().engine(), "gpu");
            }
            ExpectSameHits(tree_answer, {text_answer.hits().begin(), text_answer.hits().end()});
          }
        }
      }
    }
  }
}

TEST_F(FilterE2eTest, TheCasesCutTheRankingsForReal) {
  // Each filter allows some of the OR ranking's documents and refuses others, so the checks above
  // compare something.
  for (const FilterCase& c : FilterCases()) {
    SCOPED_TRACE(c.text);
    const SearchRequest request = TextRequest("t1 t2", tandem::v1::QUERY_MODE_OR, kAll);
    const size_t all = Restricted(request, [](const Doc&) { return true; }).size();
    const size_t allowed = Restricted(request, c.allows).size();
    EXPECT_GT(allowed, 5u);
    EXPECT_LT(allowed, all);
  }
}

TEST_F(FilterE2eTest, SearchBatchCarriesEachQuerysFilter) {
  const std::vector<FilterCase> cases = FilterCases();
  tandem::v1::SearchBatchRequest batch;
  for (size_t i = 0; i < cases.size(); ++i) {
    SearchRequest* r = batch.add_requests();
    *r = TextRequest(kQueries[i % 3], tandem::v1::QUERY_MODE_OR, kAll);
    if (i % 2 == 0) {
      r->set_filter_text(cases[i].text);
    } else {
      *r->mutable_filter() = cases[i].tree;
    }
  }
  // An unfiltered query beside them, and one whose filter fails alone.
  *batch.add_requests() = TextRequest("t1 t2", tandem::v1::QUERY_MODE_OR, kAll);
  *batch.add_requests() = TextRequest("t1 t2", tandem::v1::QUERY_MODE_OR, kAll);
  batch.mutable_requests(batch.requests_size() - 1)->set_filter_text("colour = red");

  tandem::v1::SearchBatchResponse response;
  ASSERT_TRUE(CallSearchBatch(*stub_, batch, &response, kE2eTimeout).ok());
  ASSERT_EQ(response.results_size(), batch.requests_size());
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(cases[i].text);
    ASSERT_EQ(response.results(i).status().code(), 0) << response.results(i).status().message();
    ExpectSameHits(response.results(i).response(), Restricted(batch.requests(i), cases[i].allows));
  }
  const int unfiltered = static_cast<int>(cases.size());
  ASSERT_EQ(response.results(unfiltered).status().code(), 0);
  ExpectSameHits(response.results(unfiltered).response(),
                 Restricted(batch.requests(unfiltered), [](const Doc&) { return true; }));
  const tandem::v1::QueryStatus& failed = response.results(unfiltered + 1).status();
  EXPECT_EQ(failed.code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(failed.message(), HasSubstr("unknown field \"colour\""));
}

TEST_F(FilterE2eTest, SearchStreamCarriesEachQuerysFilter) {
  const std::vector<FilterCase> cases = FilterCases();
  std::vector<SearchRequest> requests;
  for (int round = 0; round < 3; ++round) {
    for (size_t i = 0; i < cases.size(); ++i) {
      SearchRequest r =
          TextRequest(kQueries[(i + round) % 3], tandem::v1::QUERY_MODE_OR, 7 + round);
      if ((i + round) % 2 == 0) {
        r.set_filter_text(cases[i].text);
      } else {
        *r.mutable_filter() = cases[i].tree;
      }
      r.set_request_id(absl::StrCat("r", requests.size()));
      requests.push_back(std::move(r));
    }
  }
  SearchRequest bad = TextRequest("t1", tandem::v1::QUERY_MODE_OR, 10);
  bad.set_filter_text("label = eggs");
  bad.set_request_id("bad");
  requests.push_back(bad);

  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  auto stream = stub_->SearchStream(&context);
  const std::vector<tandem::v1::SearchStreamResponse> responses =
      PipelineOnStream(*stream, requests);
  grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  ASSERT_EQ(responses.size(), requests.size());
  for (size_t n = 0; n + 1 < requests.size(); ++n) {
    SCOPED_TRACE(requests[n].ShortDebugString());
    EXPECT_EQ(responses[n].request_id(), requests[n].request_id());
    ASSERT_EQ(responses[n].status().code(), 0) << responses[n].status().message();
    std::vector<tandem::v1::Hit> expected = Restricted(requests[n], cases[n % cases.size()].allows);
    expected.resize(std::min<size_t>(expected.size(), requests[n].k()));
    ExpectSameHits(responses[n].response(), expected);
  }
  EXPECT_EQ(responses.back().request_id(), "bad");
  EXPECT_EQ(responses.back().status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(responses.back().status().message(), HasSubstr("unknown value \"eggs\""));
}

TEST_F(FilterE2eTest, AFilterThatAllowsNothingAnswersNoHits) {
  SearchRequest by_text = TextRequest("t1 t2", tandem::v1::QUERY_MODE_OR, 10);
  by_text.set_filter_text("label = spam AND label = ham");
  EXPECT_EQ(SearchOk(by_text).hits_size(), 0);
  SearchRequest by_tree = TextRequest("t1 t2", tandem::v1::QUERY_MODE_AND, 10);
  *by_tree.mutable_filter() = And({Equals("topic", "oil"), Not(Equals("topic", "oil"))});
  EXPECT_EQ(SearchOk(by_tree).hits_size(), 0);
}

TEST_F(FilterE2eTest, BadFiltersAreInvalidArgumentNamingTheProblem) {
  auto with_text = [](const std::string& filter) {
    SearchRequest r = TextRequest("t1", tandem::v1::QUERY_MODE_OR, 10);
    r.set_filter_text(filter);
    return r;
  };
  auto with_tree = [](const DocumentFilter& filter) {
    SearchRequest r = TextRequest("t1", tandem::v1::QUERY_MODE_OR, 10);
    *r.mutable_filter() = filter;
    return r;
  };
  ExpectInvalid(with_text("colour = red"), "unknown field \"colour\"");
  ExpectInvalid(with_tree(Equals("colour", "red")), "unknown field \"colour\"");
  ExpectInvalid(with_text("label = eggs"), "unknown value \"eggs\"");
  ExpectInvalid(with_tree(In("topic", {"grain", "rice"})), "unknown value \"rice\"");
  ExpectInvalid(with_text("label = spam AND year > x"), "filter, offset 24: expected an integer");
  ExpectInvalid(with_text("label = spam AND"), "filter, offset 16");
  ExpectInvalid(with_tree(Range("label", 1, 2)), "keyword field \"label\"");
  ExpectInvalid(with_tree(DocumentFilter()), "filter: a node with nothing set");
  ExpectInvalid(with_tree(And({})), "filter: an empty and node");
  ExpectInvalid(with_tree(Or({Equals("label", "spam"), Or({})})), "filter: an empty or node");

  SearchRequest both = with_text("label = spam");
  *both.mutable_filter() = Equals("label", "spam");
  ExpectInvalid(both, "give filter_text or filter, not both");

  // An index built without --attributes refuses every filter, and still answers unfiltered.
  std::unique_ptr<tandem::v1::SearchService::Stub> plain = NewStub(plain_server_->address());
  ExpectInvalid(with_text("label = spam"), "this index stores no attributes", plain.get());
  ExpectInvalid(with_tree(Equals("label", "spam")), "this index stores no attributes", plain.get());
  SearchResponse unfiltered;
  EXPECT_TRUE(Search(*plain, TextRequest("t1", tandem::v1::QUERY_MODE_OR, 10), &unfiltered).ok());
  EXPECT_GT(unfiltered.hits_size(), 0);
}

}  // namespace
}  // namespace tandem::testing
