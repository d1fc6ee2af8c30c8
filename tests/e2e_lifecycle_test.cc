// End-to-end tests of tandem-server's life cycle over real gRPC: deadlines and cancellation stop
// queries, a query that expired while queued never runs, a full admission queue answers
// RESOURCE_EXHAUSTED at once, SIGTERM/SIGINT drain. Slow queries come from the testing-only
// --testing-query-delay flag, which holds each query (polling its deadline and cancellation) before
// it runs, so these tests do not depend on how fast the machine is.
#include <signal.h>

#include <atomic>
#include <functional>
#include <map>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "clients/cli/health_client.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/e2e_clients.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"
#include "tests/e2e_suites.h"

namespace tandem::testing {
namespace {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using ::testing::HasSubstr;
using ::testing::Not;

// A Search call running on its own thread.
class AsyncSearch {
 public:
  AsyncSearch(tandem::v1::SearchService::Stub& stub, SearchRequest request,
              absl::Duration timeout = kE2eTimeout)
      : request_(std::move(request)) {
    SetTimeout(context_, timeout);
    thread_ =
        std::thread([this, &stub] { status_ = stub.Search(&context_, request_, &response_); });
  }
  ~AsyncSearch() { Join(); }
  void Cancel() { context_.TryCancel(); }
  const grpc::Status& Join() {
    if (thread_.joinable()) thread_.join();
    return status_;
  }
  const SearchResponse& response() const { return response_; }

 private:
  SearchRequest request_;
  grpc::ClientContext context_;
  grpc::Status status_;
  SearchResponse response_;
  std::thread thread_;
};

class LifecycleE2eTest : public IndexE2eTest {};

TEST_F(LifecycleE2eTest, DeadlineExceededStopsTheQueryPromptly) {
  // Each query would take two minutes; the test only passes if deadlines cut that short.
  auto server = Start({"--threads", "1", "--testing-query-delay", "120s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  SearchResponse response;
  EXPECT_EQ(CallSearch(*stub, TextRequest("t1 t2"), &response, absl::Milliseconds(1)).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // A deadline long enough for the query to surely reach the server: the server must answer
  // DEADLINE_EXCEEDED itself and free the worker, not run the two minutes out.
  const absl::Time start = absl::Now();
  EXPECT_EQ(CallSearch(*stub, TextRequest("t1 t2"), &response, absl::Seconds(2)).error_code(),
            grpc::StatusCode::DEADLINE_EXCEEDED);
  // The server counts it DEADLINE_EXCEEDED, or CANCELLED when the client's reset of the expired
  // call overtook the server's own deadline timer by more than the server's clock slack.
  ASSERT_TRUE(
      WaitForScrape(server->metrics_address(), "a stopped query", [](const std::string& scrape) {
        return MetricSum(scrape, "tandem_queries_total", {{"code", "DEADLINE_EXCEEDED"}}) +
                   MetricSum(scrape, "tandem_queries_total", {{"code", "CANCELLED"}}) >=
               1;
      }));
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(0)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(100));
}

TEST_F(LifecycleE2eTest, ClientCancellationStopsTheQuery) {
  auto server = Start({"--threads", "1", "--testing-query-delay", "120s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  AsyncSearch search(*stub, TextRequest("t1"));
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(1)));
  search.Cancel();
  EXPECT_EQ(search.Join().error_code(), grpc::StatusCode::CANCELLED);
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_total",
                            {{"code", "CANCELLED"}}, Equals(1)));
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(0)));
}

// These two need exactly one worker: no GPU, whose workers would run queries beside it (the hybrid
// scheduler's --gpu-threads).
TEST_F(LifecycleE2eTest, QueryThatExpiredInTheQueueIsNeverRun) {
  auto server = Start({"--threads", "1", "--gpu", "off", "--testing-query-delay", "120s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  AsyncSearch running(*stub, TextRequest("t1"));
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(1)));
  const absl::Time sent = absl::Now();
  {
    AsyncSearch waiting(*stub, TextRequest("t2"), absl::Seconds(1));
    EXPECT_EQ(waiting.Join().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
  }
  // The server's copy of the deadline starts when the request arrives, a little after the client's;
  // nothing the server exposes tells when it passed, so leave a wide margin before freeing the
  // worker (which then finds the expired query).
  absl::SleepFor(sent + absl::Seconds(3) - absl::Now());
  running.Cancel();
  running.Join();
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_rejected_queries_total",
                            {{"reason", "expired_in_queue"}}, Equals(1)));
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(0)));
  // Only the first query ever began executing.
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_query_execution_seconds_count", {},
                            Equals(1)));
}

// Batches count every query against admission, and the responses in flight are bounded: a call
// that would pass either limit is refused whole with a message, and the node goes on serving.
TEST_F(LifecycleE2eTest, BatchesCountEveryQueryAndTheMemoryBreakerHolds) {
  // Each k = 1000 query reserves 1000 x 192 bytes: the breaker admits four.
  auto server = Start({"--threads", "1", "--gpu", "off", "--queue-capacity", "100", "--max-batch",
                       "4", "--max-batch-hits", "4000", "--max-queries-in-flight", "6",
                       "--max-response-bytes-in-flight", "800000", "--testing-query-delay", "2s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  auto batch_of = [](int queries, uint32_t k) {
    tandem::v1::SearchBatchRequest batch;
    for (int i = 0; i < queries; ++i) {
      SearchRequest* r = batch.add_requests();
      r->set_text(absl::StrCat("t", i));
      r->set_k(k);
    }
    return batch;
  };
  // Three queries of k = 1000 held by the slow worker.
  const tandem::v1::SearchBatchRequest held = batch_of(3, 1000);
  tandem::v1::SearchBatchResponse held_response;
  grpc::Status held_status;
  std::thread holder(
      [&] { held_status = CallSearchBatch(*stub, held, &held_response, kE2eTimeout); });
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(3)));

  auto call = [&](const tandem::v1::SearchBatchRequest& batch) {
    tandem::v1::SearchBatchResponse response;
    return CallSearchBatch(*stub, batch, &response, kE2eTimeout);
  };
  // Two more k = 1000 queries would pass the breaker (5 x 192,000 > 800,000).
  const grpc::Status breaker = call(batch_of(2, 1000));
  EXPECT_EQ(breaker.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(breaker.error_message(), HasSubstr("responses in flight"));
  // Four small queries would make seven in flight, past 6, though the queue has room.
  const grpc::Status in_flight = call(batch_of(4, 10));
  EXPECT_EQ(in_flight.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(in_flight.error_message(), HasSubstr("3 queries in flight and admits at most 6"));
  // One small query fits both.
  AsyncSearch small(*stub, TextRequest("t1"));
  holder.join();
  EXPECT_TRUE(held_status.ok()) << held_status.error_message();
  ASSERT_EQ(held_response.results_size(), 3);
  EXPECT_TRUE(small.Join().ok()) << small.Join().error_message();
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_rejected_queries_total",
                            {{"reason", "memory_breaker"}}, Equals(2)));
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_rejected_queries_total",
                            {{"reason", "in_flight_limit"}}, Equals(4)));
}

// A response larger than --max-send-message-bytes is refused with a message naming both sizes.
TEST_F(LifecycleE2eTest, AnOversizedResponseIsResourceExhausted) {
  auto server = Start({"--threads", "1", "--gpu", "off", "--max-send-message-bytes", "2000"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  SearchResponse response;
  const grpc::Status status =
      stub->Search(&context, TextRequest("t0 t1 t2", tandem::v1::QUERY_MODE_OR, 1000), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(status.error_message(), HasSubstr("more than this node sends in one message (2000)"));
  grpc::ClientContext small_context;
  SetTimeout(small_context, kE2eTimeout);
  EXPECT_TRUE(
      stub->Search(&small_context, TextRequest("t0", tandem::v1::QUERY_MODE_OR, 3), &response)
          .ok());
}

TEST_F(LifecycleE2eTest, FullQueueAnswersResourceExhaustedAtOnce) {
  auto server = Start(
      {"--threads", "1", "--gpu", "off", "--queue-capacity", "1", "--testing-query-delay", "5s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  AsyncSearch running(*stub, TextRequest("t1"));
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(1)));
  ASSERT_TRUE(
      WaitForMetric(server->metrics_address(), "tandem_admission_queue_depth", {}, Equals(0)));
  AsyncSearch queued(*stub, TextRequest("t2"));
  ASSERT_TRUE(
      WaitForMetric(server->metrics_address(), "tandem_admission_queue_depth", {}, Equals(1)));

  const absl::Time start = absl::Now();
  SearchResponse response;
  grpc::Status refused = CallSearch(*stub, TextRequest("t3"), &response, kE2eTimeout);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_THAT(refused.error_message(), HasSubstr("admission queue is full"));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));  // well before a worker could free up

  tandem::v1::SearchBatchRequest batch;
  batch.add_requests()->set_text("t4");
  batch.add_requests()->set_text("t5");
  tandem::v1::SearchBatchResponse batch_response;
  EXPECT_EQ(CallSearchBatch(*stub, batch, &batch_response, kE2eTimeout).error_code(),
            grpc::StatusCode::RESOURCE_EXHAUSTED);

  grpc::ClientContext stream_context;
  SetTimeout(stream_context, kE2eTimeout);
  auto stream = stub->SearchStream(&stream_context);
  SearchRequest streamed = TextRequest("t6");
  streamed.set_request_id("s1");
  ASSERT_TRUE(stream->Write(streamed));
  tandem::v1::SearchStreamResponse stream_response;
  ASSERT_TRUE(stream->Read(&stream_response));
  EXPECT_EQ(stream_response.request_id(), "s1");
  EXPECT_EQ(stream_response.status().code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  stream->WritesDone();
  EXPECT_TRUE(stream->Finish().ok());

  EXPECT_TRUE(running.Join().ok()) << running.Join().error_message();
  EXPECT_TRUE(queued.Join().ok()) << queued.Join().error_message();
  index_->ExpectSameHits(queued.response(), index_->Expected(TextRequest("t2")));
  // The Search and the batch are refused before they are parsed (one query each); the stream
  // message after (a stream's messages are always read).
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_rejected_queries_total",
                            {{"reason", "queue_full"}}, Equals(3)));
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_total",
                            {{"mode", "unparsed"}, {"code", "RESOURCE_EXHAUSTED"}}, Equals(2)));
}

// A stream client that writes and never reads: the node reads at most a few of its messages
// ahead, holds its answers under flow control, and goes on serving everyone else.
TEST_F(LifecycleE2eTest, AStreamClientThatNeverReadsHoldsNothingUp) {
  auto server = Start({"--threads", "2", "--gpu", "off"});
  ASSERT_NE(server, nullptr);
  auto slow_stub = NewStub(server->address());
  grpc::ClientContext slow_context;
  SetTimeout(slow_context, kE2eTimeout);
  auto stream = slow_stub->SearchStream(&slow_context);
  constexpr int kOffered = 100000;  // 27 MB of requests
  std::atomic<int> written{0};
  std::thread writer([&] {
    // Large answers (k = 1000, every document of frequent terms) fill the flow-control windows.
    SearchRequest request = TextRequest("t0 t1 t2 t3", tandem::v1::QUERY_MODE_AND_OR, 1000);
    request.set_request_id(std::string(256, 'r'));
    for (int i = 0; i < kOffered && stream->Write(request); ++i) written.fetch_add(1);
  });
  absl::SleepFor(absl::Seconds(2));  // the writer stalls against flow control

  // Everyone else is served at once, over a connection of their own.
  auto stub = NewStub(server->address());
  for (int i = 0; i < 20; ++i) {
    SearchResponse response;
    const grpc::Status status =
        CallSearch(*stub, TextRequest("t5 t6"), &response, absl::Seconds(5));
    ASSERT_TRUE(status.ok()) << status.error_message();
  }
  const std::string scrape = HttpGet(server->metrics_address(), "/metrics").value_or("");
  const double answered = MetricSum(scrape, "tandem_queries_total", {{"mode", "and_or"}});
  // Whether the writer stalls, and after how many requests, is gRPC's transport at work: its
  // receive window grows with the bandwidth-delay estimate, on a loaded machine past the 27 MB
  // offered. What the node controls is how many of them it reads and answers.
  EXPECT_LT(answered, 1000) << "the node read far ahead of a client that reads nothing ("
                            << written.load() << " requests written)";
  // A query of the slow stream may be in the middle of being answered at the scrape; none stays.
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(0)));

  slow_context.TryCancel();
  writer.join();
  EXPECT_FALSE(stream->Finish().ok());
  SearchResponse response;
  EXPECT_TRUE(CallSearch(*stub, TextRequest("t7"), &response, kE2eTimeout).ok());
}

TEST_F(LifecycleE2eTest, SigtermDrainsInFlightQueriesThenExitsZero) {
  auto server = Start({"--threads", "1", "--testing-query-delay", "10s", "--drain-timeout", "60s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  const SearchRequest request = TextRequest("t1 t2", tandem::v1::QUERY_MODE_AND, 20);
  AsyncSearch in_flight(*stub, request);
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(1)));

  // SIGHUP reloads the index (tests/e2e_index_load_test.cc): the query goes on, on the old one.
  server->Signal(SIGHUP);
  EXPECT_TRUE(WaitForHealth(server->address(), cli::ServingStatus::kServing));
  const absl::Time reload_deadline = absl::Now() + kE2eTimeout;
  while (server->Stderr().find("generation 2") == std::string::npos &&
         absl::Now() < reload_deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  server->Signal(SIGTERM);
  ASSERT_TRUE(WaitForHealth(server->address(), cli::ServingStatus::kNotServing));
  // A second SIGTERM (a supervisor repeating itself) and a SIGHUP do not cut the drain short.
  server->Signal(SIGTERM);
  server->Signal(SIGHUP);
  absl::SleepFor(absl::Milliseconds(200));
  EXPECT_EQ(server->WaitForExit(absl::ZeroDuration()), std::nullopt) << "exited before draining";
  // New work is refused while the in-flight query finishes.
  SearchResponse response;
  grpc::Status refused = CallSearch(*stub, TextRequest("t3"), &response, kE2eTimeout);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refused.error_message(), HasSubstr("draining"));
  absl::StatusOr<ProcessResult> cli =
      RunProcess(TANDEM_CLI_BINARY, {"--server", server->address(), "health"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->out, "NOT_SERVING\n");
  EXPECT_EQ(cli->exit_code, 3);

  const grpc::Status& status = in_flight.Join();
  ASSERT_TRUE(status.ok()) << status.error_message();
  index_->ExpectSameHits(in_flight.response(), index_->Expected(request));
  EXPECT_EQ(server->WaitForExit(), 0) << server->Stderr();
  EXPECT_THAT(server->Stderr(), HasSubstr("draining"));
  EXPECT_THAT(server->Stderr(), HasSubstr("SIGHUP: loading the index"));
  EXPECT_THAT(server->Stderr(), HasSubstr("generation 2"));
  EXPECT_THAT(server->Stderr(), HasSubstr("ignored: already draining"));
  EXPECT_THAT(server->Stderr(), Not(HasSubstr("drain timeout")));
}

TEST_F(LifecycleE2eTest, DrainTimeoutBoundsTheDrain) {
  auto server = Start({"--threads", "1", "--testing-query-delay", "120s", "--drain-timeout", "1s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  AsyncSearch in_flight(*stub, TextRequest("t1"));
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(1)));
  const absl::Time start = absl::Now();
  server->Signal(SIGINT);
  EXPECT_EQ(server->WaitForExit(), 0) << server->Stderr();
  EXPECT_LT(absl::Now() - start, absl::Seconds(60));
  EXPECT_FALSE(in_flight.Join().ok());
  EXPECT_THAT(server->Stderr(), HasSubstr("drain timeout"));
}

TEST_F(LifecycleE2eTest, IdleServerStopsOnSigint) {
  auto server = Start({});
  ASSERT_NE(server, nullptr);
  server->Signal(SIGINT);
  EXPECT_EQ(server->WaitForExit(), 0) << server->Stderr();
}

}  // namespace
}  // namespace tandem::testing
