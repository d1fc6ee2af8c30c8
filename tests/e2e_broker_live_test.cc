// tandem-broker in front of live shards end to end: tandem-server processes started with
// --live-shard behind a tandem-broker process on loopback. Writes through the broker reach the
// shard their id hashes to (FNV-1a 64 modulo the shard count) and every replica of it; replaces,
// deletes, refresh, flush and force-merge go through; a replica that is down fails its shard's
// operations by name while the other shard's are acknowledged; read-only replicas pass back their
// FAILED_PRECONDITION; tandem-cli's write verbs work against the broker unchanged. With
// --global-stats, two shards answer AND, OR and AND+OR top-k with the same documents and bit-equal
// scores as one node holding every document; without it the scores differ. Bad statistics are
// refused.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "broker/shard_hash.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "live/live_test_util.h"
#include "tandem/v1/index.grpc.pb.h"
#include "tandem/v1/search.grpc.pb.h"
#include "tests/e2e_broker.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using index_builder::Document;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using tandem::v1::WriteOperation;
using tandem::v1::WriteResponse;
using ::testing::HasSubstr;

constexpr uint32_t kShards = 2;
constexpr char kCollection[] = "news";

uint32_t Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

// Random text with "allword" in every document, so that one query lists a node's documents.
Document NewDocument(std::mt19937& rng, const std::string& id) {
  Document d = live::testing::RandomDocument(rng, id);
  d.text += " allword";
  return d;
}

class BrokerLiveE2eTest : public ::testing::Test {
 protected:
  // Each shard starts from the seed documents whose ids hash to it (an index cannot be empty);
  // `whole_` holds every seed, for the one node that holds everything.
  void SetUp() override {
    std::vector<Document> seeds;
    std::vector<std::vector<Document>> per_shard(kShards);
    for (int i = 0; i < 24; ++i) {
      const Document d = NewDocument(rng_, absl::StrCat("s", i));
      seeds.push_back(d);
      per_shard[broker::ShardOfId(d.external_id, kShards)].push_back(d);
      holds_[d.external_id] = d;
    }
    for (uint32_t s = 0; s < kShards; ++s) {
      ASSERT_FALSE(per_shard[s].empty()) << "no seed hashes to shard " << s;
      seeds_of_shard_.push_back(per_shard[s]);
    }
    whole_ = tmp_.path() + "/whole";
    ASSERT_TRUE(live::testing::BuildDocuments(seeds, whole_).ok());
  }

  // A fresh directory of shard `s`'s seeds (each replica writes its own).
  std::string ShardDir(uint32_t s) {
    const std::string dir = absl::StrCat(tmp_.path(), "/shard", s, "-", dirs_++);
    EXPECT_TRUE(live::testing::BuildDocuments(seeds_of_shard_[s], dir).ok());
    return dir;
  }

  std::unique_ptr<ServerProcess> StartShard(uint32_t s, std::vector<std::string> extra = {}) {
    extra.insert(extra.end(), {"--live-shard", absl::StrCat(kCollection, ":", s, "/", kShards),
                               "--refresh-interval", "0"});
    return StartNode(ShardDir(s), extra);
  }

  // Adds of new ids (n0, n1, ...) and replaces of held ones, applied to holds_.
  std::vector<WriteOperation> Adds(int count) {
    std::vector<WriteOperation> ops;
    for (int i = 0; i < count; ++i) {
      const std::string id = rng_() % 4 == 0 && !holds_.empty()
                                 ? std::next(holds_.begin(), rng_() % holds_.size())->first
                                 : absl::StrCat("n", next_id_++);
      const Document d = NewDocument(rng_, id);
      ops.push_back(IndexOperation(d));
      holds_[id] = d;
    }
    return ops;
  }

  // The ids a node holds, read back with a query that every document matches.
  static std::set<std::string> IdsOn(const std::string& address) {
    SearchRequest request = TextRequest("allword", tandem::v1::QUERY_MODE_OR, 10000);
    SearchResponse response;
    auto stub = NewStub(address);
    const grpc::Status status = CallSearch(*stub, request, &response, kE2eTimeout);
    EXPECT_TRUE(status.ok()) << status.error_message();
    std::set<std::string> ids;
    for (const tandem::v1::Hit& h : response.hits()) ids.insert(h.external_id());
    return ids;
  }

  // The ids of holds_ that hash to shard `s`.
  std::set<std::string> IdsOfShard(uint32_t s) const {
    std::set<std::string> ids;
    for (const auto& [id, doc] : holds_) {
      if (broker::ShardOfId(id, kShards) == s) ids.insert(id);
    }
    return ids;
  }

  TempDir tmp_;
  std::mt19937 rng_{11};
  std::string whole_;
  std::vector<std::vector<Document>> seeds_of_shard_;
  std::map<std::string, Document> holds_;
  int next_id_ = 0;
  int dirs_ = 0;
};

TEST_F(BrokerLiveE2eTest, AReplicaThatIsDownFailsItsShardsOperationsByName) {
  // Shard 0 on two replicas, shard 1 on one.
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  nodes.push_back(StartShard(0));
  nodes.push_back(StartShard(0));
  nodes.push_back(StartShard(1));
  for (const auto& n : nodes) ASSERT_NE(n, nullptr);
  auto broker = StartBroker({"--replicas", Addresses(nodes), "--cache-entries", "0"});
  ASSERT_NE(broker, nullptr);
  const std::string down = nodes[1]->address();
  nodes[1].reset();  // SIGKILL

  const std::vector<WriteOperation> ops = Adds(40);
  std::vector<uint64_t> to_shard0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (broker::ShardOfId(ops[i].index().id(), kShards) == 0) to_shard0.push_back(i);
  }
  ASSERT_FALSE(to_shard0.empty());
  ASSERT_LT(to_shard0.size(), ops.size());
  WriteResponse response;
  const grpc::Status status = CallWrite(broker->address(), ops, &response, 7);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.acknowledged(), ops.size() - to_shard0.size());
  EXPECT_EQ(response.refused(), to_shard0.size());
  ASSERT_EQ(static_cast<size_t>(response.errors_size()), to_shard0.size());
  for (size_t i = 0; i < to_shard0.size(); ++i) {
    const tandem::v1::WriteError& e = response.errors(i);
    EXPECT_EQ(e.operation(), to_shard0[i]);
    EXPECT_EQ(e.id(), ops[to_shard0[i]].index().id());
    EXPECT_EQ(e.code(), grpc::StatusCode::UNAVAILABLE) << e.message();
    EXPECT_THAT(e.message(), HasSubstr(absl::StrCat("shard 0 replica ", down, ": ")));
  }
  // Refresh goes to every replica: the one that is down fails it, by name.
  tandem::v1::RefreshResponse refreshed;
  const grpc::Status refresh = CallRefresh(broker->address(), &refreshed);
  EXPECT_EQ(refresh.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(refresh.error_message(), HasSubstr(absl::StrCat("shard 0 replica ", down)));
  // Shard 1 took its operations (the live replica of shard 0 took them too, unacknowledged).
  {
    const grpc::Status status_ = CallRefresh(nodes[2]->address(), &refreshed);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_EQ(IdsOn(nodes[2]->address()), IdsOfShard(1));
}

TEST_F(BrokerLiveE2eTest, ReadOnlyReplicasPassBackTheirRefusal) {
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  for (uint32_t s = 0; s < kShards; ++s) nodes.push_back(StartShard(s, {"--read-only"}));
  for (const auto& n : nodes) ASSERT_NE(n, nullptr);
  auto broker = StartBroker({"--replicas", Addresses(nodes), "--cache-entries", "0"});
  ASSERT_NE(broker, nullptr);
  WriteResponse response;
  grpc::Status status = CallWrite(broker->address(), Adds(10), &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("refuses writes"));
  EXPECT_THAT(status.error_message(), HasSubstr("read-only"));
  EXPECT_THAT(status.error_message(), HasSubstr("0 operations of this stream were acknowledged"));
  tandem::v1::RefreshResponse refreshed;
  status = CallRefresh(broker->address(), &refreshed);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("shard 0 replica "));
  tandem::v1::IndexStats stats;
  {
    const grpc::Status status_ = CallIndexStats(broker->address(), &stats);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_FALSE(stats.writable());
  const absl::StatusOr<ProcessResult> cli =
      RunProcess(TANDEM_CLI_BINARY, {"--server", broker->address(), "delete", "s1"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->exit_code, 1);
  EXPECT_THAT(cli->err, HasSubstr("FAILED_PRECONDITION"));
}

TEST_F(BrokerLiveE2eTest, WritesReachTheShardTheirIdHashesToOnEveryReplica) {
  std::vector<std::unique_ptr<ServerProcess>> nodes;  // shard 0 twice, shard 1 once
  nodes.push_back(StartShard(0));
  nodes.push_back(StartShard(1));
  nodes.push_back(StartShard(0));
  for (const auto& n : nodes) ASSERT_NE(n, nullptr);
  auto broker = StartBroker({"--replicas", Addresses(nodes), "--cache-entries", "0"});
  ASSERT_NE(broker, nullptr);

  // Unhappy paths first: an operation with nothing in it (refused by the broker) and a document
  // without an id (refused by its shard's replicas, named); the rest apply.
  std::vector<WriteOperation> ops = Adds(5);
  ops.insert(ops.begin() + 2, WriteOperation());
  ops.push_back(IndexOperation(NewDocument(rng_, "")));
  WriteResponse response;
  {
    const grpc::Status status_ = CallWrite(broker->address(), ops, &response, 3);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_EQ(response.acknowledged(), 5u);
  EXPECT_EQ(response.refused(), 2u);
  ASSERT_EQ(response.errors_size(), 2);
  EXPECT_EQ(response.errors(0).operation(), 2u);
  EXPECT_EQ(response.errors(0).code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(response.errors(0).message(), HasSubstr("neither a document nor an id"));
  EXPECT_EQ(response.errors(1).operation(), 6u);
  EXPECT_EQ(response.errors(1).code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(response.errors(1).message(),
              HasSubstr(absl::StrCat("shard ", broker::ShardOfId("", kShards), " replica ")));

  {
    const grpc::Status status_ = CallWrite(broker->address(), Adds(150), &response, 40);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_EQ(response.acknowledged(), 150u);
  EXPECT_EQ(response.refused(), 0u);
  // Replaces and deletes, one of an id no shard holds.
  std::vector<WriteOperation> changes = Adds(20);
  for (int i = 0; i < 15; ++i) {
    const std::string id = std::next(holds_.begin(), rng_() % holds_.size())->first;
    changes.push_back(DeleteOperation(id));
    holds_.erase(id);
  }
  changes.push_back(DeleteOperation("never-written"));
  {
    const grpc::Status status_ = CallWrite(broker->address(), changes, &response);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_EQ(response.acknowledged(), changes.size());
  EXPECT_EQ(response.not_found(), 1u);

  tandem::v1::RefreshResponse refreshed;
  {
    const grpc::Status status_ = CallRefresh(broker->address(), &refreshed);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_EQ(refreshed.documents(), holds_.size());  // summed over shards, one replica each
  for (size_t n = 0; n < nodes.size(); ++n) {
    const uint32_t shard = n == 1 ? 1 : 0;
    EXPECT_EQ(IdsOn(nodes[n]->address()), IdsOfShard(shard)) << "node " << n;
  }
  tandem::v1::IndexStats stats;
  {
    const grpc::Status status_ = CallIndexStats(broker->address(), &stats);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_EQ(stats.documents(), holds_.size());
  EXPECT_TRUE(stats.writable());
  // GetIndexInfo describes the collection: the shards' documents summed, as of the broker's last
  // round of checks (every 100 ms here).
  tandem::v1::GetIndexInfoResponse info;
  for (const absl::Time end = absl::Now() + kE2eTimeout; absl::Now() < end;
       absl::SleepFor(absl::Milliseconds(20))) {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    ASSERT_TRUE(NewStub(broker->address())
                    ->GetIndexInfo(&context, tandem::v1::GetIndexInfoRequest(), &info)
                    .ok());
    if (info.documents() == holds_.size()) break;
  }
  EXPECT_EQ(info.documents(), holds_.size());
  EXPECT_EQ(info.index_id(), kCollection);
  EXPECT_GT(info.average_document_length(), 1.0f);

  // ForceMerge reaches every replica: one segment each, the documents summed over shards.
  {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::ForceMergeResponse merged;
    const grpc::Status status =
        tandem::v1::IndexService::NewStub(NewChannel(broker->address()))
            ->ForceMerge(&context, tandem::v1::ForceMergeRequest(), &merged);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(merged.segments(), kShards);
    EXPECT_EQ(merged.documents(), holds_.size());
  }
  for (const auto& n : nodes) {
    tandem::v1::IndexStats own;
    ASSERT_TRUE(CallIndexStats(n->address(), &own).ok());
    EXPECT_EQ(own.segments(), 1u) << n->address();
  }
  tandem::v1::FlushResponse flushed;
  {
    const grpc::Status status_ = CallFlush(broker->address(), &flushed);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_GE(flushed.generation(), 1u);
  for (const auto& n : nodes) {
    tandem::v1::IndexStats own;
    {
      const grpc::Status status_ = CallIndexStats(n->address(), &own);
      ASSERT_TRUE(status_.ok()) << status_.error_message();
    }
    EXPECT_GE(own.commit_generation(), 1u) << n->address();
    EXPECT_EQ(own.buffered_operations(), 0u) << n->address();
  }
}

TEST_F(BrokerLiveE2eTest, TandemCliWritesThroughTheBrokerUnchanged) {
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  for (uint32_t s = 0; s < kShards; ++s) nodes.push_back(StartShard(s));
  for (const auto& n : nodes) ASSERT_NE(n, nullptr);
  auto broker = StartBroker({"--replicas", Addresses(nodes), "--cache-entries", "0"});
  ASSERT_NE(broker, nullptr);
  auto cli = [&](std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--server", broker->address()});
    absl::StatusOr<ProcessResult> result = RunProcess(TANDEM_CLI_BINARY, args, kE2eTimeout, input);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ProcessResult();
  };
  // Lines: ids are line numbers, "1" to "6".
  ProcessResult r = cli({"index", "--format", "lines", "--refresh", "-"},
                        "w1 allword\nw2 allword\nw3 allword\nw4 allword\nw5 allword\nw6 allword\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sent 6: acknowledged 6, stale 0, not found 0, refused 0"));
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("refreshed: ", holds_.size() + 6, " documents")));
  r = cli({"delete", "2", "s3", "nosuchid"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("acknowledged 3, stale 0, not found 1"));
  r = cli({"refresh"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = cli({"flush"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("flushed: commit point "));
  r = cli({"index-stats"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("documents ", holds_.size() + 6 - 2, ",")));
  for (const std::string id : {"1", "3", "4", "5", "6"}) holds_[id] = Document();
  holds_.erase("s3");
  for (uint32_t s = 0; s < kShards; ++s) EXPECT_EQ(IdsOn(nodes[s]->address()), IdsOfShard(s));
}

// The hits of `got` equal `want`'s: every rank's score bit for bit, and the document wherever its
// score is not tied. Tied documents may come in another order: across shards the broker orders
// ties by shard docID (shard_merge.h), which follows each shard's own write order; the exact
// order of one node would need a global write order.
void ExpectSameRanking(const SearchResponse& got, const SearchResponse& want,
                       const std::string& what, int* compared) {
  ASSERT_EQ(got.hits_size(), want.hits_size()) << what;
  for (int i = 0; i < got.hits_size(); ++i) {
    const float score = want.hits(i).score();
    EXPECT_EQ(Bits(got.hits(i).score()), Bits(score)) << what << " rank " << i;
    const auto tied = [&](const SearchResponse& r) {
      return (i > 0 && r.hits(i - 1).score() == score) ||
             (i + 1 < r.hits_size() && r.hits(i + 1).score() == score);
    };
    if (!tied(want) && !tied(got)) {
      EXPECT_EQ(got.hits(i).external_id(), want.hits(i).external_id()) << what << " rank " << i;
      ++*compared;
    }
  }
}

TEST_F(BrokerLiveE2eTest, GlobalStatisticsScoreTwoShardsAsOneNode) {
  std::vector<std::unique_ptr<ServerProcess>> nodes;
  for (uint32_t s = 0; s < kShards; ++s) nodes.push_back(StartShard(s));
  for (const auto& n : nodes) ASSERT_NE(n, nullptr);
  auto one = StartNode(whole_, {"--refresh-interval", "0"});
  ASSERT_NE(one, nullptr);
  auto global =
      StartBroker({"--replicas", Addresses(nodes), "--cache-entries", "0", "--global-stats"});
  auto local = StartBroker({"--replicas", Addresses(nodes), "--cache-entries", "0"});
  ASSERT_NE(global, nullptr);
  ASSERT_NE(local, nullptr);

  // The same operations, in the same order, through the broker and to the one node.
  std::vector<WriteOperation> ops = Adds(250);
  for (int i = 0; i < 20; ++i) {
    const std::string id = std::next(holds_.begin(), rng_() % holds_.size())->first;
    ops.push_back(DeleteOperation(id));
    holds_.erase(id);
  }
  const std::vector<WriteOperation> more = Adds(30);
  ops.insert(ops.end(), more.begin(), more.end());
  WriteResponse through_broker;
  WriteResponse to_one;
  {
    const grpc::Status status_ = CallWrite(global->address(), ops, &through_broker);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  {
    const grpc::Status status_ = CallWrite(one->address(), ops, &to_one);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  EXPECT_EQ(through_broker.acknowledged(), to_one.acknowledged());
  EXPECT_EQ(through_broker.not_found(), to_one.not_found());
  tandem::v1::RefreshResponse refreshed;
  {
    const grpc::Status status_ = CallRefresh(global->address(), &refreshed);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }
  {
    const grpc::Status status_ = CallRefresh(one->address(), &refreshed);
    ASSERT_TRUE(status_.ok()) << status_.error_message();
  }

  auto global_stub = NewStub(global->address());
  auto local_stub = NewStub(local->address());
  auto one_stub = NewStub(one->address());
  std::mt19937 rng(5);
  int compared = 0;
  int differing = 0;
  for (int q = 0; q < 60; ++q) {
    std::vector<std::string> words;
    for (int t = 1 + static_cast<int>(rng() % 3); t > 0; --t) {
      words.push_back(absl::StrCat("w", rng() % 40));
    }
    const tandem::v1::QueryMode mode =
        std::vector{tandem::v1::QUERY_MODE_AND, tandem::v1::QUERY_MODE_OR,
                    tandem::v1::QUERY_MODE_AND_OR}[q % 3];
    const SearchRequest request = TextRequest(absl::StrJoin(words, " "), mode, q % 4 < 2 ? 10 : 50);
    const std::string what = absl::StrCat(request.text(), " mode ", mode, " k ", request.k());
    SearchResponse want;
    SearchResponse got;
    SearchResponse own;
    grpc::Status status = CallSearch(*one_stub, request, &want, kE2eTimeout);
    ASSERT_TRUE(status.ok()) << status.error_message();
    status = CallSearch(*global_stub, request, &got, kE2eTimeout);
    ASSERT_TRUE(status.ok()) << what << ": " << status.error_message();
    ExpectSameRanking(got, want, what, &compared);
    status = CallSearch(*local_stub, request, &own, kE2eTimeout);
    ASSERT_TRUE(status.ok()) << status.error_message();
    for (int i = 0; i < std::min(own.hits_size(), want.hits_size()); ++i) {
      if (own.hits(i).score() != want.hits(i).score()) {
        ++differing;
        break;
      }
    }
  }
  RecordProperty("compared_hits", compared);
  RecordProperty("queries_scored_otherwise_without", differing);
  EXPECT_GT(compared, 100);  // the queries match, and most scores are not tied
  // Each shard alone scores with its own half's statistics: not the collection's scores.
  EXPECT_GT(differing, 10);

  // A query error is the answer, from the statistics' round as from the search's.
  {
    SearchResponse response;
    SearchRequest no_query;
    grpc::Status status = CallSearch(*global_stub, no_query, &response, kE2eTimeout);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("query is not set"));
    status = CallSearch(*global_stub, TextRequest("w1", tandem::v1::QUERY_MODE_OR, 20000),
                        &response, kE2eTimeout);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
    EXPECT_THAT(status.error_message(), HasSubstr("k must be between 1 and 10000"));
  }

  // The broker's GetCollectionStatistics is the one node's.
  SearchRequest request = TextRequest("w1 w7 w1 nosuchword");
  tandem::v1::CollectionStatistics summed;
  tandem::v1::CollectionStatistics whole;
  {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    ASSERT_TRUE(global_stub->GetCollectionStatistics(&context, request, &summed).ok());
  }
  {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    ASSERT_TRUE(one_stub->GetCollectionStatistics(&context, request, &whole).ok());
  }
  EXPECT_EQ(summed.SerializeAsString(), whole.SerializeAsString());
  EXPECT_EQ(summed.num_docs(), holds_.size());
  ASSERT_EQ(summed.terms_size(), 3);  // repeats merged, in order
  EXPECT_EQ(summed.terms(0).term(), "w1");
  EXPECT_EQ(summed.terms(2).document_frequency(), 0u);

  // A shard that cannot give its statistics fails the query, named.
  nodes[1].reset();
  SearchResponse response;
  const grpc::Status status =
      CallSearch(*global_stub, TextRequest("w1 w2"), &response, kE2eTimeout);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_THAT(status.error_message(), HasSubstr("shard 1"));
}

TEST_F(BrokerLiveE2eTest, BadStatisticsAreRefused) {
  auto node = StartShard(0);
  ASSERT_NE(node, nullptr);
  auto stub = NewStub(node->address());
  SearchRequest good = TextRequest("w1 w2 w1");
  {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::CollectionStatistics own;
    ASSERT_TRUE(stub->GetCollectionStatistics(&context, good, &own).ok());
    *good.mutable_collection_statistics() = own;
  }
  const auto refused = [&](const SearchRequest& request, const std::string& why) {
    SearchResponse response;
    const grpc::Status status = CallSearch(*stub, request, &response, kE2eTimeout);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << why;
    EXPECT_THAT(status.error_message(), HasSubstr(why));
  };
  SearchRequest fewer = good;
  fewer.mutable_collection_statistics()->mutable_terms()->RemoveLast();
  refused(fewer, "collection_statistics has 1 terms, the query has 2");
  SearchRequest other = good;
  other.mutable_collection_statistics()->mutable_terms(1)->set_term("w3");
  refused(other, "collection_statistics.terms[1] is \"w3\", the query's term is \"w2\"");
  SearchRequest empty = good;
  empty.mutable_collection_statistics()->set_num_docs(0);
  refused(empty, "num_docs must be at least 1");
  SearchRequest too_many = good;
  too_many.mutable_collection_statistics()->mutable_terms(0)->set_document_frequency(
      good.collection_statistics().num_docs() + 1);
  refused(too_many, "is more than num_docs");
  SearchRequest no_query;
  no_query.mutable_collection_statistics()->set_num_docs(1);
  refused(no_query, "query is not set");

  // The node's own statistics given back score as the node does.
  SearchResponse with;
  SearchResponse without;
  ASSERT_TRUE(CallSearch(*stub, good, &with, kE2eTimeout).ok());
  good.clear_collection_statistics();
  ASSERT_TRUE(CallSearch(*stub, good, &without, kE2eTimeout).ok());
  int compared = 0;
  ExpectSameRanking(with, without, "own statistics", &compared);
  EXPECT_GT(without.hits_size(), 0);
}

TEST(BrokerLiveStartup, RefusesABadLiveShard) {
  const std::unique_ptr<E2eIndex> index = E2eIndex::Build();
  for (const auto& [value, why] :
       std::vector<std::pair<std::string, std::string>>{{"0/2", "no collection name"},
                                                        {"news:2/2", "SHARD must be below SHARDS"},
                                                        {"news:x", "no SHARD/SHARDS numbers"}}) {
    const absl::StatusOr<ProcessResult> run = RunProcess(
        TANDEM_SERVER_BINARY, {"--index", index->dir(), "--gpu", "off", "--live-shard", value,
                               "--listen", "127.0.0.1:0", "--metrics-listen", ""});
    ASSERT_TRUE(run.ok()) << run.status();
    EXPECT_EQ(run->exit_code, 1) << value;
    EXPECT_THAT(run->err, HasSubstr(why)) << value;
  }
}

}  // namespace
}  // namespace tandem::testing
