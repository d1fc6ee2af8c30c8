#include "bench/load_runner.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <map>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tandem/v1/search.grpc.pb.h"

namespace tandem::bench {
namespace {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using tandem::v1::SearchService;
using tandem::v1::SearchStreamResponse;

TEST(SummarizeTest, NearestRankPercentiles) {
  std::vector<double> us(1000);
  std::iota(us.begin(), us.end(), 1.0);  // 1..1000 us, shuffled order must not matter
  std::reverse(us.begin(), us.end());
  const LatencySummary s = Summarize(us);
  EXPECT_DOUBLE_EQ(s.p50, 0.500);
  EXPECT_DOUBLE_EQ(s.p90, 0.900);
  EXPECT_DOUBLE_EQ(s.p95, 0.950);
  EXPECT_DOUBLE_EQ(s.p99, 0.990);
  EXPECT_DOUBLE_EQ(s.p999, 0.999);
  EXPECT_DOUBLE_EQ(s.max, 1.000);
  EXPECT_DOUBLE_EQ(s.mean, 0.5005);
}

TEST(SummarizeTest, OneSampleAndNone) {
  const LatencySummary one = Summarize({2500});
  EXPECT_DOUBLE_EQ(one.p50, 2.5);
  EXPECT_DOUBLE_EQ(one.p999, 2.5);
  EXPECT_DOUBLE_EQ(one.max, 2.5);
  const LatencySummary none = Summarize({});
  EXPECT_EQ(none.max, 0);
  EXPECT_EQ(none.mean, 0);
}

TEST(LoadSpecTest, Names) {
  EXPECT_EQ((LoadSpec{.concurrency = 8}).Name(), "conc=8");
  EXPECT_EQ((LoadSpec{.open_loop = true, .rate = 250}).Name(), "rate=250");
  EXPECT_EQ(StatusCodeName(grpc::StatusCode::RESOURCE_EXHAUSTED), "RESOURCE_EXHAUSTED");
  EXPECT_EQ(StatusCodeName(static_cast<grpc::StatusCode>(99)), "UNRECOGNIZED");
}

// Answers "bad" with INVALID_ARGUMENT and anything else with OK and fixed stats.
class FakeSearchService final : public SearchService::Service {
 public:
  grpc::Status Search(grpc::ServerContext*, const SearchRequest* request,
                      SearchResponse* response) override {
    if (request->text() == "bad")
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad query");
    response->mutable_stats()->set_queued_micros(3);
    response->mutable_stats()->set_execution_micros(5);
    response->mutable_stats()->set_total_micros(10);
    return grpc::Status::OK;
  }

  // In order, like the node; "bad" gets INVALID_ARGUMENT in its response, "swap" an answer that
  // names another query.
  grpc::Status SearchStream(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<SearchStreamResponse, SearchRequest>* stream) override {
    SearchRequest request;
    while (stream->Read(&request)) {
      SearchStreamResponse response;
      response.set_request_id(request.text() == "swap" ? "another" : request.request_id());
      if (request.text() == "bad") {
        response.mutable_status()->set_code(static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
      } else {
        response.mutable_response()->mutable_stats()->set_total_micros(10);
        response.mutable_response()->mutable_stats()->set_execution_micros(5);
      }
      if (!stream->Write(response)) break;
    }
    return grpc::Status::OK;
  }
};

class LoadRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port_, 0);
  }
  void TearDown() override { server_->Shutdown(); }

  LoadRunner MakeRunner(const std::vector<std::string>& texts, RunOptions options, int port = 0) {
    std::vector<std::unique_ptr<SearchService::Stub>> stubs;
    for (int i = 0; i < 2; ++i) {
      stubs.push_back(SearchService::NewStub(
          grpc::CreateChannel(absl::StrCat("127.0.0.1:", port > 0 ? port : port_),
                              grpc::InsecureChannelCredentials())));
    }
    std::vector<SearchRequest> requests;
    for (const std::string& t : texts) {
      SearchRequest& r = requests.emplace_back();
      r.set_text(t);
      r.set_request_id(absl::StrCat("q", requests.size()));
    }
    return LoadRunner(std::move(stubs), std::move(requests), /*cq_threads=*/2, options);
  }

  FakeSearchService service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
};

// Options of a test row: no warm-up, a deadline no test reaches, 3 streams per channel.
RunOptions TestOptions(Transport transport) {
  RunOptions options;
  options.warmup_s = 0;
  options.timeout_s = 60;
  options.transport = transport;
  options.streams_per_stub = 3;
  return options;
}

TEST_F(LoadRunnerTest, ClosedLoopSendsExactlyNumQueriesAndCountsStatuses) {
  for (const Transport transport : {Transport::kUnary, Transport::kStream}) {
    SCOPED_TRACE(TransportName(transport));
    RunOptions options = TestOptions(transport);
    options.num_queries = 200;
    LoadRunner runner = MakeRunner({"good", "bad"}, options);
    const RunResult r = runner.Run(LoadSpec{.concurrency = 8});
    EXPECT_EQ(r.sent, 200u);
    // Queries alternate in file order whatever the interleaving of the clients.
    EXPECT_EQ(r.status_counts.at("OK"), 100u);
    EXPECT_EQ(r.status_counts.at("INVALID_ARGUMENT"), 100u);
    EXPECT_EQ(r.status_counts.size(), 2u);
    EXPECT_GT(r.achieved_qps, 0);
    EXPECT_GT(r.latency.p50, 0);
    EXPECT_LE(r.latency.p50, r.latency.max);
    EXPECT_DOUBLE_EQ(r.server_total_us, 10);
    EXPECT_DOUBLE_EQ(r.server_execution_us, 5);

    // A second row on the same runner starts from zero (on fresh streams).
    const RunResult again = runner.Run(LoadSpec{.concurrency = 1});
    EXPECT_EQ(again.sent, 200u);
    EXPECT_EQ(again.status_counts.at("OK"), 100u);
  }
}

TEST_F(LoadRunnerTest, OpenLoopSendsAtTheRate) {
  for (const Transport transport : {Transport::kUnary, Transport::kStream}) {
    SCOPED_TRACE(TransportName(transport));
    RunOptions options = TestOptions(transport);
    options.warmup_s = 0.1;
    options.duration_s = 1.0;
    LoadRunner runner = MakeRunner({"good"}, options);
    const RunResult r = runner.Run(LoadSpec{.open_loop = true, .rate = 200});
    // Poisson with mean 200 in the measured second: 5 standard deviations either way is [130, 270].
    EXPECT_GT(r.sent, 130u);
    EXPECT_LT(r.sent, 270u);
    EXPECT_EQ(r.status_counts.at("OK"), r.sent);
    EXPECT_EQ(r.status_counts.size(), 1u);
    EXPECT_NEAR(r.offered_qps, static_cast<double>(r.sent), 1e-9);
  }
}

TEST_F(LoadRunnerTest, OpenLoopCountsQueriesBeyondMaxInFlight) {
  RunOptions options;
  options.warmup_s = 0;
  options.num_queries = 50;
  options.timeout_s = 60;
  options.max_in_flight = 1;
  LoadRunner runner = MakeRunner({"good"}, options);
  // 100000 queries/s against one slot: most arrivals find it taken.
  const RunResult r = runner.Run(LoadSpec{.open_loop = true, .rate = 100000});
  ASSERT_TRUE(r.status_counts.count(kClientOverload));
  EXPECT_EQ(r.status_counts.at("OK") + r.status_counts.at(kClientOverload), 50u);
  EXPECT_EQ(r.sent, r.status_counts.at("OK"));
}

TEST_F(LoadRunnerTest, StreamResponseForAnotherQueryIsCountedAsMismatched) {
  RunOptions options = TestOptions(Transport::kStream);
  options.num_queries = 30;
  LoadRunner runner = MakeRunner({"good", "swap", "good"}, options);
  const RunResult r = runner.Run(LoadSpec{.concurrency = 2});
  EXPECT_EQ(r.sent, 30u);
  EXPECT_EQ(r.status_counts.at("OK"), 20u);
  EXPECT_EQ(r.status_counts.at(kMismatchedResponse), 10u);
}

// Reads one query on each stream, then ends the stream UNAVAILABLE without answering it.
class FailingStreamService final : public SearchService::Service {
 public:
  grpc::Status SearchStream(
      grpc::ServerContext*,
      grpc::ServerReaderWriter<SearchStreamResponse, SearchRequest>* stream) override {
    SearchRequest request;
    stream->Read(&request);
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "going away");
  }
};

// Rows of a kStream runner whose streams all fail: one channel of 3 streams, 1000 queries at most.
class LoadRunnerStreamFailureTest : public ::testing::Test {
 protected:
  void Serve(grpc::Service* service) {
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterService(service);
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void TearDown() override {
    if (server_ != nullptr) server_->Shutdown();
  }

  LoadRunner MakeRunner() {
    std::vector<std::unique_ptr<SearchService::Stub>> stubs;
    stubs.push_back(SearchService::NewStub(grpc::CreateChannel(
        absl::StrCat("127.0.0.1:", port_), grpc::InsecureChannelCredentials())));
    std::vector<SearchRequest> requests(1);
    requests[0].set_text("good");
    RunOptions options = TestOptions(Transport::kStream);
    options.num_queries = 1000;
    return LoadRunner(std::move(stubs), std::move(requests), 1, options);
  }

  SearchService::Service unimplemented_;  // answers every method UNIMPLEMENTED
  FailingStreamService failing_;
  std::unique_ptr<grpc::Server> server_;  // after the services, which must outlive it
  int port_ = 0;
};

// Every outcome of `r` has `code`, or nothing was sent.
void ExpectOnly(const RunResult& r, const std::string& code) {
  const std::map<std::string, uint64_t> expected =
      r.sent > 0 ? std::map<std::string, uint64_t>{{code, r.sent}}
                 : std::map<std::string, uint64_t>{};
  EXPECT_EQ(r.status_counts, expected);
  EXPECT_LE(r.sent, 1000u);
  EXPECT_EQ(r.latency.max, 0);
}

TEST_F(LoadRunnerStreamFailureTest, ServerWithoutStreamsEndsTheRowWithTheStreamsStatus) {
  Serve(&unimplemented_);
  LoadRunner runner = MakeRunner();
  for (const LoadSpec& spec :
       {LoadSpec{.concurrency = 4}, LoadSpec{.open_loop = true, .rate = 1000}}) {
    SCOPED_TRACE(spec.Name());
    // The row ends once every stream has failed (it would hang if failed queries were lost). The
    // node may refuse every stream before the row's first query, and then the row sends nothing.
    ExpectOnly(runner.Run(spec), "UNIMPLEMENTED");
  }
}

TEST_F(LoadRunnerStreamFailureTest, FailedStreamCountsItsUnansweredQueriesWithItsStatus) {
  Serve(&failing_);
  LoadRunner runner = MakeRunner();
  for (const LoadSpec& spec :
       {LoadSpec{.concurrency = 4}, LoadSpec{.open_loop = true, .rate = 1000}}) {
    SCOPED_TRACE(spec.Name());
    // Each of the 3 streams ends only after it was sent a query, so the row sends at least 3.
    const RunResult r = runner.Run(spec);
    EXPECT_GE(r.sent, 3u);
    ExpectOnly(r, "UNAVAILABLE");
  }
}

}  // namespace
}  // namespace tandem::bench
