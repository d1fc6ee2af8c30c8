// End-to-end tests of writes to a running tandem-server (IndexService Write, Refresh, Flush,
// GetIndexStats): after adds, replaces and deletes streamed over Write and a Refresh, every answer
// equals, external id by id and score bit for bit, that of a fresh build over the live documents in
// the order of their latest write; the background refresh makes a write searchable within its
// interval; stale versions and bad documents are counted and listed while the rest apply; a
// read-only node and a shard refuse writes; a node killed with SIGKILL answers every acknowledged
// write after a restart (the log is replayed), and so does one restarted after a Flush; and
// tandem-cli's index, delete, refresh, flush and index-stats verbs drive all of it.
#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "cpu/daat_engine.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index_builder/inverter.h"
#include "index_builder/shard.h"
#include "live/live_test_util.h"
#include "tandem/v1/index.grpc.pb.h"
#include "tandem/v1/search.grpc.pb.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"
#include "tests/e2e_writes.h"

namespace tandem::testing {
namespace {

using index_builder::Document;
using tandem::v1::WriteOperation;
using tandem::v1::WriteResponse;
using ::testing::HasSubstr;

using live::testing::LiveModel;

// `docs` built as `tandem-index build` builds them, at `dir`.
absl::Status Build(const std::vector<Document>& docs, const std::string& dir) {
  return live::testing::BuildDocuments(docs, dir);
}

// Random text (live_test_util.h) with a title that differs between versions of a document.
Document RandomDocument(std::mt19937& rng, const std::string& id) {
  Document d = live::testing::RandomDocument(rng, id);
  d.fields = {{"title", absl::StrCat("title of ", id, " #", rng() % 1000)}};
  return d;
}

WriteOperation IndexOp(const Document& d, std::optional<uint64_t> version = std::nullopt) {
  return IndexOperation(d, version);
}
WriteOperation DeleteOp(const std::string& id, std::optional<uint64_t> version = std::nullopt) {
  return DeleteOperation(id, version);
}

uint32_t Bits(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof(bits));
  return bits;
}

class LiveE2eTest : public ::testing::Test {
 protected:
  // The node's index: 300 documents built offline, the model holding them.
  void SetUp() override {
    dir_ = tmp_.path() + "/live";
    std::vector<Document> docs;
    for (int i = 0; i < 300; ++i) docs.push_back(RandomDocument(rng_, absl::StrCat("d", i)));
    ASSERT_TRUE(Build(docs, dir_).ok());
    for (const Document& d : docs) model_.Put(d);
  }

  std::unique_ptr<ServerProcess> Start(std::vector<std::string> args = {}) {
    args.insert(args.begin(), {"--index", dir_, "--gpu", "off", "--threads", "2"});
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(args);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  static std::unique_ptr<tandem::v1::IndexService::Stub> IndexStub(const ServerProcess& server) {
    return tandem::v1::IndexService::NewStub(NewChannel(server.address()));
  }

  // One Write call carrying `ops`, `per_message` operations a message.
  static grpc::Status Write(const ServerProcess& server, const std::vector<WriteOperation>& ops,
                            WriteResponse* response, size_t per_message = 50) {
    return CallWrite(server.address(), ops, response, per_message);
  }

  static grpc::Status Refresh(const ServerProcess& server) {
    tandem::v1::RefreshResponse response;
    return CallRefresh(server.address(), &response);
  }

  static tandem::v1::IndexStats Stats(const ServerProcess& server) {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::IndexStats stats;
    const grpc::Status status =
        IndexStub(server)->GetIndexStats(&context, tandem::v1::GetIndexStatsRequest(), &stats);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return stats;
  }

  // Random adds of new ids, replaces and deletes (a few of ids never held), applied to the model.
  std::vector<WriteOperation> RandomOperations(int count, uint64_t* expected_not_found) {
    std::vector<WriteOperation> ops;
    for (int i = 0; i < count; ++i) {
      const int kind = static_cast<int>(rng_() % 10);
      if (kind < 4) {
        const Document d = RandomDocument(rng_, absl::StrCat("n", next_id_++));
        ops.push_back(IndexOp(d));
        model_.Put(d);
      } else if (kind < 7) {
        const Document d = RandomDocument(rng_, absl::StrCat("d", rng_() % 300));
        ops.push_back(IndexOp(d));
        model_.Put(d);
      } else {
        const std::string id = kind == 9 ? absl::StrCat("n", rng_() % (next_id_ + 50))
                                         : absl::StrCat("d", rng_() % 300);
        if (!model_.Holds(id)) ++*expected_not_found;
        ops.push_back(DeleteOp(id));
        model_.Remove(id);
      }
    }
    return ops;
  }

  // Every query's answer through the node equals a fresh build's over the model's live documents:
  // external ids in order, scores bit for bit, and the stored title of each hit.
  void ExpectAnswersOfAFreshBuild(const ServerProcess& server) {
    const std::string fresh_dir = absl::StrCat(tmp_.path(), "/fresh", fresh_builds_++);
    ASSERT_TRUE(Build(model_.Live(), fresh_dir).ok());
    absl::StatusOr<std::unique_ptr<index::Index>> fresh = index::Index::Open(fresh_dir);
    ASSERT_TRUE(fresh.ok()) << fresh.status();
    absl::StatusOr<std::unique_ptr<cpu::DaatEngine>> engine = cpu::DaatEngine::Create(**fresh);
    ASSERT_TRUE(engine.ok()) << engine.status();
    // A read-only node has no live index to count.
    if (const tandem::v1::IndexStats stats = Stats(server); stats.writable()) {
      EXPECT_EQ(stats.documents(), model_.size());
    }
    auto stub = NewStub(server.address());
    std::mt19937 rng(fresh_builds_);
    int compared_hits = 0;
    for (int q = 0; q < 36; ++q) {
      std::vector<std::string> words;
      for (int t = 1 + static_cast<int>(rng() % 3); t > 0; --t) {
        words.push_back(absl::StrCat("w", rng() % 64));
      }
      const tandem::v1::QueryMode mode =
          std::vector{tandem::v1::QUERY_MODE_AND, tandem::v1::QUERY_MODE_OR,
                      tandem::v1::QUERY_MODE_AND_OR}[q % 3];
      const uint32_t k = std::vector<uint32_t>{1, 5, 20, 100}[(q / 3) % 4];
      tandem::v1::SearchRequest request = TextRequest(absl::StrJoin(words, " "), mode, k);
      request.add_fields("title");
      tandem::v1::SearchResponse response;
      const grpc::Status status = CallSearch(*stub, request, &response, kE2eTimeout);
      ASSERT_TRUE(status.ok()) << status.error_message();

      index::Query query;
      query.mode = mode == tandem::v1::QUERY_MODE_AND  ? index::QueryMode::kAnd
                   : mode == tandem::v1::QUERY_MODE_OR ? index::QueryMode::kOr
                                                       : index::QueryMode::kAndOr;
      query.k = k;
      for (const std::string& w : words) query.terms.push_back({w, 1.0f});
      absl::StatusOr<index::SearchResult> want = (*engine)->Search(query, {});
      ASSERT_TRUE(want.ok()) << want.status();
      ASSERT_EQ(static_cast<size_t>(response.hits_size()), want->hits.size())
          << request.text() << " mode " << mode << " k " << k;
      for (int i = 0; i < response.hits_size(); ++i) {
        const tandem::v1::Hit& hit = response.hits(i);
        const std::string id((*fresh)->external_id(want->hits[i].docid));
        ASSERT_EQ(hit.external_id(), id) << request.text() << " rank " << i;
        EXPECT_EQ(Bits(hit.score()), Bits(want->hits[i].score)) << request.text() << " rank " << i;
        const Document& doc = model_.Get(id);  // a title, or no field at all (lines)
        ASSERT_EQ(static_cast<size_t>(hit.fields_size()), doc.fields.size()) << id;
        if (!doc.fields.empty()) {
          EXPECT_EQ(hit.fields(0).value(), doc.fields[0].second) << id;
        }
        ++compared_hits;
      }
    }
    EXPECT_GT(compared_hits, 100);  // the queries do match
  }

  TempDir tmp_;
  std::string dir_;
  std::mt19937 rng_{7};
  LiveModel model_;
  int next_id_ = 0;
  int fresh_builds_ = 0;
};

TEST_F(LiveE2eTest, AReadOnlyNodeRefusesWrites) {
  auto server = Start({"--read-only"});
  ASSERT_NE(server, nullptr);
  WriteResponse response;
  grpc::Status status = Write(*server, {DeleteOp("d1")}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("read-only"));
  status = Refresh(*server);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_FALSE(Stats(*server).writable());
  // Nothing changed: d1 is still there.
  ExpectAnswersOfAFreshBuild(*server);

  const absl::StatusOr<ProcessResult> cli =
      RunProcess(TANDEM_CLI_BINARY, {"--server", server->address(), "delete", "d1"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->exit_code, 1);
  EXPECT_THAT(cli->err, HasSubstr("FAILED_PRECONDITION"));
}

TEST_F(LiveE2eTest, AShardRefusesWritesAndSaysWhy) {
  absl::StatusOr<std::unique_ptr<index::Index>> whole = index::Index::Open(dir_);
  ASSERT_TRUE(whole.ok()) << whole.status();
  const std::string shards = tmp_.path() + "/shards";
  absl::StatusOr<index_builder::ShardSummary> cut =
      index_builder::ShardIndex(**whole, shards, {.shards = 2, .threads = 1});
  ASSERT_TRUE(cut.ok()) << cut.status();
  dir_ = shards + "/" + index_builder::ShardDirectoryName(0);
  auto server = Start();
  ASSERT_NE(server, nullptr);
  WriteResponse response;
  const grpc::Status status = Write(*server, {DeleteOp("d1")}, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(status.error_message(), HasSubstr("shard"));
  EXPECT_FALSE(Stats(*server).writable());
  const absl::StatusOr<ProcessResult> cli =
      RunProcess(TANDEM_CLI_BINARY, {"--server", server->address(), "index-stats"});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->exit_code, 0);
  EXPECT_THAT(cli->out, HasSubstr("read-only: this node takes no writes"));
}

TEST_F(LiveE2eTest, BadOperationsAreListedAndTheRestApply) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  Document empty_id = RandomDocument(rng_, "");
  const Document a = RandomDocument(rng_, "a1");
  const Document b = RandomDocument(rng_, "b1");
  WriteResponse response;
  ASSERT_TRUE(
      Write(*server, {IndexOp(a), IndexOp(empty_id), WriteOperation(), IndexOp(b)}, &response, 2)
          .ok());
  model_.Put(a);
  model_.Put(b);
  EXPECT_EQ(response.acknowledged(), 2u);
  EXPECT_EQ(response.refused(), 2u);
  ASSERT_EQ(response.errors_size(), 2);
  EXPECT_EQ(response.errors(0).operation(), 1u);
  EXPECT_EQ(response.errors(0).code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(response.errors(0).message(), HasSubstr("id"));
  EXPECT_EQ(response.errors(1).operation(), 2u);
  EXPECT_EQ(response.errors(1).code(), grpc::StatusCode::INVALID_ARGUMENT);
  ASSERT_TRUE(Refresh(*server).ok());
  ExpectAnswersOfAFreshBuild(*server);
}

TEST_F(LiveE2eTest, StaleVersionsAreSkipped) {
  auto server = Start();
  ASSERT_NE(server, nullptr);
  const Document v5 = RandomDocument(rng_, "v");
  const Document v3 = RandomDocument(rng_, "v");
  WriteResponse response;
  ASSERT_TRUE(Write(*server, {IndexOp(v5, 5), IndexOp(v3, 3), DeleteOp("v", 4)}, &response).ok());
  EXPECT_EQ(response.acknowledged(), 3u);
  EXPECT_EQ(response.stale(), 2u);
  model_.Put(v5);
  ASSERT_TRUE(Refresh(*server).ok());
  ExpectAnswersOfAFreshBuild(*server);

  // A newer delete stays as a tombstone: the late add of version 6 does not bring it back.
  response.Clear();
  ASSERT_TRUE(Write(*server, {DeleteOp("v", 7), IndexOp(v3, 6)}, &response).ok());
  EXPECT_EQ(response.acknowledged(), 2u);
  EXPECT_EQ(response.stale(), 1u);
  model_.Remove("v");
  ASSERT_TRUE(Refresh(*server).ok());
  ExpectAnswersOfAFreshBuild(*server);
}

TEST_F(LiveE2eTest, AddsReplacesAndDeletesAnswerAsAFreshBuild) {
  auto server = Start({"--refresh-interval", "0"});
  ASSERT_NE(server, nullptr);
  for (int round = 0; round < 3; ++round) {
    uint64_t not_found = 0;
    const std::vector<WriteOperation> ops = RandomOperations(400, &not_found);
    WriteResponse response;
    const grpc::Status status = Write(*server, ops, &response, 300);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.acknowledged(), ops.size());
    EXPECT_EQ(response.not_found(), not_found);
    EXPECT_EQ(response.stale(), 0u);
    EXPECT_EQ(response.refused(), 0u);
    EXPECT_EQ(Stats(*server).buffered_operations(), ops.size());
    ASSERT_TRUE(Refresh(*server).ok());
    EXPECT_EQ(Stats(*server).buffered_operations(), 0u);
    ExpectAnswersOfAFreshBuild(*server);
  }
}

TEST_F(LiveE2eTest, TheBackgroundRefreshMakesAWriteSearchableWithinASecond) {
  auto server = Start();  // --refresh-interval 1s
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  Document d = RandomDocument(rng_, "fresh");
  d.text += " neverseenbefore";
  WriteResponse response;
  ASSERT_TRUE(Write(*server, {IndexOp(d)}, &response).ok());
  const absl::Time acknowledged = absl::Now();
  ASSERT_EQ(response.acknowledged(), 1u);
  absl::Duration searchable = absl::InfiniteDuration();
  while (absl::Now() - acknowledged < kE2eTimeout) {
    tandem::v1::SearchResponse found;
    ASSERT_TRUE(CallSearch(*stub, TextRequest("neverseenbefore"), &found, kE2eTimeout).ok());
    if (found.hits_size() == 1 && found.hits(0).external_id() == "fresh") {
      searchable = absl::Now() - acknowledged;
      break;
    }
    absl::SleepFor(absl::Milliseconds(10));
  }
  std::printf("searchable %s after its acknowledgement\n",
              absl::FormatDuration(searchable).c_str());
  // One interval, plus the refresh's own work and a search on two shared cores.
  EXPECT_LT(searchable, absl::Milliseconds(1500));
  model_.Put(d);
  ExpectAnswersOfAFreshBuild(*server);
}

TEST_F(LiveE2eTest, AKilledNodeReplaysEveryAcknowledgedWrite) {
  auto server = Start({"--refresh-interval", "0"});
  ASSERT_NE(server, nullptr);
  uint64_t not_found = 0;
  WriteResponse response;
  ASSERT_TRUE(Write(*server, RandomOperations(300, &not_found), &response).ok());
  ASSERT_TRUE(Refresh(*server).ok());  // some refreshed, the rest only in the log
  ASSERT_TRUE(Write(*server, RandomOperations(200, &not_found), &response).ok());
  server->Signal(SIGKILL);
  EXPECT_EQ(server->WaitForExit(), -SIGKILL);

  server = Start({"--refresh-interval", "0"});
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(Refresh(*server).ok());
  ExpectAnswersOfAFreshBuild(*server);

  // Flushed, then more writes, killed again: the commit point and the log after it.
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::FlushResponse flushed;
  ASSERT_TRUE(IndexStub(*server)->Flush(&context, tandem::v1::FlushRequest(), &flushed).ok());
  EXPECT_GT(flushed.generation(), 0u);
  ASSERT_TRUE(Write(*server, RandomOperations(150, &not_found), &response).ok());
  server->Signal(SIGKILL);
  EXPECT_EQ(server->WaitForExit(), -SIGKILL);

  server = Start({"--refresh-interval", "0"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Stats(*server).commit_generation(), flushed.generation());
  ASSERT_TRUE(Refresh(*server).ok());
  ExpectAnswersOfAFreshBuild(*server);

  // A clean stop after a Flush: everything in the commit point.
  ASSERT_TRUE(Write(*server, RandomOperations(100, &not_found), &response).ok());
  grpc::ClientContext flush_again;
  SetTimeout(flush_again, kE2eTimeout);
  ASSERT_TRUE(IndexStub(*server)->Flush(&flush_again, tandem::v1::FlushRequest(), &flushed).ok());
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(), 0);
  server = Start({"--refresh-interval", "0"});
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(Stats(*server).buffered_operations(), 0u);
  ExpectAnswersOfAFreshBuild(*server);
}

TEST_F(LiveE2eTest, SigkillDuringConcurrentWritesKeepsEveryAcknowledgedOne) {
  // Refreshes every 50 ms and a Flush every 100 ms, so that the kill may land in either.
  auto server = Start({"--refresh-interval", "50ms"});
  ASSERT_NE(server, nullptr);
  // Two writers, each a stream after another of 20 new documents; a document's text holds its id,
  // so that a query for the id finds it alone.
  std::atomic<bool> stop{false};
  std::vector<std::string> acknowledged[2];
  std::vector<std::thread> writers;
  std::atomic<int> flushes{0};
  writers.emplace_back([&] {
    while (!stop.load()) {
      grpc::ClientContext context;
      SetTimeout(context, kE2eTimeout);
      tandem::v1::FlushResponse flushed;
      if (!IndexStub(*server)->Flush(&context, tandem::v1::FlushRequest(), &flushed).ok()) return;
      ++flushes;
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&, t] {
      for (int stream = 0; !stop.load(); ++stream) {
        std::vector<WriteOperation> ops;
        std::vector<std::string> ids;
        for (int i = 0; i < 20; ++i) {
          ids.push_back(absl::StrCat(t == 0 ? "ua" : "ub", stream * 20 + i));
          Document d;
          d.external_id = ids.back();
          d.text = "w1 w2 " + ids.back();
          ops.push_back(IndexOp(d));
        }
        WriteResponse response;
        if (!Write(*server, ops, &response, 20).ok()) return;  // killed
        if (response.acknowledged() != ids.size()) return;
        acknowledged[t].insert(acknowledged[t].end(), ids.begin(), ids.end());
      }
    });
  }
  absl::SleepFor(absl::Milliseconds(800));
  server->Signal(SIGKILL);
  stop = true;
  for (std::thread& w : writers) w.join();
  EXPECT_EQ(server->WaitForExit(), -SIGKILL);
  std::vector<std::string> ids = acknowledged[0];
  ids.insert(ids.end(), acknowledged[1].begin(), acknowledged[1].end());
  ASSERT_GT(acknowledged[0].size(), 0u);
  ASSERT_GT(acknowledged[1].size(), 0u);
  EXPECT_GT(flushes.load(), 0);
  std::printf("%zu documents acknowledged before SIGKILL, %d flushes\n", ids.size(),
              flushes.load());

  server = Start();
  ASSERT_NE(server, nullptr);
  ASSERT_TRUE(Refresh(*server).ok());
  // Streams in flight at the kill may have been applied (40 documents at most), no more.
  const uint64_t documents = Stats(*server).documents();
  EXPECT_GE(documents, 300 + ids.size());
  EXPECT_LE(documents, 300 + ids.size() + 40);
  auto stub = NewStub(server->address());
  for (size_t start = 0; start < ids.size(); start += 500) {
    tandem::v1::SearchBatchRequest batch;
    const size_t end = std::min(ids.size(), start + 500);
    for (size_t i = start; i < end; ++i) *batch.add_requests() = TextRequest(ids[i]);
    tandem::v1::SearchBatchResponse answers;
    ASSERT_TRUE(CallSearchBatch(*stub, batch, &answers, kE2eTimeout).ok());
    for (size_t i = start; i < end; ++i) {
      const tandem::v1::SearchResponse& found = answers.results(i - start).response();
      ASSERT_EQ(found.hits_size(), 1) << ids[i];
      EXPECT_EQ(found.hits(0).external_id(), ids[i]);
    }
  }
}

TEST_F(LiveE2eTest, TandemCliIndexesDeletesRefreshesAndFlushes) {
  auto server = Start({"--refresh-interval", "0"});
  ASSERT_NE(server, nullptr);
  auto cli = [&](std::vector<std::string> args, const std::string& input = "") {
    args.insert(args.begin(), {"--server", server->address()});
    absl::StatusOr<ProcessResult> result = RunProcess(TANDEM_CLI_BINARY, args, kE2eTimeout, input);
    EXPECT_TRUE(result.ok()) << result.status();
    return result.ok() ? *result : ProcessResult();
  };
  // Unhappy paths first: no format, an unknown one, a missing file.
  ProcessResult r = cli({"index", "corpus.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("--format FORMAT"));
  r = cli({"index", "--format", "csv", "corpus.jsonl"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("beir"));
  r = cli({"index", "--format", "beir", tmp_.path() + "/missing.jsonl"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("NOT_FOUND"));
  r = cli({"delete"});
  EXPECT_EQ(r.exit_code, 2);
  r = cli({"index", "--format", "beir", "-"}, "{not json\n");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("skipped stdin:1: not valid JSON"));
  EXPECT_THAT(r.out, HasSubstr("sent 0: acknowledged 0"));
  r = cli({"index", "--format", "auto", "-"}, "w1 w2\n");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("not stdin"));

  // A BEIR file: two new documents, a replaced one, and a malformed line (skipped, exit 1).
  const std::string corpus = tmp_.path() + "/corpus.jsonl";
  {
    std::ofstream out(corpus);
    out << R"({"_id": "b1", "title": "Black bear", "text": "w1 w2 bearword"})"
        << "\n"
        << R"({"_id": "b2", "title": "Brown bear", "text": "bearword w3"})"
        << "\n"
        << R"({"_id": "d7", "title": "Replaced", "text": "w1 bearword bearword"})"
        << "\n"
        << "{not json\n";
  }
  r = cli({"index", "--format", "beir", "--refresh", corpus});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sent 3: acknowledged 3, stale 0, not found 0, refused 0"));
  EXPECT_THAT(r.out, HasSubstr("refreshed: "));
  EXPECT_THAT(r.err, HasSubstr("1 documents malformed"));
  for (const auto& [id, title, text] :
       {std::tuple{"b1", "Black bear", "Black bear\nw1 w2 bearword"},
        std::tuple{"b2", "Brown bear", "Brown bear\nbearword w3"},
        std::tuple{"d7", "Replaced", "Replaced\nw1 bearword bearword"}}) {
    Document d;
    d.external_id = id;
    d.text = text;
    d.fields = {{"title", title}};
    model_.Put(d);
  }
  ExpectAnswersOfAFreshBuild(*server);

  // --format auto finds BEIR in a file.
  const std::string more = tmp_.path() + "/more.jsonl";
  std::ofstream(more) << R"({"_id": "b3", "title": "Polar bear", "text": "w4 bearword"})"
                      << "\n";
  r = cli({"index", "--format", "auto", "--refresh", more});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("sent 1: acknowledged 1"));
  Document bear;
  bear.external_id = "b3";
  bear.text = "Polar bear\nw4 bearword";
  bear.fields = {{"title", "Polar bear"}};
  model_.Put(bear);
  ExpectAnswersOfAFreshBuild(*server);

  // Lines from stdin: ids are line numbers.
  r = cli({"index", "--format", "lines", "-"}, "w5 linesword\nlinesword w6\n");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("acknowledged 2"));
  r = cli({"--json", "index-stats"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("\"buffered_operations\":\"2\""));
  r = cli({"refresh"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("refreshed: ", model_.size() + 2, " documents")));
  r = cli({"delete", "1", "2", "nosuchid"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("acknowledged 3, stale 0, not found 1"));

  r = cli({"delete", "b2", "d3"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  model_.Remove("b2");
  model_.Remove("d3");
  r = cli({"flush"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("flushed: commit point "));
  r = cli({"index-stats"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr(absl::StrCat("documents ", model_.size(), ",")));
  EXPECT_THAT(r.out, HasSubstr("buffered operations 0"));
  ExpectAnswersOfAFreshBuild(*server);
}

TEST_F(LiveE2eTest, TandemCliKeepsMessagesUnderTheNodesLimit) {
  // 12 documents of 1 MiB: one message of 256 operations would be 12 MiB, over the node's 8.
  auto server = Start({"--refresh-interval", "0", "--max-receive-message-bytes", "8388608"});
  ASSERT_NE(server, nullptr);
  std::string lines;
  for (int d = 0; d < 12; ++d) {
    std::vector<std::string> words;
    for (int w = 0; w < 300000; ++w) words.push_back(absl::StrCat("w", (d * 7 + w) % 60));
    Document doc;
    doc.external_id = absl::StrCat(d + 1);
    doc.text = absl::StrJoin(words, " ");
    lines += doc.text + "\n";
    model_.Put(doc);
  }
  ASSERT_GT(lines.size(), size_t{12} << 20);
  const absl::StatusOr<ProcessResult> r =
      RunProcess(TANDEM_CLI_BINARY,
                 {"--server", server->address(), "index", "--format", "lines", "--refresh", "-"},
                 kE2eTimeout, lines);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->exit_code, 0) << r->err;
  EXPECT_THAT(r->out, HasSubstr("sent 12: acknowledged 12"));
  ExpectAnswersOfAFreshBuild(*server);
}

}  // namespace
}  // namespace tandem::testing

namespace tandem::testing {
namespace {

// After writes: ForceMerge leaves one segment without deletes and the same answers, GetIndexInfo
// counts the live documents, and reloading the directory the node writes into is refused with the
// reason while the node keeps serving.
TEST_F(LiveE2eTest, ForceMergeCountsAndReloadOfTheWrittenDirectory) {
  auto server = Start({"--refresh-interval", "0"});
  ASSERT_NE(server, nullptr);
  uint64_t not_found = 0;
  WriteResponse response;
  ASSERT_TRUE(Write(*server, RandomOperations(300, &not_found), &response).ok());
  ASSERT_TRUE(Refresh(*server).ok());
  ASSERT_TRUE(Write(*server, RandomOperations(200, &not_found), &response).ok());
  ASSERT_TRUE(Refresh(*server).ok());
  EXPECT_GT(Stats(*server).deleted_documents(), 0u);
  {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::ForceMergeRequest request;
    tandem::v1::ForceMergeResponse merged;
    const grpc::Status status = IndexStub(*server)->ForceMerge(&context, request, &merged);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(merged.segments(), 1u);
  }
  const tandem::v1::IndexStats stats = Stats(*server);
  EXPECT_EQ(stats.segments(), 1u);
  EXPECT_EQ(stats.deleted_documents(), 0u);
  EXPECT_GT(stats.merges(), 0u);
  EXPECT_GT(stats.bytes_merged(), 0u);
  ExpectAnswersOfAFreshBuild(*server);
  {
    auto stub = tandem::v1::SearchService::NewStub(NewChannel(server->address()));
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::GetIndexInfoResponse info;
    ASSERT_TRUE(stub->GetIndexInfo(&context, tandem::v1::GetIndexInfoRequest(), &info).ok());
    EXPECT_EQ(info.documents(), stats.documents());
  }
  {
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    tandem::v1::LoadIndexRequest request;
    request.set_path(dir_);
    tandem::v1::LoadIndexResponse loaded;
    const grpc::Status status = IndexStub(*server)->LoadIndex(&context, request, &loaded);
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_THAT(status.error_message(), ::testing::HasSubstr("nothing to reload"));
  }
  ExpectAnswersOfAFreshBuild(*server);
}

}  // namespace
}  // namespace tandem::testing
