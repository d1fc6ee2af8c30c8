#include "server/request_validation.h"

#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

using tandem::v1::SearchRequest;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class RequestValidationTest : public ::testing::Test {
 protected:
  // Requests are prepared against a small index with the default analyzer.
  const index::Index& index() const { return testing::SmallIndex(); }

  absl::StatusOr<scheduler::QueryTask> Parse(const SearchRequest& request) {
    return ParseSearchRequest(request, index(), limits_);
  }

  // Expects INVALID_ARGUMENT whose message contains `field`.
  void ExpectInvalid(const SearchRequest& request, const std::string& field) {
    absl::StatusOr<scheduler::QueryTask> task = Parse(request);
    ASSERT_FALSE(task.ok()) << request.DebugString();
    EXPECT_EQ(task.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(task.status().message()), HasSubstr(field));
  }

  static SearchRequest Text(const std::string& text) {
    SearchRequest r;
    r.set_text(text);
    return r;
  }

  RequestLimits limits_;
};

std::vector<std::string> Terms(const scheduler::QueryTask& task) {
  std::vector<std::string> terms;
  for (const index::QueryTerm& t : task.query.query().terms) terms.push_back(t.term);
  return terms;
}

TEST_F(RequestValidationTest, TextIsAnalyzedWithTheIndexAnalyzerAndDefaultsApply) {
  absl::StatusOr<scheduler::QueryTask> task = Parse(Text("The running dogs of t7"));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_THAT(Terms(*task), ElementsAre("run", "dog", "t7"));
  EXPECT_EQ(task->query.query().k, 10u);
  EXPECT_EQ(task->query.query().mode, index::QueryMode::kOr);
  EXPECT_EQ(task->engine, scheduler::EnginePreference::kAuto);
  EXPECT_EQ(task->query.query().bm25.k1, 0.9f);
  EXPECT_EQ(task->query.query().bm25.b, 0.4f);
}

TEST_F(RequestValidationTest, RepeatedTermsAreMergedWithSummedWeight) {
  absl::StatusOr<scheduler::QueryTask> task = Parse(Text("t1 t2 t1"));
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_THAT(Terms(*task), ElementsAre("t1", "t2"));
  EXPECT_EQ(task->query.query().terms[0].weight, 2.0f);
}

TEST_F(RequestValidationTest, StopWordsOnlyIsValidAndEmpty) {
  absl::StatusOr<scheduler::QueryTask> task = Parse(Text("the and of"));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_TRUE(task->query.query().terms.empty());
}

TEST_F(RequestValidationTest, EmptyQueriesAreRejected) {
  ExpectInvalid(SearchRequest(), "query is not set");
  ExpectInvalid(Text(""), "text is empty");
  ExpectInvalid(Text(" \t\n "), "text is empty");
  SearchRequest empty_list;
  empty_list.mutable_terms();
  ExpectInvalid(empty_list, "terms.terms is empty");
}

TEST_F(RequestValidationTest, KRange) {
  SearchRequest r = Text("t1");
  r.set_k(20000);
  absl::StatusOr<scheduler::QueryTask> task = Parse(r);
  ASSERT_FALSE(task.ok());
  EXPECT_EQ(task.status().message(), "k must be between 1 and 10000, got 20000");
  r.set_k(10000);
  EXPECT_TRUE(Parse(r).ok());
  r.set_k(1);
  EXPECT_TRUE(Parse(r).ok());
}

TEST_F(RequestValidationTest, TermAndByteLimits) {
  std::string text;
  for (int i = 0; i < 65; ++i) absl::StrAppend(&text, "t", i, " ");
  ExpectInvalid(Text(text), "65 terms, more than the limit of 64");
  limits_.max_query_terms = 65;
  EXPECT_TRUE(Parse(Text(text)).ok());
  // Stop words do not count: the limit applies after analysis.
  limits_.max_query_terms = 2;
  EXPECT_TRUE(Parse(Text("the t1 of t2 and")).ok());
  limits_.max_query_terms = 64;

  ExpectInvalid(Text(std::string(4097, 'a')), "4097 bytes, more than the limit of 4096");
  EXPECT_TRUE(Parse(Text(std::string(4096, 'a'))).ok());
}

TEST_F(RequestValidationTest, PreAnalyzedTerms) {
  SearchRequest r;
  auto* a = r.mutable_terms()->add_terms();
  a->set_term("t1");
  auto* b = r.mutable_terms()->add_terms();
  b->set_term("T2");  // taken as is: the caller analyzed it
  b->set_weight(2.5f);
  absl::StatusOr<scheduler::QueryTask> task = Parse(r);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_THAT(Terms(*task), ElementsAre("t1", "T2"));
  EXPECT_EQ(task->query.query().terms[0].weight, 1.0f);  // 0 (unset) means 1
  EXPECT_EQ(task->query.query().terms[1].weight, 2.5f);

  b->set_weight(-1.0f);
  ExpectInvalid(r, "terms.terms[1].weight must be in [0, 1e+06] (0: 1), got -1");
  b->set_weight(3.4e38f);  // finite, but three of them ranked every document as inf
  ExpectInvalid(r, "terms.terms[1].weight must be in [0, 1e+06]");
  b->set_weight(1e6f);
  EXPECT_TRUE(Parse(r).ok());
  b->set_weight(std::numeric_limits<float>::quiet_NaN());
  ExpectInvalid(r, "terms.terms[1].weight");
  b->set_weight(std::numeric_limits<float>::infinity());
  ExpectInvalid(r, "terms.terms[1].weight");
  b->set_weight(1.0f);
  b->clear_term();
  ExpectInvalid(r, "terms.terms[1].term is empty");

  SearchRequest long_id;
  long_id.set_text("t1");
  long_id.set_request_id(std::string(kMaxRequestIdBytes, 'x'));
  EXPECT_TRUE(Parse(long_id).ok());
  long_id.set_request_id(std::string(kMaxRequestIdBytes + 1, 'x'));
  ExpectInvalid(long_id, "request_id has 257 bytes, at most 256");

  SearchRequest many;
  for (int i = 0; i < 65; ++i) many.mutable_terms()->add_terms()->set_term(absl::StrCat("t", i));
  ExpectInvalid(many, "terms.terms has 65 terms");
  SearchRequest long_terms;
  long_terms.mutable_terms()->add_terms()->set_term(std::string(3000, 'x'));
  long_terms.mutable_terms()->add_terms()->set_term(std::string(3000, 'y'));
  ExpectInvalid(long_terms, "terms.terms (together) is 6000 bytes");
}

TEST_F(RequestValidationTest, Bm25Parameters) {
  SearchRequest r = Text("t1");
  r.mutable_bm25()->set_k1(1.2f);
  absl::StatusOr<scheduler::QueryTask> task = Parse(r);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->query.query().bm25.k1, 1.2f);
  EXPECT_EQ(task->query.query().bm25.b, 0.4f);  // unset keeps the default
  r.mutable_bm25()->set_k1(-0.5f);
  ExpectInvalid(r, "bm25.k1 must be in [0, 100]");
  r.mutable_bm25()->set_k1(std::numeric_limits<float>::quiet_NaN());
  ExpectInvalid(r, "bm25.k1");
  r.mutable_bm25()->set_k1(0.9f);
  r.mutable_bm25()->set_b(1.5f);
  ExpectInvalid(r, "bm25.b must be in [0, 1]");
  r.mutable_bm25()->set_b(0.0f);  // explicitly 0 is a real value, not "unset"
  task = Parse(r);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->query.query().bm25.b, 0.0f);
}

TEST_F(RequestValidationTest, EnumValues) {
  SearchRequest r = Text("t1");
  r.set_mode(tandem::v1::QUERY_MODE_AND);
  r.set_engine(tandem::v1::ENGINE_HINT_GPU);
  absl::StatusOr<scheduler::QueryTask> task = Parse(r);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->query.query().mode, index::QueryMode::kAnd);
  EXPECT_EQ(task->engine, scheduler::EnginePreference::kGpu);
  EXPECT_EQ(RequestModeLabel(r), "and");
  r.set_mode(tandem::v1::QUERY_MODE_AND_OR);
  r.set_engine(tandem::v1::ENGINE_HINT_CPU);
  task = Parse(r);
  ASSERT_TRUE(task.ok());
  EXPECT_EQ(task->query.query().mode, index::QueryMode::kAndOr);
  EXPECT_EQ(task->engine, scheduler::EnginePreference::kCpu);

  r.set_mode(static_cast<tandem::v1::QueryMode>(7));
  ExpectInvalid(r, "mode: unknown QueryMode value 7");
  EXPECT_EQ(RequestModeLabel(r), "invalid");
  r.set_mode(tandem::v1::QUERY_MODE_OR);
  r.set_engine(static_cast<tandem::v1::EngineHint>(9));
  ExpectInvalid(r, "engine: unknown EngineHint value 9");
}

// Statistics for "dogs running dogs": its terms after merging are dog, run.
SearchRequest WithStatistics(uint64_t docs, uint64_t length,
                             std::vector<std::pair<std::string, uint64_t>> terms) {
  SearchRequest r;
  r.set_text("dogs running dogs");
  tandem::v1::CollectionStatistics& s = *r.mutable_collection_statistics();
  s.set_num_docs(docs);
  s.set_total_doc_length(length);
  for (const auto& [term, df] : terms) {
    tandem::v1::TermStatistics* t = s.add_terms();
    t->set_term(term);
    t->set_document_frequency(df);
  }
  return r;
}

TEST_F(RequestValidationTest, CollectionStatisticsThatDoNotFitTheQueryAreRefused) {
  ExpectInvalid(WithStatistics(10, 100, {{"dog", 1}}),
                "collection_statistics has 1 terms, the query has 2");
  ExpectInvalid(WithStatistics(10, 100, {{"dog", 1}, {"run", 1}, {"dog", 1}}),
                "collection_statistics has 3 terms");
  ExpectInvalid(WithStatistics(10, 100, {{"run", 1}, {"dog", 1}}),
                "collection_statistics.terms[0] is \"run\", the query's term is \"dog\"");
  ExpectInvalid(WithStatistics(0, 0, {{"dog", 0}, {"run", 0}}), "num_docs must be at least 1");
  ExpectInvalid(WithStatistics(10, 100, {{"dog", 11}, {"run", 1}}),
                "terms[0]: document_frequency 11 is more than num_docs 10");
}

TEST_F(RequestValidationTest, CollectionStatisticsAreWhatTheQueryScoresWith) {
  absl::StatusOr<scheduler::QueryTask> task =
      Parse(WithStatistics(1000, 12345, {{"dog", 7}, {"run", 0}}));
  ASSERT_TRUE(task.ok()) << task.status();
  const std::shared_ptr<const index::CollectionStatistics>& c = task->query.query().collection;
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->num_docs, 1000u);
  // The average as a live snapshot and IndexWriter compute it, to the same float.
  EXPECT_EQ(c->avg_doc_length, static_cast<float>(12345.0 / 1000));
  EXPECT_THAT(c->dfs, ElementsAre(7u, 0u));
  EXPECT_FALSE(task->query.resolved().stored_norms);
  EXPECT_EQ(task->query.resolved().avg_doc_length, c->avg_doc_length);
  // No documents' length: an average of 1, as an index of empty documents has.
  task = Parse(WithStatistics(3, 0, {{"dog", 1}, {"run", 1}}));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->query.query().collection->avg_doc_length, 1.0f);
  // Without them, the index's own.
  task = Parse(Text("dogs running dogs"));
  ASSERT_TRUE(task.ok()) << task.status();
  EXPECT_EQ(task->query.query().collection, nullptr);
}

TEST(ToProtoModeTest, EveryModeMapsToItsWireValueAndBack) {
  EXPECT_EQ(ToProtoMode(index::QueryMode::kAnd), tandem::v1::QUERY_MODE_AND);
  EXPECT_EQ(ToProtoMode(index::QueryMode::kOr), tandem::v1::QUERY_MODE_OR);
  EXPECT_EQ(ToProtoMode(index::QueryMode::kAndOr), tandem::v1::QUERY_MODE_AND_OR);
  for (index::QueryMode mode :
       {index::QueryMode::kAnd, index::QueryMode::kOr, index::QueryMode::kAndOr}) {
    SearchRequest r;
    r.set_mode(ToProtoMode(mode));
    EXPECT_EQ(RequestModeLabel(r), index::QueryModeName(mode));
  }
  SearchRequest unspecified;
  EXPECT_EQ(RequestModeLabel(unspecified), "or");
}

TEST_F(RequestValidationTest, BatchSize) {
  tandem::v1::SearchBatchRequest batch;
  for (int i = 0; i < 3; ++i) batch.add_requests()->set_text("t1");
  limits_.max_batch = 3;
  EXPECT_TRUE(ValidateBatchSize(batch, limits_).ok());
  limits_.max_batch = 2;
  absl::Status s = ValidateBatchSize(batch, limits_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("requests has 3 queries"));

  // The hits asked for in all: k summed, 10 for an unset k.
  limits_.max_batch = 1024;
  limits_.max_batch_hits = 30;
  EXPECT_TRUE(ValidateBatchSize(batch, limits_).ok());
  batch.mutable_requests(2)->set_k(11);
  s = ValidateBatchSize(batch, limits_);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("requests ask for 31 hits in all"));
  limits_.max_batch_hits = 0;
  EXPECT_EQ(ValidateLimits(limits_).code(), absl::StatusCode::kInvalidArgument);
}

// An attribute index of 100 documents: label spam for docs divisible by 3, else ham; year 2000 +
// doc % 5.
std::unique_ptr<filter::AttributeIndex> SmallAttributes() {
  std::vector<uint32_t> label, year;
  for (uint32_t d = 0; d < 100; ++d) {
    label.push_back(d % 3 == 0 ? 1 : 0);
    year.push_back(d % 5);
  }
  filter::AttributeField l;
  l.name = "label";
  l.values = {"ham", "spam"};
  l.columns = *filter::BuildBitmaps(filter::BitmapCodec::kPlwah, 100, label);
  filter::AttributeField y;
  y.name = "year";
  y.kind = filter::AttributeKind::kInteger;
  for (int64_t v = 2000; v < 2005; ++v) y.buckets.push_back({v, v});
  y.columns = *filter::BuildBitmaps(filter::BitmapCodec::kPlwah, 100, year);
  std::vector<filter::AttributeField> fields;
  fields.push_back(std::move(l));
  fields.push_back(std::move(y));
  return *filter::AttributeIndex::Create(100, filter::BitmapCodec::kPlwah, std::move(fields));
}

// An index of the 100 documents SmallAttributes describes, each "gas money"; built once.
const index::Index& HundredDocIndex() {
  static const index::Index* const index = [] {
    static testing::TempDir* const dir = new testing::TempDir();
    std::vector<std::vector<std::string>> docs(100, {"gas", "money"});
    EXPECT_TRUE(testing::BuildIndex(docs, dir->path() + "/i", "pfor").ok());
    return index::Index::Open(dir->path() + "/i")->release();
  }();
  return *index;
}

TEST_F(RequestValidationTest, FiltersInTextAndTreeForm) {
  const auto attributes = SmallAttributes();
  filter::FilterCache filters(attributes.get());
  SearchRequest text = Text("gas");
  text.set_filter_text("label = spam AND year >= 2003");
  auto task = ParseSearchRequest(text, HundredDocIndex(), limits_, &filters);
  ASSERT_TRUE(task.ok()) << task.status();
  ASSERT_NE(task->query.query().filter, nullptr);
  std::vector<uint32_t> want;
  for (uint32_t d = 0; d < 100; ++d) {
    if (d % 3 == 0 && d % 5 >= 3) want.push_back(d);
  }
  EXPECT_EQ(task->query.query().filter->Rows(), want);

  SearchRequest tree = Text("gas");
  auto* both = tree.mutable_filter()->mutable_and_();
  auto* label = both->add_filters()->mutable_equals();
  label->set_field("label");
  label->set_value("spam");
  auto* range = both->add_filters()->mutable_range();
  range->set_field("year");
  range->set_min(2003);
  auto from_tree = ParseSearchRequest(tree, HundredDocIndex(), limits_, &filters);
  ASSERT_TRUE(from_tree.ok()) << from_tree.status();
  EXPECT_EQ(from_tree->query.query().filter->Rows(), want);

  // NOT, IN, and a filter that allows nothing (no hits, no error).
  SearchRequest none = Text("gas");
  none.set_filter_text("year IN (2001, 2002) AND NOT year != 2000");
  auto empty = ParseSearchRequest(none, HundredDocIndex(), limits_, &filters);
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(empty->query.query().filter->Count(), 0u);
  // The same filter again, as text or tree: the same bitmap, from the cache.
  SearchRequest again = Text("money");
  again.set_filter_text("label=spam and year>=2003");
  auto cached = ParseSearchRequest(again, HundredDocIndex(), limits_, &filters);
  ASSERT_TRUE(cached.ok());
  EXPECT_EQ(cached->query.query().filter, task->query.query().filter);
  EXPECT_EQ(from_tree->query.query().filter, task->query.query().filter);
  EXPECT_GE(filters.hits(), 2u);
  // No filter: no bitmap.
  auto plain = ParseSearchRequest(Text("gas"), HundredDocIndex(), limits_, &filters);
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->query.query().filter, nullptr);
}

TEST_F(RequestValidationTest, BadFiltersNameTheProblem) {
  const auto attributes = SmallAttributes();
  filter::FilterCache filters(attributes.get()), no_attributes(nullptr);
  auto expect = [&](const SearchRequest& r, const std::string& message,
                    filter::FilterCache* cache) {
    auto task = ParseSearchRequest(r, HundredDocIndex(), limits_, cache);
    ASSERT_FALSE(task.ok()) << r.DebugString();
    EXPECT_EQ(task.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(task.status().message()), HasSubstr(message));
  };
  SearchRequest r = Text("gas");
  r.set_filter_text("colour = red");
  expect(r, "colour", &filters);
  r.set_filter_text("label = eggs");
  expect(r, "eggs", &filters);
  r.set_filter_text("label = spam AND (");
  expect(r, "offset", &filters);
  r.set_filter_text("label = spam");
  expect(r, "stores no attributes", &no_attributes);
  expect(r, "stores no attributes", nullptr);
  r.mutable_filter()->mutable_equals()->set_field("label");
  expect(r, "not both", &filters);
  SearchRequest tree = Text("gas");
  tree.mutable_filter();  // a node with nothing set
  expect(tree, "nothing set", &filters);
  tree.mutable_filter()->mutable_or_();
  expect(tree, "empty or", &filters);
  // Nesting deeper than the limit, built without recursion.
  SearchRequest deep = Text("gas");
  tandem::v1::DocumentFilter* node = deep.mutable_filter();
  for (size_t i = 0; i < filter::kMaxFilterDepth + 5; ++i) node = node->mutable_not_();
  node->mutable_equals()->set_field("label");
  node->mutable_equals()->set_value("spam");
  expect(deep, "nested deeper", &filters);
  SearchRequest range = Text("gas");
  range.mutable_filter()->mutable_range()->set_field("label");
  range.mutable_filter()->mutable_range()->set_min(1);
  expect(range, "label", &filters);
}

// A filter is evaluated over the attributes' documents: an index of another size refuses it.
TEST_F(RequestValidationTest, AFilterOverAnotherNumberOfDocumentsIsRefused) {
  const auto attributes = SmallAttributes();
  filter::FilterCache filters(attributes.get());
  SearchRequest r = Text("gas");
  r.set_filter_text("label = spam");
  auto task = ParseSearchRequest(r, index(), limits_, &filters);
  EXPECT_EQ(task.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(task.status().message()), HasSubstr("100 documents"));
}

}  // namespace
}  // namespace tandem::server
