#include "server/query_dispatcher.h"

#include <atomic>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index/query.h"
#include "prometheus/client_metric.h"
#include "prometheus/metric_family.h"
#include "prometheus/registry.h"
#include "scheduler/query_executor.h"
#include "server/metrics_test_util.h"
#include "server/query_metrics.h"
#include "server/request_validation.h"
#include "tests/test_collection.h"

namespace tandem::server {
namespace {

using prometheus::Labels;
using prometheus::MetricType;
using scheduler::QueryJob;
using scheduler::QueryOutcome;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

using metrics_testing::ModeEngine;
using metrics_testing::Query;
using metrics_testing::Scrape;

Labels Reason(const char* reason) { return {{"reason", reason}}; }

// A QueryExecutor that admits jobs into a list until `capacity` jobs were admitted, or refuses them
// with a chosen status; the test completes each task with the outcome it chooses, from any thread.
class FakeExecutor final : public scheduler::QueryExecutor {
 public:
  absl::Status Submit(QueryJob job) override {
    absl::MutexLock lock(&mu_);
    if (!refusal_.ok()) return refusal_;
    if (jobs_.size() >= capacity_) {
      return absl::ResourceExhaustedError("the admission queue is full; retry later");
    }
    jobs_.push_back(std::make_shared<QueryJob>(std::move(job)));
    return absl::OkStatus();
  }
  size_t queue_depth() const override {
    absl::MutexLock lock(&mu_);
    return jobs_.size();
  }
  size_t queue_capacity() const override {
    absl::MutexLock lock(&mu_);
    return capacity_;
  }
  std::vector<std::string> engines() const override { return {"cpu"}; }
  void Shutdown() override {}

  void set_capacity(size_t capacity) {
    absl::MutexLock lock(&mu_);
    capacity_ = capacity;
  }
  // Every later Submit fails with `status`.
  void RefuseWith(absl::Status status) {
    absl::MutexLock lock(&mu_);
    refusal_ = std::move(status);
  }
  size_t jobs() const { return queue_depth(); }
  // Admitted job `i`; jobs are never removed, so the reference stays valid.
  const QueryJob& job(size_t i) const {
    absl::MutexLock lock(&mu_);
    return *jobs_.at(i);
  }
  // Reports `outcome` for task `task` of job `job`, as an executor thread would.
  void Complete(size_t job, size_t task, QueryOutcome outcome) {
    std::shared_ptr<QueryJob> j;
    {
      absl::MutexLock lock(&mu_);
      j = jobs_.at(job);
    }
    j->on_done(task, std::move(outcome));
  }

 private:
  mutable absl::Mutex mu_;
  size_t capacity_ ABSL_GUARDED_BY(mu_) = 16;
  absl::Status refusal_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<QueryJob>> jobs_ ABSL_GUARDED_BY(mu_);
};

// Collects the responses of Dispatch by request index; counts a second one for the same request.
class Responses {
 public:
  QueryDone Done() {
    return [this](size_t request, absl::StatusOr<SearchResponse> response) {
      absl::MutexLock lock(&mu_);
      if (!responses_.emplace(request, std::move(response)).second) ++duplicates_;
    };
  }
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return responses_.size();
  }
  bool Has(size_t request) const {
    absl::MutexLock lock(&mu_);
    return responses_.count(request) > 0;
  }
  absl::StatusOr<SearchResponse> Get(size_t request) const {
    absl::MutexLock lock(&mu_);
    auto it = responses_.find(request);
    if (it == responses_.end()) {
      ADD_FAILURE() << "no response for request " << request;
      return absl::NotFoundError("missing");
    }
    return it->second;
  }
  int duplicates() const {
    absl::MutexLock lock(&mu_);
    return duplicates_;
  }

 private:
  mutable absl::Mutex mu_;
  std::map<size_t, absl::StatusOr<SearchResponse>> responses_ ABSL_GUARDED_BY(mu_);
  int duplicates_ ABSL_GUARDED_BY(mu_) = 0;
};

SearchRequest Text(const std::string& text, tandem::v1::QueryMode mode = tandem::v1::QUERY_MODE_OR,
                   const std::string& id = "") {
  SearchRequest request;
  request.set_text(text);
  request.set_mode(mode);
  request.set_request_id(id);
  return request;
}

// Invalid: k past the limit.
SearchRequest TooManyHits(const std::string& id = "") {
  SearchRequest request = Text("cat", tandem::v1::QUERY_MODE_OR, id);
  request.set_k(20000);
  return request;
}

// What an engine that ran the query reports.
QueryOutcome Ran(std::vector<index::Hit> hits, std::string engine = "cpu") {
  index::SearchResult result;
  result.hits = std::move(hits);
  return QueryOutcome{.result = std::move(result), .engine = std::move(engine), .started = true};
}

class QueryDispatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // doc0 {cat dog}, doc1 {dog}, doc2 {fish dog dog}, doc3 {cat fish}.
    ASSERT_TRUE(
        testing::BuildIndex({{"cat", "dog"}, {"dog"}, {"fish", "dog", "dog"}, {"cat", "fish"}},
                            dir_.path() + "/index", "pfor")
            .ok());
    auto index = index::Index::Open(dir_.path() + "/index");
    ASSERT_TRUE(index.ok()) << index.status();
    index_ = *std::move(index);
    dispatcher_ = std::make_unique<QueryDispatcher>(*index_, executor_, metrics_, RequestLimits{});
  }

  absl::Status Dispatch(const std::vector<const SearchRequest*>& requests,
                        const CallContext& call = {}) {
    return dispatcher_->Dispatch(requests, call, responses_.Done());
  }

  testing::TempDir dir_;
  std::unique_ptr<index::Index> index_;
  prometheus::Registry registry_;
  QueryMetrics metrics_{registry_, {}, {"cpu"}};
  FakeExecutor executor_;
  Responses responses_;
  std::unique_ptr<QueryDispatcher> dispatcher_;
};

TEST_F(QueryDispatcherTest, AnswersInvalidRequestsAtOnce) {
  const SearchRequest too_many_hits = TooManyHits("a");
  const SearchRequest no_query;  // neither text nor terms
  SearchRequest bad_mode = Text("cat");
  bad_mode.set_mode(static_cast<tandem::v1::QueryMode>(99));
  ASSERT_TRUE(Dispatch({&too_many_hits}).ok());
  Responses batch;
  ASSERT_TRUE(dispatcher_->Dispatch({&no_query, &bad_mode}, {}, batch.Done()).ok());

  // Answered from the calling thread, before Dispatch returned; nothing reached the executor.
  EXPECT_EQ(responses_.size(), 1u);
  EXPECT_EQ(responses_.Get(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(batch.size(), 2u);
  EXPECT_EQ(batch.Get(0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(batch.Get(1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(batch.Get(1).status().message()), HasSubstr("mode"));
  EXPECT_EQ(executor_.jobs(), 0u);
  EXPECT_EQ(dispatcher_->in_flight(), 0);

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("invalid_argument")), 3);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "INVALID_ARGUMENT")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("invalid", "none", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 0);
  EXPECT_EQ(scrape.Histogram("tandem_query_duration_seconds", ModeEngine("or", "cpu")).sample_count,
            0u);
}

TEST_F(QueryDispatcherTest, ValidationMessageNamesTheField) {
  const SearchRequest request = TooManyHits();
  ASSERT_TRUE(Dispatch({&request}).ok());
  const absl::StatusOr<SearchResponse> response = responses_.Get(0);
  EXPECT_EQ(response.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(response.status().message(), "k must be between 1 and 10000, got 20000");
}

TEST_F(QueryDispatcherTest, BatchAdmitsTheValidRequestsAsOneJob) {
  const SearchRequest a = Text("cat", tandem::v1::QUERY_MODE_OR, "a");
  const SearchRequest b = TooManyHits("b");
  const SearchRequest c = Text("dog fish", tandem::v1::QUERY_MODE_AND, "c");
  SearchRequest d = Text("dog", tandem::v1::QUERY_MODE_OR, "d");
  d.set_mode(static_cast<tandem::v1::QueryMode>(42));
  ASSERT_TRUE(Dispatch({&a, &b, &c, &d}).ok());

  // The invalid ones are answered; the valid ones wait in one job, in request order.
  EXPECT_EQ(responses_.size(), 2u);
  EXPECT_EQ(responses_.Get(1).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(responses_.Get(3).status().code(), absl::StatusCode::kInvalidArgument);
  ASSERT_EQ(executor_.jobs(), 1u);
  const QueryJob& job = executor_.job(0);
  ASSERT_EQ(job.tasks.size(), 2u);
  EXPECT_EQ(job.tasks[0].query.query().mode, index::QueryMode::kOr);
  ASSERT_EQ(job.tasks[0].query.query().terms.size(), 1u);
  EXPECT_EQ(job.tasks[0].query.query().terms[0].term, "cat");
  EXPECT_EQ(job.tasks[1].query.query().mode, index::QueryMode::kAnd);
  ASSERT_EQ(job.tasks[1].query.query().terms.size(), 2u);
  EXPECT_EQ(job.tasks[1].query.query().terms[0].term, "dog");
  EXPECT_EQ(job.tasks[1].query.query().terms[1].term, "fish");
  EXPECT_EQ(dispatcher_->in_flight(), 2);
  EXPECT_EQ(Scrape(registry_).Value("tandem_queries_in_flight"), 2);

  // Task 1 answers request 2, task 0 request 0, whatever order they finish in.
  executor_.Complete(0, 1, Ran({{.docid = 2, .score = 1.5f}}));
  ASSERT_TRUE(responses_.Has(2));
  EXPECT_FALSE(responses_.Has(0));
  EXPECT_EQ(dispatcher_->in_flight(), 1);
  executor_.Complete(0, 0, Ran({{.docid = 3, .score = 0.5f}, {.docid = 0, .score = 0.25f}}));
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  ASSERT_EQ(responses_.size(), 4u);
  EXPECT_EQ(responses_.duplicates(), 0);

  const absl::StatusOr<SearchResponse> rc = responses_.Get(2);
  ASSERT_TRUE(rc.ok()) << rc.status();
  EXPECT_EQ(rc->request_id(), "c");
  ASSERT_EQ(rc->hits_size(), 1);
  EXPECT_EQ(rc->hits(0).external_id(), "doc2");
  const absl::StatusOr<SearchResponse> ra = responses_.Get(0);
  ASSERT_TRUE(ra.ok()) << ra.status();
  EXPECT_EQ(ra->request_id(), "a");
  ASSERT_EQ(ra->hits_size(), 2);
  EXPECT_EQ(ra->hits(0).external_id(), "doc3");
  EXPECT_EQ(ra->hits(1).external_id(), "doc0");

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("invalid_argument")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("invalid", "none", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "OK")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and", "cpu", "OK")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 0);
}

TEST_F(QueryDispatcherTest, BuildsTheResponseFromTheOutcome) {
  // "and" is a stop word; the rest is stemmed: the query runs with {cat, dog}.
  SearchRequest request = Text("Cats and dogs", tandem::v1::QUERY_MODE_AND_OR, "r1");
  request.set_k(5);
  CallContext call;
  call.arrival = absl::Now() - absl::Seconds(1);
  ASSERT_TRUE(Dispatch({&request}, call).ok());
  ASSERT_EQ(executor_.jobs(), 1u);
  const index::Query& query = executor_.job(0).tasks[0].query.query();
  EXPECT_EQ(query.k, 5u);
  EXPECT_EQ(query.mode, index::QueryMode::kAndOr);

  index::SearchResult result;
  result.hits = {{.docid = 2, .score = 2.5f}, {.docid = 0, .score = 1.25f}};
  result.stats.postings_decoded = 7;
  result.stats.executed_mode = index::QueryMode::kOr;  // AND fell short of k
  executor_.Complete(0, 0,
                     QueryOutcome{.result = result,
                                  .engine = "cpu",
                                  .started = true,
                                  .queued = absl::Milliseconds(3),
                                  .executed = absl::Milliseconds(4)});

  const absl::StatusOr<SearchResponse> response = responses_.Get(0);
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->request_id(), "r1");
  ASSERT_EQ(response->hits_size(), 2);
  EXPECT_EQ(response->hits(0).docid(), 2u);
  EXPECT_EQ(response->hits(0).external_id(), "doc2");
  EXPECT_EQ(response->hits(0).score(), 2.5f);
  EXPECT_EQ(response->hits(1).docid(), 0u);
  EXPECT_EQ(response->hits(1).external_id(), "doc0");
  EXPECT_EQ(response->hits(1).score(), 1.25f);
  const tandem::v1::QueryStats& stats = response->stats();
  EXPECT_EQ(stats.engine(), "cpu");
  EXPECT_EQ(stats.executed_mode(), tandem::v1::QUERY_MODE_OR);
  EXPECT_EQ(stats.postings_decoded(), 7u);
  EXPECT_EQ(stats.queued_micros(), 3000u);
  EXPECT_EQ(stats.execution_micros(), 4000u);
  EXPECT_GE(stats.total_micros(), 1000000u);  // from the call's arrival
  EXPECT_THAT(stats.terms(), ElementsAre("cat", "dog"));

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and_or", "cpu", "OK")), 1);
  const auto wait =
      scrape.Histogram("tandem_query_queue_wait_seconds", ModeEngine("and_or", "cpu"));
  EXPECT_EQ(wait.sample_count, 1u);
  EXPECT_DOUBLE_EQ(wait.sample_sum, 0.003);
  const auto execution =
      scrape.Histogram("tandem_query_execution_seconds", ModeEngine("and_or", "cpu"));
  EXPECT_EQ(execution.sample_count, 1u);
  EXPECT_DOUBLE_EQ(execution.sample_sum, 0.004);
  const auto duration =
      scrape.Histogram("tandem_query_duration_seconds", ModeEngine("and_or", "cpu"));
  EXPECT_EQ(duration.sample_count, 1u);
  EXPECT_GE(duration.sample_sum, 1.0);
  EXPECT_EQ(scrape.Value("tandem_postings_decoded_total", {{"engine", "cpu"}}), 7);
  EXPECT_EQ(scrape.Value("tandem_gpu_fallbacks_total"), 0);
}

// A damaged list fails its queries with DATA_LOSS: each is answered and counted, and each distinct
// message is logged once.
TEST_F(QueryDispatcherTest, DataLossIsAnsweredCountedAndLoggedOnce) {
  std::vector<std::string> lines;
  absl::Mutex mu;
  dispatcher_ = std::make_unique<QueryDispatcher>(*index_, executor_, metrics_, RequestLimits{},
                                                  [&](absl::string_view line) {
                                                    absl::MutexLock lock(&mu);
                                                    lines.emplace_back(line);
                                                  });
  const SearchRequest r = Text("cat");
  ASSERT_TRUE(Dispatch({&r, &r, &r}).ok());
  const QueryOutcome bad{.result = absl::DataLossError("list of term 'cat': block 3 out of order"),
                         .engine = "cpu",
                         .started = true};
  executor_.Complete(0, 0, bad);
  executor_.Complete(0, 1, bad);
  executor_.Complete(
      0, 2,
      {.result = absl::DataLossError("list of term 'dog'"), .engine = "cpu", .started = true});
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(responses_.Get(i).status().code(), absl::StatusCode::kDataLoss);
    // The caller learns that the data is damaged, not where the index lives or which list.
    EXPECT_THAT(std::string(responses_.Get(i).status().message()), HasSubstr("node's log"));
    EXPECT_THAT(std::string(responses_.Get(i).status().message()),
                ::testing::Not(HasSubstr("term")));
  }
  absl::MutexLock lock(&mu);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_THAT(lines[0], HasSubstr("data loss"));
  EXPECT_THAT(lines[0], HasSubstr("block 3 out of order"));
  EXPECT_THAT(lines[1], HasSubstr("term 'dog'"));
}

TEST_F(QueryDispatcherTest, MapsFailedOutcomesToErrors) {
  const SearchRequest r = Text("cat");
  ASSERT_TRUE(Dispatch({&r, &r, &r, &r, &r}).ok());
  ASSERT_EQ(executor_.jobs(), 1u);
  // Expired in the queue before an engine was chosen.
  executor_.Complete(0, 0, {.result = absl::DeadlineExceededError("query deadline exceeded")});
  // Expired in the CPU queue.
  executor_.Complete(
      0, 1, {.result = absl::DeadlineExceededError("query deadline exceeded"), .engine = "cpu"});
  // Its caller cancelled while it ran.
  executor_.Complete(0, 2,
                     {.result = absl::CancelledError("cancelled"),
                      .engine = "cpu",
                      .started = true,
                      .executed = absl::Milliseconds(1)});
  // Asked for a GPU the node lacks.
  executor_.Complete(0, 3, {.result = absl::FailedPreconditionError("no GPU engine")});
  // The GPU failed and the CPU answered.
  QueryOutcome fallback = Ran({{.docid = 0, .score = 1.0f}});
  fallback.gpu_fallback = true;
  executor_.Complete(0, 4, std::move(fallback));

  EXPECT_EQ(responses_.Get(0).status(), absl::DeadlineExceededError("query deadline exceeded"));
  EXPECT_EQ(responses_.Get(1).status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(responses_.Get(2).status(), absl::CancelledError("cancelled"));
  EXPECT_EQ(responses_.Get(3).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(responses_.Get(4).ok());
  EXPECT_EQ(dispatcher_->in_flight(), 0);

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "DEADLINE_EXCEEDED")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "DEADLINE_EXCEEDED")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "CANCELLED")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "FAILED_PRECONDITION")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "OK")), 1);
  // Only the queries that never started are rejections.
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("expired_in_queue")), 2);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("no_gpu")), 1);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("invalid_argument")), 0);
  EXPECT_EQ(scrape.Value("tandem_gpu_fallbacks_total"), 1);
  // Those that reached the CPU: the queue wait of all three, the execution of the two that ran.
  EXPECT_EQ(
      scrape.Histogram("tandem_query_queue_wait_seconds", ModeEngine("or", "cpu")).sample_count,
      3u);
  EXPECT_EQ(
      scrape.Histogram("tandem_query_execution_seconds", ModeEngine("or", "cpu")).sample_count, 2u);
}

TEST_F(QueryDispatcherTest, QueueFullRefusesTheWholeCall) {
  executor_.set_capacity(1);
  const SearchRequest held = Text("cat");
  ASSERT_TRUE(Dispatch({&held}).ok());

  const SearchRequest a = Text("dog"), b = Text("fish", tandem::v1::QUERY_MODE_AND),
                      invalid = TooManyHits();
  Responses refused;
  const absl::Status status = dispatcher_->Dispatch({&a, &invalid, &b}, {}, refused.Done());
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  // Nothing is answered, not even the invalid request: the call fails as a whole.
  EXPECT_EQ(refused.size(), 0u);
  EXPECT_EQ(executor_.jobs(), 1u);
  EXPECT_EQ(dispatcher_->in_flight(), 1);

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("queue_full")), 3);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("invalid_argument")), 0);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "RESOURCE_EXHAUSTED")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and", "none", "RESOURCE_EXHAUSTED")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 1);

  executor_.Complete(0, 0, Ran({}));
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  EXPECT_EQ(Scrape(registry_).Value("tandem_queries_in_flight"), 0);
}

TEST_F(QueryDispatcherTest, EveryQueryOfABatchCountsAgainstTheInFlightLimit) {
  RequestLimits limits;
  limits.max_batch = 3;
  limits.max_queries_in_flight = 4;
  dispatcher_ = std::make_unique<QueryDispatcher>(*index_, executor_, metrics_, limits);
  const SearchRequest r = Text("cat");
  ASSERT_TRUE(Dispatch({&r, &r, &r}).ok());  // one job, three queries
  EXPECT_TRUE(dispatcher_->Admissible().ok());

  // Two more queries would make five: the call is refused whole, though the queue has room.
  Responses refused;
  const absl::Status status = dispatcher_->Dispatch({&r, &r}, {}, refused.Done());
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()), HasSubstr("3 queries in flight"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("at most 4"));
  EXPECT_EQ(refused.size(), 0u);
  EXPECT_EQ(executor_.jobs(), 1u);
  EXPECT_EQ(dispatcher_->in_flight(), 3);

  // One more fits, and then nothing does: Admissible says so before any request is parsed.
  ASSERT_TRUE(Dispatch({&r}).ok());
  const absl::Status full = dispatcher_->Admissible();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  dispatcher_->RecordUnparsedCall(full);

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("in_flight_limit")), 3);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("queue_full")), 0);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "RESOURCE_EXHAUSTED")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("unparsed", "none", "RESOURCE_EXHAUSTED")),
            1);

  // Answers free the room.
  executor_.Complete(0, 0, Ran({}));
  EXPECT_TRUE(dispatcher_->Admissible().ok());
  ASSERT_TRUE(Dispatch({&r}).ok());
}

TEST_F(QueryDispatcherTest, TheMemoryBreakerRefusesCallsWhoseResponsesWouldNotFit) {
  RequestLimits limits;
  limits.max_batch_hits = 1000;
  limits.max_response_bytes_in_flight = 2500 * kResponseBytesPerHit;
  dispatcher_ = std::make_unique<QueryDispatcher>(*index_, executor_, metrics_, limits);
  SearchRequest big = Text("cat");
  big.set_k(1000);
  SearchRequest small = Text("dog");  // k = 10 by default
  ASSERT_TRUE(Dispatch({&big, &big}).ok());
  EXPECT_EQ(dispatcher_->response_bytes_in_flight(), 2000 * kResponseBytesPerHit);

  // A third k = 1000 does not fit; ten hits do. Invalid requests reserve nothing.
  Responses refused;
  const absl::Status status = dispatcher_->Dispatch({&big}, {}, refused.Done());
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()), HasSubstr("responses in flight"));
  const SearchRequest invalid = TooManyHits();
  ASSERT_TRUE(Dispatch({&small, &invalid}).ok());
  EXPECT_EQ(dispatcher_->response_bytes_in_flight(), 2010 * kResponseBytesPerHit);

  // Each answer returns its query's bytes; a refused call never held any.
  executor_.Complete(0, 1, Ran({}));
  EXPECT_EQ(dispatcher_->response_bytes_in_flight(), 1010 * kResponseBytesPerHit);
  ASSERT_TRUE(Dispatch({&big}).ok());
  executor_.Complete(0, 0, Ran({}));
  executor_.Complete(1, 0, Ran({}));
  executor_.Complete(2, 0, Ran({}));
  EXPECT_EQ(dispatcher_->response_bytes_in_flight(), 0u);
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  EXPECT_EQ(Scrape(registry_).Value("tandem_rejected_queries_total", Reason("memory_breaker")), 1);
}

// The node's memory breaker covers the responses with what the caches and Watch queues hold: a
// call they leave no room for is refused, unless they give way (their reclaimers).
TEST_F(QueryDispatcherTest, TheNodesMemoryBreakerCountsOtherHoldersAndLetsThemGiveWay) {
  base::MemoryBreaker breaker(1500 * kResponseBytesPerHit);
  base::MemoryBreaker::Account& responses = breaker.AddAccount("responses");
  base::MemoryBreaker::Account& cache = breaker.AddAccount("filter_cache");
  dispatcher_ =
      std::make_unique<QueryDispatcher>(*index_, executor_, metrics_, RequestLimits{}, nullptr,
                                        nullptr, DispatcherMemory{.responses = &responses});
  ASSERT_TRUE(cache.TryReserve(1000 * kResponseBytesPerHit));
  SearchRequest big = Text("cat");
  big.set_k(1000);
  Responses refused;
  const absl::Status status = dispatcher_->Dispatch({&big}, {}, refused.Done());
  EXPECT_EQ(status.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(std::string(status.message()), HasSubstr("memory breaker is full"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("filter_cache"));
  EXPECT_EQ(dispatcher_->response_bytes_in_flight(), 0u);
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  EXPECT_EQ(responses.used(), 0u);
  EXPECT_EQ(Scrape(registry_).Value("tandem_rejected_queries_total", Reason("memory_breaker")), 1);

  // The cache gives back what the call needs: admitted, and its bytes go back with its answer.
  const uint64_t id = cache.AddReclaimer([&](uint64_t bytes) { cache.Release(bytes); });
  ASSERT_TRUE(Dispatch({&big}).ok());
  EXPECT_EQ(responses.used(), 1000 * kResponseBytesPerHit);
  EXPECT_EQ(breaker.used(), breaker.limit());
  executor_.Complete(0, 0, Ran({}));
  EXPECT_EQ(responses.used(), 0u);
  cache.RemoveReclaimer(id);
}

TEST_F(QueryDispatcherTest, AdmissibleRefusesWhileDrainingOrWithTheQueueFull) {
  EXPECT_TRUE(dispatcher_->Admissible().ok());
  executor_.set_capacity(1);
  const SearchRequest r = Text("cat");
  ASSERT_TRUE(Dispatch({&r}).ok());
  const absl::Status full = dispatcher_->Admissible();
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted);
  dispatcher_->RecordUnparsedCall(full);
  dispatcher_->StartDraining();
  const absl::Status draining = dispatcher_->Admissible();
  EXPECT_EQ(draining.code(), absl::StatusCode::kUnavailable);
  dispatcher_->RecordUnparsedCall(draining);
  dispatcher_->RecordUnparsedCall(absl::InvalidArgumentError("request is not valid"));

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("queue_full")), 1);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("draining")), 1);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("malformed_request")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("unparsed", "none", "INVALID_ARGUMENT")), 1);
}

TEST(RequestLimitsTest, AdmissionLimitsMustAdmitTheLargestBatch) {
  RequestLimits limits;
  EXPECT_TRUE(ValidateLimits(limits).ok());
  limits.max_queries_in_flight = limits.max_batch - 1;
  EXPECT_THAT(std::string(ValidateLimits(limits).message()), HasSubstr("max_queries_in_flight"));
  limits = RequestLimits{};
  limits.max_response_bytes_in_flight = uint64_t{limits.max_batch_hits} * kResponseBytesPerHit - 1;
  EXPECT_THAT(std::string(ValidateLimits(limits).message()),
              HasSubstr("max_response_bytes_in_flight"));
}

TEST_F(QueryDispatcherTest, DrainingRefusesNewWorkAndFinishesAdmittedWork) {
  const SearchRequest r = Text("cat");
  ASSERT_TRUE(Dispatch({&r}).ok());
  EXPECT_FALSE(dispatcher_->draining());
  dispatcher_->StartDraining();
  EXPECT_TRUE(dispatcher_->draining());

  Responses refused;
  const absl::Status status = dispatcher_->Dispatch({&r, &r}, {}, refused.Done());
  EXPECT_EQ(status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(refused.size(), 0u);
  EXPECT_EQ(executor_.jobs(), 1u);  // the refused call never reached the executor
  EXPECT_EQ(dispatcher_->in_flight(), 1);

  // Invalid requests alone need no admission: they are still answered.
  const SearchRequest invalid = TooManyHits();
  Responses answered;
  EXPECT_TRUE(dispatcher_->Dispatch({&invalid}, {}, answered.Done()).ok());
  EXPECT_EQ(answered.Get(0).status().code(), absl::StatusCode::kInvalidArgument);

  // The admitted query still completes.
  executor_.Complete(0, 0, Ran({{.docid = 0, .score = 1.0f}}));
  EXPECT_TRUE(responses_.Get(0).ok());
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  EXPECT_TRUE(dispatcher_->WaitForIdle(absl::Now()));

  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("draining")), 2);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("invalid_argument")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "UNAVAILABLE")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "OK")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 0);
}

TEST_F(QueryDispatcherTest, AnExecutorShuttingDownCountsAsDraining) {
  executor_.RefuseWith(absl::UnavailableError("the server is shutting down"));
  const SearchRequest r = Text("cat");
  const absl::Status status = Dispatch({&r});
  EXPECT_EQ(status, absl::UnavailableError("the server is shutting down"));
  EXPECT_EQ(responses_.size(), 0u);
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("draining")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "UNAVAILABLE")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 0);
}

TEST_F(QueryDispatcherTest, RecordRefusedCallCountsEveryRequest) {
  const SearchRequest a = Text("cat"), b = Text("dog", tandem::v1::QUERY_MODE_AND_OR);
  dispatcher_->RecordRefusedCall({&a, &b}, absl::InvalidArgumentError("too many queries"));
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_rejected_queries_total", Reason("invalid_argument")), 2);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "none", "INVALID_ARGUMENT")), 1);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("and_or", "none", "INVALID_ARGUMENT")), 1);
}

TEST_F(QueryDispatcherTest, InFlightRisesAndFallsBackToZero) {
  const SearchRequest r = Text("cat");
  ASSERT_TRUE(Dispatch({&r, &r, &r}).ok());
  ASSERT_TRUE(Dispatch({&r}).ok());
  EXPECT_EQ(dispatcher_->in_flight(), 4);
  EXPECT_EQ(Scrape(registry_).Value("tandem_queries_in_flight"), 4);
  const std::pair<size_t, size_t> order[] = {{0, 1}, {1, 0}, {0, 0}, {0, 2}};
  int64_t left = 4;
  for (const auto& [job, task] : order) {
    executor_.Complete(job, task, Ran({}));
    --left;
    EXPECT_EQ(dispatcher_->in_flight(), left);
    EXPECT_EQ(Scrape(registry_).Value("tandem_queries_in_flight"), static_cast<double>(left));
  }
}

TEST_F(QueryDispatcherTest, WaitForIdle) {
  // Idle: true at once, even with a deadline already past.
  EXPECT_TRUE(dispatcher_->WaitForIdle(absl::InfinitePast()));

  const SearchRequest r = Text("cat");
  ASSERT_TRUE(Dispatch({&r}).ok());
  const absl::Time start = absl::Now();
  EXPECT_FALSE(dispatcher_->WaitForIdle(start + absl::Milliseconds(50)));
  EXPECT_GE(absl::Now() - start, absl::Milliseconds(40));
  EXPECT_FALSE(dispatcher_->WaitForIdle(absl::InfinitePast()));

  // Answered from another thread while the caller waits.
  std::thread executor_thread([this] {
    absl::SleepFor(absl::Milliseconds(20));
    executor_.Complete(0, 0, Ran({}));
  });
  EXPECT_TRUE(dispatcher_->WaitForIdle(absl::Now() + absl::Seconds(30)));
  executor_thread.join();
  EXPECT_EQ(dispatcher_->in_flight(), 0);
}

TEST_F(QueryDispatcherTest, JobCarriesTheCallsDeadlineCancellationAndEngineHint) {
  auto cancelled = std::make_shared<std::atomic<bool>>(false);
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  SearchRequest gpu = Text("fish");
  gpu.set_engine(tandem::v1::ENGINE_HINT_GPU);
  SearchRequest cpu = Text("fish");
  cpu.set_engine(tandem::v1::ENGINE_HINT_CPU);
  ASSERT_TRUE(Dispatch({&gpu, &cpu}, {.deadline = deadline, .cancelled = cancelled}).ok());
  ASSERT_EQ(executor_.jobs(), 1u);
  const QueryJob& job = executor_.job(0);
  EXPECT_EQ(job.deadline, deadline);
  EXPECT_EQ(job.cancelled.get(), cancelled.get());
  ASSERT_EQ(job.tasks.size(), 2u);
  EXPECT_EQ(job.tasks[0].engine, scheduler::EnginePreference::kGpu);
  EXPECT_EQ(job.tasks[1].engine, scheduler::EnginePreference::kCpu);
  EXPECT_TRUE(job.on_done != nullptr);
}

TEST_F(QueryDispatcherTest, ConcurrentCompletionsAreEachAnsweredOnce) {
  constexpr size_t kRequests = 64, kThreads = 4;
  std::vector<SearchRequest> requests;
  for (size_t i = 0; i < kRequests; ++i) {
    requests.push_back(Text("dog", tandem::v1::QUERY_MODE_OR, absl::StrCat("q", i)));
  }
  std::vector<const SearchRequest*> pointers;
  for (const SearchRequest& r : requests) pointers.push_back(&r);
  ASSERT_TRUE(Dispatch(pointers).ok());
  EXPECT_EQ(dispatcher_->in_flight(), static_cast<int64_t>(kRequests));

  std::vector<std::thread> threads;
  for (size_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([this, t] {
      for (size_t task = t; task < kRequests; task += kThreads) {
        executor_.Complete(0, task, Ran({{.docid = static_cast<uint32_t>(task % 4), .score = 1}}));
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(dispatcher_->in_flight(), 0);
  ASSERT_EQ(responses_.size(), kRequests);
  EXPECT_EQ(responses_.duplicates(), 0);
  for (size_t i = 0; i < kRequests; ++i) {
    const absl::StatusOr<SearchResponse> response = responses_.Get(i);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->request_id(), absl::StrCat("q", i));
    EXPECT_EQ(response->hits(0).external_id(), absl::StrCat("doc", i % 4));
  }
  const Scrape scrape(registry_);
  EXPECT_EQ(scrape.Value("tandem_queries_total", Query("or", "cpu", "OK")), kRequests);
  EXPECT_EQ(scrape.Value("tandem_queries_in_flight"), 0);
}

// A node that loads a new index switches the dispatcher's target: new calls are prepared against
// the new index and admitted to its executor (Admissible asks it too), while a call admitted
// before keeps the old target alive until it is answered.
TEST_F(QueryDispatcherTest, SwitchTargetSendsNewCallsToTheNewIndex) {
  ASSERT_TRUE(
      testing::BuildIndex({{"bird"}, {"cat", "bird"}}, dir_.path() + "/second", "pfor").ok());
  auto second_index = index::Index::Open(dir_.path() + "/second");
  ASSERT_TRUE(second_index.ok()) << second_index.status();
  FakeExecutor second_executor;
  auto second = std::make_shared<QueryTarget>(**second_index, second_executor);
  second->generation = 2;

  const SearchRequest before = Text("cat");
  ASSERT_TRUE(Dispatch({&before}).ok());
  std::weak_ptr<QueryTarget> first = dispatcher_->target();
  EXPECT_EQ(dispatcher_->target()->generation, 1u);
  const std::shared_ptr<QueryTarget> old = dispatcher_->SwitchTarget(second);
  EXPECT_EQ(&old->index, index_.get());
  EXPECT_EQ(dispatcher_->target(), second);

  const SearchRequest after = Text("bird");
  Responses later;
  ASSERT_TRUE(dispatcher_->Dispatch({&after}, {}, later.Done()).ok());
  EXPECT_EQ(executor_.jobs(), 1u);
  ASSERT_EQ(second_executor.jobs(), 1u);
  EXPECT_TRUE(second_executor.job(0).tasks[0].query.CheckPreparedFor(**second_index).ok());
  EXPECT_FALSE(second_executor.job(0).tasks[0].query.CheckPreparedFor(*index_).ok());

  second_executor.set_capacity(1);
  EXPECT_EQ(dispatcher_->Admissible().code(), absl::StatusCode::kResourceExhausted);

  // The first call is answered from its own target, which the call holds meanwhile.
  executor_.Complete(0, 0, Ran({{.docid = 3, .score = 1.0f}}));
  const absl::StatusOr<SearchResponse> answered = responses_.Get(0);
  ASSERT_TRUE(answered.ok()) << answered.status();
  EXPECT_EQ(answered->hits(0).external_id(), "doc3");
  EXPECT_FALSE(first.expired());
  second_executor.Complete(0, 0, Ran({{.docid = 1, .score = 2.0f}}));
  ASSERT_TRUE(later.Get(0).ok());
  EXPECT_EQ(later.Get(0)->hits(0).external_id(), "doc1");
}

}  // namespace
}  // namespace tandem::server
