// End-to-end tests of tandem-server's RPCs over real gRPC on loopback: the real binary serves a
// small index; every answer must equal what cpu::DaatEngine returns in-process on the same index.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <future>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "clients/cli/health_client.h"
#include "gmock/gmock.h"
#include "grpcpp/generic/generic_stub.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/client_callback.h"
#include "gtest/gtest.h"
#include "tests/e2e_clients.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"
#include "tests/e2e_suites.h"

namespace tandem::testing {
namespace {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using ::testing::Contains;
using ::testing::HasSubstr;

class ServerE2eTest : public ServedIndexE2eTest {
 protected:
  void SetUp() override {
    ASSERT_NE(server_, nullptr);
    stub_ = NewStub(server_->address());
  }

  grpc::Status Search(const SearchRequest& request, SearchResponse* response) {
    return CallSearch(*stub_, request, response, kE2eTimeout);
  }

  std::string Scrape() {
    absl::StatusOr<std::string> scrape = HttpGet(server_->metrics_address(), "/metrics");
    EXPECT_TRUE(scrape.ok()) << scrape.status();
    return scrape.value_or("");
  }

  std::unique_ptr<tandem::v1::SearchService::Stub> stub_;
};

// Frequent and rare terms, repeats, an absent term, stop words among them.
std::vector<std::string> Queries() {
  std::vector<std::string> queries = {"t0 t1",          "t250 t299",    "t3 t3 t17",
                                      "t5 zzzabsent",   "the t2 of t9", "T4 t40 t80 t120",
                                      "t1 t2 t3 t4 t5", "t299"};
  std::mt19937 rng(7);
  for (int i = 0; i < 6; ++i) {
    std::vector<std::string> terms;
    for (int j = 0, n = 1 + static_cast<int>(rng() % 5); j < n; ++j) {
      terms.push_back(absl::StrCat("t", rng() % 300));
    }
    queries.push_back(absl::StrJoin(terms, " "));
  }
  return queries;
}

// Connections that open and send nothing (a stuck or hostile client) do not hold up scrapes.
TEST_F(ServerE2eTest, IdleMetricsConnectionsDoNotBlockScrapes) {
  const std::string address = server_->metrics_address();
  const size_t colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  ASSERT_EQ(::inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr), 1);
  std::vector<int> idle;
  for (int i = 0; i < 4; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(fd);
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> scrape = HttpGet(address, "/metrics");
  EXPECT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  for (int fd : idle) ::close(fd);
}

// Clients that send a request line and close, 1,000 of them as fast as they can, do not blind
// the monitoring: a scrape right after them answers within a couple of seconds (it used to wait
// for their idle timeouts, over a minute).
TEST_F(ServerE2eTest, HalfSentRequestsThatCloseDoNotBlindTheMetrics) {
  const std::string address = server_->metrics_address();
  const size_t colon = address.rfind(':');
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(std::stoi(address.substr(colon + 1))));
  ASSERT_EQ(::inet_pton(AF_INET, address.substr(0, colon).c_str(), &addr.sin_addr), 1);
  const std::string partial = "GET /metrics HTTP/1.1\r\n";
  for (int i = 0; i < 1000; ++i) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    ASSERT_EQ(::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    ::send(fd, partial.data(), partial.size(), MSG_NOSIGNAL);
    ::close(fd);
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::string> scrape = HttpGet(address, "/metrics");
  EXPECT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
}

TEST_F(ServerE2eTest, SearchEqualsTheEngineInEveryMode) {
  for (const std::string& text : Queries()) {
    for (auto mode : {tandem::v1::QUERY_MODE_AND, tandem::v1::QUERY_MODE_OR,
                      tandem::v1::QUERY_MODE_AND_OR, tandem::v1::QUERY_MODE_UNSPECIFIED}) {
      for (uint32_t k : {0u, 1u, 10u, 1000u}) {
        SCOPED_TRACE(absl::StrCat("'", text, "' mode ", mode, " k ", k));
        const SearchRequest request = TextRequest(text, mode, k);
        SearchResponse response;
        grpc::Status status = Search(request, &response);
        ASSERT_TRUE(status.ok()) << status.error_message();
        const index::SearchResult expected = index_->Expected(request);
        index_->ExpectSameHits(response, expected);
        EXPECT_EQ(static_cast<int>(response.stats().executed_mode()),
                  static_cast<int>(expected.stats.executed_mode) + 1)  // proto enum is engine + 1
            << "executed mode";
        EXPECT_EQ(response.stats().engine(), "cpu");
        EXPECT_GE(response.stats().total_micros(), response.stats().execution_micros());
      }
    }
  }
}

// The hybrid CPU+GPU scheduler (--scheduler hybrid; on this CPU-only build every query runs on the
// CPU, ordered by the heuristic cost model) answers exactly as the engine does and exports its
// metrics; a GPU hint is still refused.
TEST_F(ServerE2eTest, HybridSchedulerAnswersLikeTheEngineAndExportsItsMetrics) {
  auto server = ServerProcess::Start({"--index", index_->dir(), "--threads", "2", "--scheduler",
                                      "hybrid", "--tune-default-deadline", "2s"});
  ASSERT_TRUE(server.ok()) << server.status();
  auto stub = NewStub((*server)->address());
  int queries = 0;
  for (const std::string& text : Queries()) {
    for (auto mode : {tandem::v1::QUERY_MODE_AND, tandem::v1::QUERY_MODE_OR}) {
      SCOPED_TRACE(absl::StrCat("'", text, "' mode ", mode));
      const SearchRequest request = TextRequest(text, mode, 10);
      SearchResponse response;
      grpc::Status status = CallSearch(*stub, request, &response, kE2eTimeout);
      ASSERT_TRUE(status.ok()) << status.error_message();
      index_->ExpectSameHits(response, index_->Expected(request));
      EXPECT_EQ(response.stats().engine(), "cpu");
      ++queries;
    }
  }
  SearchRequest gpu = TextRequest("t1");
  gpu.set_engine(tandem::v1::ENGINE_HINT_GPU);
  SearchResponse response;
  EXPECT_EQ(CallSearch(*stub, gpu, &response, kE2eTimeout).error_code(),
            grpc::StatusCode::FAILED_PRECONDITION);

  // A worker gives its slot back and reports its time after the answer is sent: wait for both.
  const std::string& metrics = (*server)->metrics_address();
  ASSERT_TRUE(WaitForMetric(metrics, "tandem_processor_busy_workers", {}, Equals(0)));
  ASSERT_TRUE(WaitForMetric(metrics, "tandem_processor_worker_seconds_total",
                            {{"processor", "cpu"}, {"activity", "engine"}},
                            [](double seconds) { return seconds > 0; }));
  absl::StatusOr<std::string> scrape = HttpGet(metrics, "/metrics");
  ASSERT_TRUE(scrape.ok()) << scrape.status();
  EXPECT_EQ(MetricSum(*scrape, "tandem_processor_workers", {{"processor", "cpu"}}), 2.0);
  EXPECT_EQ(MetricSum(*scrape, "tandem_scheduler_decisions_total",
                      {{"queue", "cpu"}, {"processor", "cpu"}}),
            queries);
  EXPECT_EQ(MetricSum(*scrape, "tandem_scheduler_decisions_total", {{"queue", "pinned"}}), 1.0);
  EXPECT_EQ(MetricSum(*scrape, "tandem_scheduler_steals_total"), 0.0);
  EXPECT_EQ(MetricSum(*scrape, "tandem_scheduler_cost_ratio_count", {{"engine", "cpu"}}), queries);
  EXPECT_GT(MetricSum(*scrape, "tandem_processor_busy_seconds_total", {{"processor", "cpu"}}), 0.0);
  EXPECT_EQ(MetricSum(*scrape, "tandem_scheduler_queue_depth"), 0.0);
  EXPECT_GT(MetricSum(*scrape, "tandem_scheduler_ratio_threshold", {{"queue", "gpu"}}),
            MetricSum(*scrape, "tandem_scheduler_ratio_threshold", {{"queue", "cpu"}}));
  EXPECT_GT(MetricSum(*scrape, "tandem_scheduler_ratio_threshold", {{"queue", "cpu"}}), 0.0);
  // The heuristic has no evaluation queries; the live error is set from the first measurement.
  EXPECT_EQ(MetricSum(*scrape, "tandem_cost_model_mean_relative_error", {{"source", "training"}}),
            0.0);
  EXPECT_GT(MetricSum(*scrape, "tandem_cost_model_mean_relative_error", {{"source", "live"}}), 0.0);
}

TEST_F(ServerE2eTest, ReportsTheAnalyzedTerms) {
  SearchResponse response;
  ASSERT_TRUE(Search(TextRequest("The T3 of t3 and t17"), &response).ok());
  EXPECT_THAT(response.stats().terms(), ::testing::ElementsAre("t3", "t17"));
}

TEST_F(ServerE2eTest, PreAnalyzedTermsWeightsAndBm25ParametersEqualTheEngine) {
  SearchRequest request;
  auto* a = request.mutable_terms()->add_terms();
  a->set_term("t2");
  a->set_weight(2.5f);
  request.mutable_terms()->add_terms()->set_term("t30");  // weight 0 means 1
  request.mutable_bm25()->set_k1(1.2f);
  request.mutable_bm25()->set_b(0.75f);
  request.set_k(50);
  SearchResponse response;
  ASSERT_TRUE(Search(request, &response).ok());
  EXPECT_EQ(response.hits_size(), 50);
  index_->ExpectSameHits(response, index_->Expected(request));
}

TEST_F(ServerE2eTest, StopWordsOrAbsentTermsGiveNoHitsNotAnError) {
  for (const char* text : {"the of and", "zzzabsent qqqabsent", "!!! ???"}) {
    SearchResponse response;
    grpc::Status status = Search(TextRequest(text), &response);
    EXPECT_TRUE(status.ok()) << text << ": " << status.error_message();
    EXPECT_EQ(response.hits_size(), 0) << text;
  }
}

TEST_F(ServerE2eTest, InvalidArgumentsNameTheField) {
  struct Case {
    SearchRequest request;
    std::string message;
  };
  std::vector<Case> cases;
  cases.push_back({TextRequest("t1", tandem::v1::QUERY_MODE_OR, 20000),
                   "k must be between 1 and 10000, got 20000"});
  cases.push_back({SearchRequest(), "query is not set"});
  cases.push_back({TextRequest("   "), "text is empty"});
  std::string many;
  for (int i = 0; i < 65; ++i) absl::StrAppend(&many, "t", i, " ");
  cases.push_back({TextRequest(many), "65 terms, more than the limit of 64"});
  cases.push_back({TextRequest(std::string(5000, 'x')), "5000 bytes, more than the limit of 4096"});
  SearchRequest bad_k1 = TextRequest("t1");
  bad_k1.mutable_bm25()->set_k1(-1.0f);
  cases.push_back({bad_k1, "bm25.k1 must be in [0, 100], got -1"});
  SearchRequest bad_b = TextRequest("t1");
  bad_b.mutable_bm25()->set_b(2.0f);
  cases.push_back({bad_b, "bm25.b must be in [0, 1], got 2"});
  SearchRequest bad_weight;
  auto* t = bad_weight.mutable_terms()->add_terms();
  t->set_term("t1");
  t->set_weight(-3.0f);
  cases.push_back({bad_weight, "terms.terms[0].weight must be in [0, 1e+06] (0: 1), got -3"});
  SearchRequest huge_weight = bad_weight;
  huge_weight.mutable_terms()->mutable_terms(0)->set_weight(3.4e38f);
  cases.push_back({huge_weight, "terms.terms[0].weight must be in [0, 1e+06]"});
  SearchRequest long_id = TextRequest("t1");
  long_id.set_request_id(std::string(257, 'i'));
  cases.push_back({long_id, "request_id has 257 bytes, at most 256"});
  SearchRequest bad_mode = TextRequest("t1");
  bad_mode.set_mode(static_cast<tandem::v1::QueryMode>(9));
  cases.push_back({bad_mode, "mode: unknown QueryMode value 9"});
  SearchRequest bad_engine = TextRequest("t1");
  bad_engine.set_engine(static_cast<tandem::v1::EngineHint>(9));
  cases.push_back({bad_engine, "engine: unknown EngineHint value 9"});
  for (const Case& c : cases) {
    SearchResponse response;
    grpc::Status status = Search(c.request, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << c.message;
    EXPECT_THAT(status.error_message(), HasSubstr(c.message));
  }
}

// Raw bytes to a method, as a client with a broken or foreign encoder sends them.
grpc::Status RawUnaryCall(const std::string& address, const std::string& method,
                          const std::string& bytes, std::string* response = nullptr) {
  grpc::GenericStub stub(NewChannel(address));
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  grpc::Slice slice(bytes);
  const grpc::ByteBuffer request(&slice, 1);
  grpc::ByteBuffer reply;
  std::promise<grpc::Status> done;
  stub.UnaryCall(&context, method, grpc::StubOptions(), &request, &reply,
                 [&done](grpc::Status status) { done.set_value(std::move(status)); });
  grpc::Status status = done.get_future().get();
  if (response != nullptr && status.ok()) {
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(reply.Dump(&slices).ok());
    response->clear();
    for (const grpc::Slice& s : slices) {
      response->append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
  }
  return status;
}

// A bidirectional stream of raw messages: writes them all, half-closes, reads every response.
class RawStream final : public grpc::ClientBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer> {
 public:
  RawStream(const std::string& address, std::vector<std::string> messages)
      : stub_(NewChannel(address)) {
    SetTimeout(context_, kE2eTimeout);
    for (const std::string& m : messages) {
      grpc::Slice slice(m);
      messages_.emplace_back(&slice, 1);
    }
    stub_.PrepareBidiStreamingCall(&context_, "/tandem.v1.SearchService/SearchStream",
                                   grpc::StubOptions(), this);
    StartRead(&reply_);
    NextWrite();
    StartCall();
  }
  void OnWriteDone(bool ok) override {
    if (ok) NextWrite();
  }
  void OnReadDone(bool ok) override {
    if (!ok) return;
    std::vector<grpc::Slice> slices;
    std::string bytes;
    if (reply_.Dump(&slices).ok()) {
      for (const grpc::Slice& s : slices) {
        bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
      }
    }
    tandem::v1::SearchStreamResponse response;
    EXPECT_TRUE(response.ParseFromString(bytes));
    responses_.push_back(std::move(response));
    StartRead(&reply_);
  }
  void OnDone(const grpc::Status& status) override { done_.set_value(status); }

  // The call's status, once every response was read.
  grpc::Status Await() { return done_.get_future().get(); }
  const std::vector<tandem::v1::SearchStreamResponse>& responses() const { return responses_; }

 private:
  void NextWrite() {
    if (next_ < messages_.size()) {
      StartWrite(&messages_[next_++]);
    } else {
      StartWritesDone();
    }
  }

  grpc::GenericStub stub_;
  grpc::ClientContext context_;
  std::vector<grpc::ByteBuffer> messages_;
  size_t next_ = 0;
  grpc::ByteBuffer reply_;
  std::vector<tandem::v1::SearchStreamResponse> responses_;
  std::promise<grpc::Status> done_;
};

// Bytes that are not the method's message get INVALID_ARGUMENT with a message, are counted, and
// leave the node serving; gRPC's own handlers would answer UNIMPLEMENTED, with no message.
TEST_F(ServerE2eTest, MalformedRequestsAreInvalidArgumentAndCounted) {
  const std::string before = Scrape();
  const std::string garbage("\x0a\x64xy", 4);         // field 1, 100 bytes long, with 2 of them
  const std::string not_utf8("\x0a\x02\xff\xfe", 4);  // text that is not UTF-8
  for (const char* method :
       {"/tandem.v1.SearchService/Search", "/tandem.v1.SearchService/SearchBatch"}) {
    for (const std::string& bytes : {garbage, not_utf8}) {
      SCOPED_TRACE(method);
      const grpc::Status status = RawUnaryCall(server_->address(), method, bytes);
      EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_THAT(status.error_message(), HasSubstr("request is not a valid tandem.v1.Search"));
    }
  }
  const grpc::Status info =
      RawUnaryCall(server_->address(), "/tandem.v1.SearchService/GetIndexInfo", "\xff");
  EXPECT_EQ(info.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(info.error_message(), HasSubstr("tandem.v1.GetIndexInfoRequest (1 bytes)"));

  // Valid bytes through the same path are answered as usual.
  std::string reply;
  ASSERT_TRUE(RawUnaryCall(server_->address(), "/tandem.v1.SearchService/Search",
                           TextRequest("t0 t1").SerializeAsString(), &reply)
                  .ok());
  SearchResponse response;
  ASSERT_TRUE(response.ParseFromString(reply));
  index_->ExpectSameHits(response, index_->Expected(TextRequest("t0 t1")));

  // In a stream, a malformed message gets its own INVALID_ARGUMENT response and the stream goes on.
  SearchRequest first = TextRequest("t3");
  first.set_request_id("first");
  SearchRequest last = TextRequest("t5 t6", tandem::v1::QUERY_MODE_AND);
  last.set_request_id("last");
  RawStream stream(server_->address(),
                   {first.SerializeAsString(), garbage, not_utf8, last.SerializeAsString()});
  const grpc::Status stream_status = stream.Await();
  EXPECT_TRUE(stream_status.ok()) << stream_status.error_message();
  ASSERT_EQ(stream.responses().size(), 4u);
  EXPECT_EQ(stream.responses()[0].request_id(), "first");
  index_->ExpectSameHits(stream.responses()[0].response(), index_->Expected(first));
  for (int i : {1, 2}) {
    EXPECT_EQ(stream.responses()[i].status().code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(stream.responses()[i].status().message(),
                HasSubstr("request is not a valid tandem.v1.SearchRequest"));
  }
  EXPECT_EQ(stream.responses()[3].request_id(), "last");
  index_->ExpectSameHits(stream.responses()[3].response(), index_->Expected(last));

  const std::string after = Scrape();
  auto delta = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    return MetricSum(after, name, labels) - MetricSum(before, name, labels);
  };
  EXPECT_EQ(delta("tandem_rejected_queries_total", {{"reason", "malformed_request"}}), 7);
  EXPECT_EQ(delta("tandem_queries_total",
                  {{"mode", "unparsed"}, {"engine", "none"}, {"code", "INVALID_ARGUMENT"}}),
            7);
}

TEST_F(ServerE2eTest, GpuHintWithoutGpuEngineIsFailedPrecondition) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::GetIndexInfoResponse info;
  ASSERT_TRUE(stub_->GetIndexInfo(&context, {}, &info).ok());
  if (std::find(info.engines().begin(), info.engines().end(), "gpu") != info.engines().end()) {
    GTEST_SKIP() << "this server has a GPU engine";
  }
  SearchRequest request = TextRequest("t1");
  request.set_engine(tandem::v1::ENGINE_HINT_GPU);
  SearchResponse response;
  grpc::Status status = Search(request, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("no GPU engine"));
  request.set_engine(tandem::v1::ENGINE_HINT_CPU);
  EXPECT_TRUE(Search(request, &response).ok());
}

TEST_F(ServerE2eTest, SearchBatchAnswersEachQueryOnItsOwn) {
  tandem::v1::SearchBatchRequest batch;
  const std::vector<std::string> queries = Queries();
  for (size_t i = 0; i < queries.size(); ++i) {
    SearchRequest* r = batch.add_requests();
    *r =
        TextRequest(queries[i], i % 2 ? tandem::v1::QUERY_MODE_AND : tandem::v1::QUERY_MODE_OR, 20);
    r->set_request_id(absl::StrCat("q", i));
  }
  batch.mutable_requests(3)->set_k(20000);  // one bad query fails alone
  tandem::v1::SearchBatchResponse response;
  ASSERT_TRUE(CallSearchBatch(*stub_, batch, &response, kE2eTimeout).ok());
  ASSERT_EQ(response.results_size(), batch.requests_size());
  for (int i = 0; i < batch.requests_size(); ++i) {
    SCOPED_TRACE(i);
    const tandem::v1::SearchBatchResult& result = response.results(i);
    if (i == 3) {
      EXPECT_EQ(result.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
      EXPECT_THAT(result.status().message(), HasSubstr("k must be between 1 and 10000"));
      continue;
    }
    ASSERT_EQ(result.status().code(), 0) << result.status().message();
    EXPECT_EQ(result.response().request_id(), absl::StrCat("q", i));
    index_->ExpectSameHits(result.response(), index_->Expected(batch.requests(i)));
  }
}

TEST_F(ServerE2eTest, SearchBatchOverTheLimitFailsAsAWhole) {
  tandem::v1::SearchBatchRequest batch;
  for (int i = 0; i < 1025; ++i) batch.add_requests()->set_text("t1");
  tandem::v1::SearchBatchResponse response;
  grpc::Status status = CallSearchBatch(*stub_, batch, &response, kE2eTimeout);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(),
              HasSubstr("requests has 1025 queries, more than the limit of 1024"));

  // An empty batch is a valid, empty answer.
  ASSERT_TRUE(CallSearchBatch(*stub_, {}, &response, kE2eTimeout).ok());
  EXPECT_EQ(response.results_size(), 0);
}

TEST_F(ServerE2eTest, SearchStreamAnswersInRequestOrder) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  auto stream = stub_->SearchStream(&context);
  const std::vector<std::string> queries = Queries();
  std::vector<SearchRequest> requests;
  // Many more requests than one stream may have in flight, so the server's read pausing is
  // exercised; the writer runs ahead of the reader.
  for (int round = 0; round < 5; ++round) {
    for (size_t i = 0; i < queries.size(); ++i) {
      SearchRequest r = TextRequest(queries[i], tandem::v1::QUERY_MODE_AND_OR, 5 + round);
      r.set_request_id(absl::StrCat("r", requests.size()));
      if (requests.size() % 13 == 7) r.set_k(20000);
      requests.push_back(std::move(r));
    }
  }
  const std::vector<tandem::v1::SearchStreamResponse> responses =
      PipelineOnStream(*stream, requests);
  ASSERT_EQ(responses.size(), requests.size());
  for (size_t n = 0; n < responses.size(); ++n) {
    SCOPED_TRACE(n);
    const tandem::v1::SearchStreamResponse& response = responses[n];
    EXPECT_EQ(response.request_id(), requests[n].request_id());
    if (n % 13 == 7) {
      EXPECT_EQ(response.status().code(), grpc::StatusCode::INVALID_ARGUMENT);
    } else {
      ASSERT_EQ(response.status().code(), 0) << response.status().message();
      EXPECT_EQ(response.response().request_id(), requests[n].request_id());
      index_->ExpectSameHits(response.response(), index_->Expected(requests[n]));
    }
  }
  grpc::Status status = stream->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
}

TEST_F(ServerE2eTest, GetIndexInfoDescribesTheIndex) {
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::GetIndexInfoResponse info;
  ASSERT_TRUE(stub_->GetIndexInfo(&context, {}, &info).ok());
  const index::Index& index = index_->index();
  EXPECT_EQ(info.index_id(), index.manifest().index_id);
  EXPECT_EQ(info.documents(), index.num_docs());
  EXPECT_EQ(info.terms(), index.num_terms());
  EXPECT_EQ(info.postings(), index.stats().num_postings);
  EXPECT_EQ(info.index_bytes(), index.index_bytes());
  EXPECT_EQ(info.codec(), "pfor");
  EXPECT_EQ(info.analyzer(), index.manifest().analyzer.Describe());
  EXPECT_EQ(info.average_document_length(), index.avg_doc_length());
  EXPECT_EQ(info.format_version(), index.manifest().format_version);
  EXPECT_EQ(info.source_format(), "test");
  EXPECT_EQ(info.source_input(), "test-docs.txt");  // no host path
  EXPECT_THAT(info.engines(), Contains("cpu"));
}

TEST_F(ServerE2eTest, HealthIsServing) {
  auto channel = NewChannel(server_->address());
  absl::StatusOr<cli::ServingStatus> whole = cli::CheckHealth(channel, "", kE2eTimeout);
  ASSERT_TRUE(whole.ok()) << whole.status();
  EXPECT_EQ(*whole, cli::ServingStatus::kServing);
  absl::StatusOr<cli::ServingStatus> service =
      cli::CheckHealth(channel, "tandem.v1.SearchService", kE2eTimeout);
  ASSERT_TRUE(service.ok()) << service.status();
  EXPECT_EQ(*service, cli::ServingStatus::kServing);
  absl::StatusOr<cli::ServingStatus> unknown =
      cli::CheckHealth(channel, "no.such.Service", kE2eTimeout);
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound);
}

TEST_F(ServerE2eTest, ReflectionListsAndDescribesTheService) {
  auto channel = NewChannel(server_->address());
  absl::StatusOr<std::vector<std::string>> services = ReflectionListServices(channel);
  ASSERT_TRUE(services.ok()) << services.status();
  EXPECT_THAT(*services, Contains("tandem.v1.SearchService"));
  EXPECT_THAT(*services, Contains("grpc.health.v1.Health"));

  absl::StatusOr<std::vector<std::string>> methods =
      ReflectionServiceMethods(channel, "tandem.v1.SearchService", "tandem/v1/search.proto");
  ASSERT_TRUE(methods.ok()) << methods.status();
  EXPECT_THAT(*methods, ::testing::UnorderedElementsAre("Search", "SearchBatch", "SearchStream",
                                                        "GetIndexInfo", "GetCollectionStatistics"));

  // Every service it lists, health included, can be described (buf curl --list-methods, grpcurl).
  for (const std::string& service : *services) {
    absl::StatusOr<std::vector<std::string>> described =
        ReflectionFileContainingSymbol(channel, service);
    EXPECT_TRUE(described.ok()) << service << ": " << described.status();
  }
  methods =
      ReflectionServiceMethods(channel, "grpc.health.v1.Health", "grpc/health/v1/health.proto");
  ASSERT_TRUE(methods.ok()) << methods.status();
  EXPECT_THAT(*methods, ::testing::UnorderedElementsAre("Check", "Watch"));
}

TEST_F(ServerE2eTest, MetricsCountQueriesAndPassTheFormatChecks) {
  const std::string before = Scrape();
  EXPECT_EQ(MetricSum(before, "tandem_build_info", {{"gpu", "false"}}), 1.0);
  EXPECT_EQ(MetricSum(before, "tandem_index_documents"), index_->index().num_docs());
  EXPECT_EQ(MetricSum(before, "tandem_index_terms"), index_->index().num_terms());
  EXPECT_EQ(MetricSum(before, "tandem_index_size_bytes"), index_->index().index_bytes());
  EXPECT_EQ(MetricSum(before, "tandem_admission_queue_capacity"), 8.0);  // 4 x 2 threads
  // The process series every exporter has, the server's own.
  EXPECT_GT(MetricSum(before, "process_resident_memory_bytes"), 1 << 20);
  EXPECT_GT(MetricSum(before, "process_open_fds"), 0.0);
  EXPECT_GT(MetricSum(before, "process_start_time_seconds"), 1.7e9);

  uint64_t postings = 0;
  for (int i = 0; i < 3; ++i) {
    SearchResponse response;
    ASSERT_TRUE(Search(TextRequest("t0 t1", tandem::v1::QUERY_MODE_AND), &response).ok());
    postings += response.stats().postings_decoded();
  }
  SearchResponse response;
  ASSERT_TRUE(Search(TextRequest("t7"), &response).ok());
  postings += response.stats().postings_decoded();
  EXPECT_EQ(Search(TextRequest("t1", tandem::v1::QUERY_MODE_OR, 20000), &response).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);

  // A query leaves the in-flight count just after its answer is sent: wait for the last one.
  ASSERT_TRUE(WaitForMetric(server_->metrics_address(), "tandem_queries_in_flight", {}, Equals(0)));
  const std::string after = Scrape();
  auto delta = [&](const std::string& name, const std::map<std::string, std::string>& labels) {
    return MetricSum(after, name, labels) - MetricSum(before, name, labels);
  };
  EXPECT_EQ(delta("tandem_queries_total", {{"mode", "and"}, {"engine", "cpu"}, {"code", "OK"}}), 3);
  EXPECT_EQ(delta("tandem_queries_total", {{"mode", "or"}, {"engine", "cpu"}, {"code", "OK"}}), 1);
  EXPECT_EQ(delta("tandem_queries_total",
                  {{"mode", "or"}, {"engine", "none"}, {"code", "INVALID_ARGUMENT"}}),
            1);
  EXPECT_EQ(delta("tandem_rejected_queries_total", {{"reason", "invalid_argument"}}), 1);
  EXPECT_EQ(delta("tandem_query_duration_seconds_count", {{"mode", "and"}, {"engine", "cpu"}}), 3);
  EXPECT_EQ(delta("tandem_query_execution_seconds_count", {{"mode", "or"}, {"engine", "cpu"}}), 1);
  EXPECT_EQ(delta("tandem_query_queue_wait_seconds_count", {{"mode", "and"}, {"engine", "cpu"}}),
            3);
  EXPECT_GT(postings, 0u);
  EXPECT_EQ(delta("tandem_postings_decoded_total", {{"engine", "cpu"}}),
            static_cast<double>(postings));
  EXPECT_EQ(MetricSum(after, "tandem_queries_in_flight"), 0.0);
  EXPECT_EQ(MetricSum(after, "tandem_admission_queue_depth"), 0.0);

  // The exposition format, by the Prometheus Python client's parser and promtool's lint rules
  // (tests/check_metrics_format.py); by promtool itself where it is installed.
  const char* source = std::getenv("TANDEM_SOURCE_DIR");
  absl::StatusOr<ProcessResult> parsed =
      RunProcess("/usr/bin/python3",
                 {absl::StrCat(source != nullptr ? source : ".", "/tests/check_metrics_format.py")},
                 kE2eTimeout, after);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->exit_code, 0) << parsed->out << parsed->err;
  EXPECT_EQ(parsed->out + parsed->err, "") << "format findings";

  const std::string promtool = FindInPath("promtool");
  if (promtool.empty()) return;
  absl::StatusOr<ProcessResult> check =
      RunProcess(promtool, {"check", "metrics"}, kE2eTimeout, after);
  ASSERT_TRUE(check.ok()) << check.status();
  EXPECT_EQ(check->exit_code, 0) << check->out << check->err;
  EXPECT_EQ(check->out + check->err, "") << "promtool lint findings";
}

}  // namespace
}  // namespace tandem::testing
