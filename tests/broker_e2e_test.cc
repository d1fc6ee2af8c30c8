// tandem-broker end to end: an index cut by `tandem-index shard` into S shards, each served by R
// tandem-server processes on loopback, behind a tandem-broker process. The broker's answers must
// equal the single index's (same documents and order, scores bit for bit), through every method,
// while replicas die, with a shard gone (degraded, then recovered) and with a slow replica
// (hedging). With BEIR SciFact under ../shared/data, its test queries are checked the same way.
#include <signal.h>

#include <atomic>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "grpc/health/v1/health.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/data_dir.h"
#include "tests/e2e_broker.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using tandem::v1::QueryMode;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

// The hits of `expected` (docIDs, scores bit for bit, external ids) in `response`. The work done,
// postings decoded, differs: each shard skips by its own k-th score.
void ExpectSameHits(const E2eIndex& index, const SearchResponse& response,
                    const index::SearchResult& expected) {
  ASSERT_EQ(static_cast<size_t>(response.hits_size()), expected.hits.size());
  for (int i = 0; i < response.hits_size(); ++i) {
    EXPECT_EQ(response.hits(i).docid(), expected.hits[i].docid) << "rank " << i;
    EXPECT_EQ(response.hits(i).score(), expected.hits[i].score) << "rank " << i;
    EXPECT_EQ(response.hits(i).external_id(), index.index().external_id(expected.hits[i].docid))
        << "rank " << i;
  }
}

// Cuts `dir` into `shards` under `out` with the real tandem-index.
void Shard(const std::string& dir, const std::string& out, int shards) {
  absl::StatusOr<ProcessResult> run = RunProcess(
      TANDEM_INDEX_BINARY, {"shard", "--shards", absl::StrCat(shards), "--threads", "1", dir, out});
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->exit_code, 0) << run->err;
}

std::string ShardDir(const std::string& out, int s) {
  return absl::StrCat(out, "/shard-", std::string(s < 10 ? "00" : "0"), s);
}

// Random queries over the test collection's terms: every mode, k from 1 to 200, repeats,
// weights, terms no document has, BM25 parameters of the caller's.
std::vector<SearchRequest> RandomQueries(int n, uint64_t seed) {
  std::mt19937_64 random(seed);
  std::vector<SearchRequest> queries;
  const QueryMode modes[] = {tandem::v1::QUERY_MODE_OR, tandem::v1::QUERY_MODE_AND,
                             tandem::v1::QUERY_MODE_AND_OR};
  const uint32_t ks[] = {1, 10, 37, 200};
  for (int i = 0; i < n; ++i) {
    SearchRequest r;
    r.set_mode(modes[random() % 3]);
    r.set_k(ks[random() % 4]);
    const int terms = 1 + random() % 4;
    if (random() % 2 == 0) {
      std::vector<std::string> words;
      for (int t = 0; t < terms; ++t) words.push_back(absl::StrCat("t", random() % 320));
      r.set_text(absl::StrJoin(words, " "));
    } else {
      for (int t = 0; t < terms; ++t) {
        tandem::v1::WeightedTerm* term = r.mutable_terms()->add_terms();
        term->set_term(absl::StrCat("t", random() % 80));
        term->set_weight(0.5f + static_cast<float>(random() % 4));
      }
    }
    if (random() % 5 == 0) {
      r.mutable_bm25()->set_k1(1.2f);
      r.mutable_bm25()->set_b(0.75f);
    }
    r.set_request_id(absl::StrCat("q", i));
    queries.push_back(r);
  }
  return queries;
}

class BrokerE2eTest : public ::testing::Test {
 protected:
  static constexpr int kShards = 3;
  static constexpr int kReplicas = 2;

  static void SetUpTestSuite() {
    index_ = E2eIndex::Build({.num_docs = 3000}).release();
    shards_dir_ = new TempDir();
    Shard(index_->dir(), shards_dir_->path() + "/shards", kShards);
  }
  static void TearDownTestSuite() {
    delete index_;
    delete shards_dir_;
  }

  void SetUp() override {
    ASSERT_FALSE(HasFatalFailure());
    nodes_.resize(kShards);
    for (int s = 0; s < kShards; ++s) {
      for (int r = 0; r < kReplicas; ++r) {
        nodes_[s].push_back(StartNode(ShardDir(shards_dir_->path() + "/shards", s)));
        ASSERT_NE(nodes_[s].back(), nullptr);
      }
    }
  }

  std::string AllNodes() const {
    std::vector<std::string> all;
    for (const auto& shard : nodes_) all.push_back(Addresses(shard));
    return absl::StrJoin(all, ",");
  }

  static void ExpectEqualsSingleIndex(const SearchRequest& request,
                                      const SearchResponse& response) {
    SCOPED_TRACE(request.ShortDebugString());
    EXPECT_FALSE(response.degraded()) << response.ShortDebugString();
    EXPECT_EQ(response.request_id(), request.request_id());
    ExpectSameHits(*index_, response, index_->Expected(request));
  }

  static E2eIndex* index_;
  static TempDir* shards_dir_;
  std::vector<std::vector<std::unique_ptr<ServerProcess>>> nodes_;
};

E2eIndex* BrokerE2eTest::index_ = nullptr;
TempDir* BrokerE2eTest::shards_dir_ = nullptr;

TEST_F(BrokerE2eTest, AnswersEqualTheSingleIndexThroughEveryMethod) {
  std::unique_ptr<ServerProcess> broker =
      StartBroker({"--replicas", AllNodes(), "--cache-entries", "0"});
  ASSERT_NE(broker, nullptr);
  auto stub = NewStub(broker->address());
  const std::vector<SearchRequest> queries = RandomQueries(150, 11);
  for (const SearchRequest& q : queries) {
    SearchResponse response;
    grpc::Status status = CallSearch(*stub, q, &response, absl::Seconds(10));
    ASSERT_TRUE(status.ok()) << status.error_message();
    ExpectEqualsSingleIndex(q, response);
  }

  tandem::v1::SearchBatchRequest batch;
  for (int i = 0; i < 40; ++i) *batch.add_requests() = queries[i];
  batch.add_requests()->set_k(20000);  // invalid: its own status, the others answered
  {
    tandem::v1::SearchBatchResponse response;
    ASSERT_TRUE(CallSearchBatch(*stub, batch, &response, absl::Seconds(10)).ok());
    ASSERT_EQ(response.results_size(), 41);
    for (int i = 0; i < 40; ++i)
      ExpectEqualsSingleIndex(queries[i], response.results(i).response());
    EXPECT_EQ(response.results(40).status().code(), grpc::StatusCode::INVALID_ARGUMENT);
  }

  {
    grpc::ClientContext context;
    SetTimeout(context, absl::Seconds(20));
    auto stream = stub->SearchStream(&context);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE(stream->Write(queries[i]));
    stream->WritesDone();
    tandem::v1::SearchStreamResponse answer;
    int i = 0;
    while (stream->Read(&answer)) {
      ASSERT_LT(i, 100);
      EXPECT_EQ(answer.request_id(), queries[i].request_id());  // in request order
      ExpectEqualsSingleIndex(queries[i], answer.response());
      ++i;
    }
    EXPECT_EQ(i, 100);
    EXPECT_TRUE(stream->Finish().ok());
  }

  // A query error is the answer, as from one node.
  {
    grpc::ClientContext context;
    SearchRequest bad = TextRequest("t1");
    bad.set_k(20000);
    SearchResponse response;
    grpc::Status status = stub->Search(&context, bad, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_NE(status.error_message().find("k must be"), std::string::npos)
        << status.error_message();
  }

  // The broker describes the whole collection.
  {
    grpc::ClientContext context;
    tandem::v1::GetIndexInfoResponse info;
    ASSERT_TRUE(stub->GetIndexInfo(&context, {}, &info).ok());
    EXPECT_EQ(info.documents(), index_->index().num_docs());
    EXPECT_EQ(info.index_id(), index_->index().manifest().index_id);
    EXPECT_EQ(info.postings(), index_->index().stats().num_postings);
    EXPECT_FALSE(info.has_shard());
  }
  EXPECT_TRUE(WaitForMetric(broker->metrics_address(), "tandem_broker_replicas",
                            {{"state", "healthy"}}, Equals(kShards * kReplicas)));
  if (HasFailure()) ADD_FAILURE() << "broker's stderr:\n" << broker->Stderr();
}

TEST_F(BrokerE2eTest, ReplicasThatDieUnderLoadCostNoQuery) {
  std::unique_ptr<ServerProcess> broker =
      StartBroker({"--replicas", AllNodes(), "--cache-entries", "0", "--hedge-after", "off"});
  ASSERT_NE(broker, nullptr);
  const std::vector<SearchRequest> queries = RandomQueries(60, 12);
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, failed{0}, degraded{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 3; ++c) {
    clients.emplace_back([&, c] {
      auto stub = NewStub(broker->address());
      for (int i = c; !stop.load(); i = (i + 3) % static_cast<int>(queries.size())) {
        SearchResponse response;
        grpc::Status status = CallSearch(*stub, queries[i], &response, absl::Seconds(10));
        if (!status.ok()) {
          ++failed;
          ADD_FAILURE() << status.error_message();
        } else if (response.degraded()) {
          ++degraded;
        } else {
          ++answered;
        }
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(500));
  // One replica of every shard dies, one after the other, mid-load.
  for (int s = 0; s < kShards; ++s) {
    nodes_[s][0]->Signal(SIGKILL);
    absl::SleepFor(absl::Milliseconds(300));
  }
  absl::SleepFor(absl::Milliseconds(500));
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(degraded.load(), 0);
  EXPECT_GT(answered.load(), 50);
  EXPECT_TRUE(WaitForMetric(broker->metrics_address(), "tandem_broker_replicas",
                            {{"state", "ejected"}}, Equals(kShards)));
}

TEST_F(BrokerE2eTest, AShardGoneGivesDegradedAnswersAndRecovers) {
  const std::string file = shards_dir_->path() + "/replicas.txt";
  std::ofstream(file) << "# every node\n" << absl::StrReplaceAll(AllNodes(), {{",", "\n"}}) << "\n";
  std::unique_ptr<ServerProcess> broker =
      StartBroker({"--replicas-file", file, "--cache-entries", "0"});
  ASSERT_NE(broker, nullptr);
  auto stub = NewStub(broker->address());
  auto health = grpc::health::v1::Health::NewStub(NewChannel(broker->address()));
  auto serving = [&health]() {
    grpc::ClientContext context;
    grpc::health::v1::HealthCheckRequest request;
    request.set_service("tandem.v1.SearchService");
    grpc::health::v1::HealthCheckResponse response;
    return health->Check(&context, request, &response).ok() &&
           response.status() == grpc::health::v1::HealthCheckResponse::SERVING;
  };
  EXPECT_TRUE(serving());

  // Shard 1 goes away entirely.
  const std::string first_address = nodes_[1][0]->address();
  for (auto& node : nodes_[1]) node.reset();
  const uint32_t first = index_->index().num_docs() / kShards;
  const uint32_t end = 2 * index_->index().num_docs() / kShards;
  SearchRequest request = TextRequest("t1 t2 t3", tandem::v1::QUERY_MODE_OR, 50);
  SearchResponse response;
  ASSERT_TRUE(CallSearch(*stub, request, &response, absl::Seconds(10)).ok());
  EXPECT_TRUE(response.degraded());
  ASSERT_EQ(response.missing_shards_size(), 1);
  EXPECT_EQ(response.missing_shards(0), 1u);
  ASSERT_GT(response.hits_size(), 0);
  // The hits are the single index's top hits outside shard 1, in its order and scores.
  SearchRequest all = request;
  all.set_k(10000);
  index::SearchResult everything = index_->Expected(all);
  std::vector<std::pair<uint32_t, float>> expected;
  for (const index::Hit& hit : everything.hits) {
    if ((hit.docid < first || hit.docid >= end) && expected.size() < 50) {
      expected.emplace_back(hit.docid, hit.score);
    }
  }
  std::vector<std::pair<uint32_t, float>> got;
  for (const auto& hit : response.hits()) got.emplace_back(hit.docid(), hit.score());
  EXPECT_EQ(got, expected);

  // Asking for completeness gets an error naming the shard.
  {
    grpc::ClientContext context;
    SearchRequest complete = request;
    complete.set_require_complete(true);
    grpc::Status status = stub->Search(&context, complete, &response);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
    EXPECT_NE(status.error_message().find("shard 1"), std::string::npos) << status.error_message();
  }
  EXPECT_TRUE(WaitForMetric(broker->metrics_address(), "tandem_broker_degraded_answers_total", {},
                            [](double v) { return v >= 1; }));
  EXPECT_TRUE(WaitForMetric(broker->metrics_address(), "tandem_broker_shard_failures_total",
                            {{"shard", "1"}}, [](double v) { return v >= 2; }));
  const absl::Time until = absl::Now() + kE2eTimeout;
  while (serving() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_FALSE(serving());

  // Shard 1's first node comes back at its address: the broker's health checks bring it back.
  nodes_[1][0] =
      StartNode(ShardDir(shards_dir_->path() + "/shards", 1), {"--listen", first_address});
  ASSERT_NE(nodes_[1][0], nullptr);
  bool whole = false;
  while (!whole && absl::Now() < until) {
    ASSERT_TRUE(CallSearch(*stub, request, &response, absl::Seconds(10)).ok());
    whole = !response.degraded();
    if (!whole) absl::SleepFor(absl::Milliseconds(50));
  }
  ASSERT_TRUE(whole);
  ExpectEqualsSingleIndex(request, response);
  while (!serving() && absl::Now() < until) absl::SleepFor(absl::Milliseconds(50));
  EXPECT_TRUE(serving());

  // A node at a new address, written into the replicas file, joins shard 1.
  nodes_[1][1] = StartNode(ShardDir(shards_dir_->path() + "/shards", 1));
  ASSERT_NE(nodes_[1][1], nullptr);
  std::ofstream(file, std::ios::app) << nodes_[1][1]->address() << "\n";
  EXPECT_TRUE(WaitForMetric(broker->metrics_address(), "tandem_broker_replicas",
                            {{"shard", "1"}, {"state", "healthy"}}, Equals(2)));
}

TEST_F(BrokerE2eTest, ASlowReplicaIsHedged) {
  // Shard 0 gets a third replica that answers every query 2 s late; the hedge goes to another.
  nodes_[0].push_back(
      StartNode(ShardDir(shards_dir_->path() + "/shards", 0), {"--testing-query-delay", "2s"}));
  ASSERT_NE(nodes_[0].back(), nullptr);
  // Only the slow replica and one healthy one for shard 0.
  nodes_[0][0].reset();
  std::unique_ptr<ServerProcess> broker =
      StartBroker({"--replicas", AllNodes(), "--cache-entries", "0", "--hedge-after", "20ms"});
  ASSERT_NE(broker, nullptr);
  auto stub = NewStub(broker->address());
  const std::vector<SearchRequest> queries = RandomQueries(20, 13);
  for (const SearchRequest& q : queries) {
    SearchResponse response;
    const absl::Time start = absl::Now();
    ASSERT_TRUE(CallSearch(*stub, q, &response, absl::Seconds(10)).ok());
    EXPECT_LT(absl::Now() - start, absl::Seconds(1));
    ExpectEqualsSingleIndex(q, response);
  }
  EXPECT_TRUE(WaitForMetric(broker->metrics_address(), "tandem_broker_hedges_total",
                            {{"shard", "0"}}, [](double v) { return v >= 1; }));
}

TEST_F(BrokerE2eTest, CachedAnswersAreTheSame) {
  std::unique_ptr<ServerProcess> broker = StartBroker({"--replicas", AllNodes()});
  ASSERT_NE(broker, nullptr);
  auto stub = NewStub(broker->address());
  const std::vector<SearchRequest> queries = RandomQueries(20, 14);
  for (int round = 0; round < 2; ++round) {
    for (const SearchRequest& q : queries) {
      SearchResponse response;
      ASSERT_TRUE(CallSearch(*stub, q, &response, absl::Seconds(10)).ok());
      ExpectEqualsSingleIndex(q, response);
    }
  }
  EXPECT_TRUE(WaitForMetric(broker->metrics_address(), "tandem_broker_cache_requests_total",
                            {{"result", "hit"}}, [](double v) { return v >= 20; }));
}

// A client that gives up cancels the broker's calls to the shards: the node stops the query (its
// CANCELLED count goes up) long before the query's 5 s would have run out.
TEST(BrokerCancel, ACancelledCallCancelsItsShardCalls) {
  std::unique_ptr<E2eIndex> index = E2eIndex::Build({.num_docs = 200});
  std::unique_ptr<ServerProcess> node = StartNode(index->dir(), {"--testing-query-delay", "5s"});
  ASSERT_NE(node, nullptr);
  std::unique_ptr<ServerProcess> broker =
      StartBroker({"--replicas", node->address(), "--cache-entries", "0", "--hedge-after", "off"});
  ASSERT_NE(broker, nullptr);
  auto stub = NewStub(broker->address());
  for (const std::string method : {"Search", "SearchBatch"}) {
    SCOPED_TRACE(method);
    grpc::ClientContext context;
    SetTimeout(context, absl::Seconds(30));
    const absl::Time start = absl::Now();
    std::thread cancel([&context] {
      absl::SleepFor(absl::Milliseconds(300));
      context.TryCancel();
    });
    grpc::Status status;
    if (method == "Search") {
      SearchResponse response;
      status = stub->Search(&context, TextRequest("t1 t2"), &response);
    } else {
      tandem::v1::SearchBatchRequest batch;
      *batch.add_requests() = TextRequest("t1 t2");
      *batch.add_requests() = TextRequest("t3");
      tandem::v1::SearchBatchResponse response;
      status = stub->SearchBatch(&context, batch, &response);
    }
    cancel.join();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::CANCELLED);
    const double want = method == "Search" ? 1 : 3;
    EXPECT_TRUE(WaitForMetric(node->metrics_address(), "tandem_queries_total",
                              {{"code", "CANCELLED"}}, [want](double v) { return v >= want; }));
    EXPECT_LT(absl::Now() - start, absl::Seconds(4));
  }
}

TEST(BrokerStartup, RefusesBadFlagsWithOneLine) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{}, "no replicas"},
      {{"--replicas", "nohost"}, "not host:port"},
      {{"--replicas-file", "/nonexistent/replicas"}, "/nonexistent/replicas"},
      {{"--replicas", "127.0.0.1:1", "--cache-ttl", "0s"}, "cache_ttl"},
      {{"--replicas", "127.0.0.1:1", "--hedge-after", "soon"}, "--hedge-after"},
      {{"--replicas", "127.0.0.1:1", "--listen", "127.0.0.1:99999"}, "port"},
      {{"--replicas", "127.0.0.1:1", "--replica-tls-cert", "x.pem"}, "--replica-tls-ca"},
      {{"--replicas", "127.0.0.1:1", "--listen", "0.0.0.0:0"},
       "refusing to serve gRPC in plaintext on 0.0.0.0:0 without protection"},
      {{"--replicas", "127.0.0.1:1", "--listen", "127.0.0.1:0", "--metrics-listen", "[::]:0"},
       "refusing to serve metrics on [::]:0 without protection"},
  };
  for (const auto& [args, message] : cases) {
    absl::StatusOr<ProcessResult> run = RunProcess(TANDEM_BROKER_BINARY, args);
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_NE(run->exit_code, 0) << absl::StrJoin(args, " ");
    EXPECT_NE(run->err.find(message), std::string::npos)
        << absl::StrJoin(args, " ") << ": " << run->err;
  }
}

// --allow-insecure: the broker serves an unprotected network address, and says so in its log.
TEST(BrokerStartup, AllowInsecureServesNetworkAddressesWithAWarning) {
  absl::StatusOr<std::unique_ptr<ServerProcess>> broker =
      ServerProcess::Start({"--replicas", "127.0.0.1:1", "--listen", "0.0.0.0:0",
                            "--metrics-listen", "0.0.0.0:0", "--allow-insecure"},
                           kE2eTimeout, TANDEM_BROKER_BINARY);
  ASSERT_TRUE(broker.ok()) << broker.status();
  EXPECT_NE((*broker)->Stderr().find("tandem-broker: WARNING: serving gRPC in plaintext on "
                                     "0.0.0.0:0 WITHOUT PROTECTION"),
            std::string::npos)
      << (*broker)->Stderr();
  EXPECT_NE((*broker)->Stderr().find("WARNING: serving metrics on 0.0.0.0:0"), std::string::npos);
}

// Real text and real queries: `corpus` (FORMAT) built by tandem-index, cut into `shards`, each
// served by a node behind the broker, against one node serving the whole index. Every query of
// `queries` (id<TAB>text or id:text, the first `limit`) in the three modes, k 10 and 100: the same
// documents in the same order, equal scores, the same executed mode.
void ExpectShardedEqualsWhole(const std::string& corpus, const std::string& format,
                              const std::string& queries, int shards, int limit) {
  TempDir tmp;
  const std::string whole = tmp.path() + "/whole";
  absl::StatusOr<ProcessResult> build = RunProcess(
      TANDEM_INDEX_BINARY,
      {"build", "--input", corpus, "--format", format, "--output", whole, "--threads", "2"},
      absl::Minutes(5));
  ASSERT_TRUE(build.ok()) << build.status();
  ASSERT_EQ(build->exit_code, 0) << build->err;
  Shard(whole, tmp.path() + "/shards", shards);
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  for (int s = 0; s < shards; ++s) nodes.push_back(StartNode(ShardDir(tmp.path() + "/shards", s)));
  std::unique_ptr<ServerProcess> single = StartNode(whole);
  ASSERT_NE(single, nullptr);
  std::unique_ptr<ServerProcess> broker =
      StartBroker({"--replicas", Addresses(nodes), "--cache-entries", "0"});
  ASSERT_NE(broker, nullptr);
  auto via_broker = NewStub(broker->address());
  auto direct = NewStub(single->address());
  std::ifstream in(queries);
  std::string line;
  int checked = 0;
  const QueryMode modes[] = {tandem::v1::QUERY_MODE_OR, tandem::v1::QUERY_MODE_AND,
                             tandem::v1::QUERY_MODE_AND_OR};
  uint64_t hits = 0;
  while (checked < limit && std::getline(in, line)) {
    const size_t cut = line.find_first_of("\t:");
    if (cut == std::string::npos) continue;
    const std::string text = line.substr(cut + 1);
    SearchRequest request = TextRequest(text, modes[checked % 3], checked % 2 ? 10 : 100);
    SearchResponse a, b;
    grpc::ClientContext ca, cb;
    SetTimeout(ca, absl::Seconds(10));
    SetTimeout(cb, absl::Seconds(10));
    grpc::Status sa = via_broker->Search(&ca, request, &a);
    grpc::Status sb = direct->Search(&cb, request, &b);
    ASSERT_EQ(sa.error_code(), sb.error_code()) << text << ": " << sa.error_message();
    ++checked;
    if (!sa.ok()) continue;  // both refused it alike (a query of stop words only)
    ASSERT_EQ(a.hits_size(), b.hits_size()) << text;
    for (int i = 0; i < a.hits_size(); ++i) {
      EXPECT_EQ(a.hits(i).docid(), b.hits(i).docid()) << text << " rank " << i;
      EXPECT_EQ(a.hits(i).external_id(), b.hits(i).external_id());
      EXPECT_EQ(a.hits(i).score(), b.hits(i).score()) << text << " rank " << i;
    }
    hits += a.hits_size();
    EXPECT_FALSE(a.degraded());
    EXPECT_EQ(a.stats().executed_mode(), b.stats().executed_mode()) << text;
  }
  EXPECT_EQ(checked, limit);
  EXPECT_GT(hits, static_cast<uint64_t>(limit));
}

// A collection of the shared data, sharded, and its queries.
struct RealText {
  const char* name;     // the test's
  const char* corpus;   // under DataDir()
  const char* format;   // tandem-index build --format
  const char* queries;  // under DataDir()
  int shards;
  int limit;  // the first queries checked
};
void PrintTo(const RealText& text, std::ostream* os) { *os << text.name; }

class BrokerRealText : public ::testing::TestWithParam<RealText> {};

TEST_P(BrokerRealText, ShardedEqualsTheWholeIndex) {
  const RealText& text = GetParam();
  const std::string corpus = DataFile(text.corpus);
  const std::string queries = DataFile(text.queries);
  if (corpus.empty() || queries.empty()) {
    GTEST_SKIP() << text.corpus << " or " << text.queries << " not found under " << DataDir();
  }
  ExpectShardedEqualsWhole(corpus, text.format, queries, text.shards, text.limit);
}

// BEIR SciFact's 300 test queries through 4 shards; the first 500 TREC 2005 efficiency queries
// over Wikipedia through 3 shards.
INSTANTIATE_TEST_SUITE_P(
    Collections, BrokerRealText,
    ::testing::Values(RealText{"SciFact", "beir-scifact/corpus.jsonl", "beir",
                               "beir-scifact/queries.test.tsv", 4, 300},
                      RealText{"WikipediaTrec2005", "text/wikipedia", "wikiextractor",
                               "queries/trec05-efficiency.txt", 3, 500}),
    [](const ::testing::TestParamInfo<RealText>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace tandem::testing
