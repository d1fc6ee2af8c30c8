// End-to-end tests of switching a running tandem-server to another index: IndexService.LoadIndex
// and SIGHUP. The new index answers at once, with answers equal to the oracle's; no query fails
// across switches under load; a query in flight finishes on the old index, which is released after
// it; a bad, missing or damaged index leaves the old one serving; a read-only node refuses the call
// and still reloads on SIGHUP.
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "tandem/v1/index.grpc.pb.h"
#include "tandem/v1/search.grpc.pb.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using tandem::v1::GetIndexInfoRequest;
using tandem::v1::GetIndexInfoResponse;
using tandem::v1::LoadIndexRequest;
using tandem::v1::LoadIndexResponse;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;
using ::testing::HasSubstr;

class IndexLoadE2eTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    first_ = E2eIndex::Build({.num_docs = 2000, .seed = 1}).release();
    second_ = E2eIndex::Build({.num_docs = 1500, .seed = 2}).release();
  }
  static void TearDownTestSuite() {
    delete first_;
    delete second_;
    first_ = second_ = nullptr;
  }
  void SetUp() override {
    ASSERT_NE(first_, nullptr);
    ASSERT_NE(second_, nullptr);
  }

  std::unique_ptr<ServerProcess> Start(const std::string& index, std::vector<std::string> args) {
    args.insert(args.begin(), {"--index", index});
    absl::StatusOr<std::unique_ptr<ServerProcess>> server = ServerProcess::Start(args);
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  static grpc::Status Load(const ServerProcess& server, const std::string& path,
                           LoadIndexResponse* response) {
    auto stub = tandem::v1::IndexService::NewStub(NewChannel(server.address()));
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    LoadIndexRequest request;
    request.set_path(path);
    return stub->LoadIndex(&context, request, response);
  }

  static GetIndexInfoResponse Info(const ServerProcess& server) {
    auto stub = NewStub(server.address());
    grpc::ClientContext context;
    SetTimeout(context, kE2eTimeout);
    GetIndexInfoResponse info;
    const grpc::Status status = stub->GetIndexInfo(&context, GetIndexInfoRequest(), &info);
    EXPECT_TRUE(status.ok()) << status.error_message();
    return info;
  }

  // Queries the server and expects the answer of `index`.
  static void ExpectServes(const ServerProcess& server, const E2eIndex& index) {
    auto stub = NewStub(server.address());
    for (const SearchRequest& request :
         {TextRequest("t1 t2 t3"), TextRequest("t4 t9", tandem::v1::QUERY_MODE_AND, 5),
          TextRequest("t0 t7 t40", tandem::v1::QUERY_MODE_AND_OR, 20)}) {
      SearchResponse response;
      const grpc::Status status = CallSearch(*stub, request, &response, kE2eTimeout);
      ASSERT_TRUE(status.ok()) << status.error_message();
      index.ExpectSameHits(response, index.Expected(request));
    }
  }

  // How many times `text` occurs in the server's stderr, polled until it reaches `count`.
  static bool WaitForLog(const ServerProcess& server, const std::string& text, size_t count) {
    const absl::Time deadline = absl::Now() + kE2eTimeout;
    while (absl::Now() < deadline) {
      const std::string log = server.Stderr();
      size_t found = 0;
      for (size_t at = log.find(text); at != std::string::npos; at = log.find(text, at + 1)) {
        ++found;
      }
      if (found >= count) return true;
      absl::SleepFor(absl::Milliseconds(20));
    }
    return false;
  }

  static inline E2eIndex* first_ = nullptr;
  static inline E2eIndex* second_ = nullptr;
};

TEST_F(IndexLoadE2eTest, BadRequestsAndBadIndexesLeaveTheServingIndex) {
  auto server = Start(first_->dir(), {"--threads", "2"});
  ASSERT_NE(server, nullptr);
  LoadIndexResponse response;
  grpc::Status status = Load(*server, "", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_THAT(status.error_message(), HasSubstr("needs a path"));

  status = Load(*server, first_->dir() + "/no-such-index", &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::NOT_FOUND) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("cannot open index"));

  // A copy with one byte of its postings changed fails its checksum.
  TempDir tmp;
  const std::string damaged = tmp.path() + "/damaged";
  std::filesystem::copy(second_->dir(), damaged);
  {
    const std::string postings = damaged + "/postings.bin";
    std::fstream file(postings, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(file.good());
    file.seekg(static_cast<std::streamoff>(std::filesystem::file_size(postings) / 2));
    const char byte = static_cast<char>(file.peek());
    file.seekp(file.tellg());
    file.put(static_cast<char>(byte ^ 0x5a));
  }
  status = Load(*server, damaged, &response);
  EXPECT_EQ(status.error_code(), grpc::StatusCode::DATA_LOSS) << status.error_message();
  EXPECT_THAT(status.error_message(), HasSubstr("postings.bin"));

  // A directory that is no index at all.
  status = Load(*server, tmp.path(), &response);
  EXPECT_NE(status.error_code(), grpc::StatusCode::OK);
  EXPECT_THAT(status.error_message(), HasSubstr("cannot open index"));

  const GetIndexInfoResponse info = Info(*server);
  EXPECT_EQ(info.generation(), 1u);
  EXPECT_EQ(info.index_id(), first_->index().manifest().index_id);
  ExpectServes(*server, *first_);
  EXPECT_THAT(server->Stderr(), HasSubstr("index not loaded, still serving the old one"));
}

TEST_F(IndexLoadE2eTest, LoadIndexSwitchesAndTheOldIndexIsReleased) {
  auto server = Start(first_->dir(), {"--threads", "2"});
  ASSERT_NE(server, nullptr);
  ExpectServes(*server, *first_);

  LoadIndexResponse response;
  grpc::Status status = Load(*server, second_->dir(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_EQ(response.generation(), 2u);
  EXPECT_EQ(response.documents(), 1500u);
  EXPECT_EQ(response.index_id(), second_->index().manifest().index_id);
  EXPECT_GE(response.open_seconds(), 0.0);
  ExpectServes(*server, *second_);
  GetIndexInfoResponse info = Info(*server);
  EXPECT_EQ(info.generation(), 2u);
  EXPECT_EQ(info.documents(), 1500u);
  EXPECT_EQ(info.directory(), second_->dir());
  EXPECT_TRUE(WaitForMetric(server->metrics_address(), "tandem_index_documents", {}, Equals(1500)));
  EXPECT_TRUE(WaitForLog(*server, absl::StrCat("released the index at ", first_->dir()), 1))
      << server->Stderr();

  // And back, with tandem-cli: a third generation of the first index.
  absl::StatusOr<ProcessResult> cli =
      RunProcess(TANDEM_CLI_BINARY, {"--server", server->address(), "load-index", first_->dir()});
  ASSERT_TRUE(cli.ok()) << cli.status();
  EXPECT_EQ(cli->exit_code, 0) << cli->err;
  EXPECT_THAT(cli->out, HasSubstr(absl::StrCat("serving ", first_->dir(), ": 2000 documents")));
  EXPECT_THAT(cli->out, HasSubstr("generation 3"));
  EXPECT_EQ(Info(*server).generation(), 3u);
  ExpectServes(*server, *first_);
  cli = RunProcess(TANDEM_CLI_BINARY, {"--server", server->address(), "load-index"});
  ASSERT_TRUE(cli.ok());
  EXPECT_EQ(cli->exit_code, 2);
  cli = RunProcess(TANDEM_CLI_BINARY,
                   {"--server", server->address(), "load-index", first_->dir() + "/none"});
  ASSERT_TRUE(cli.ok());
  EXPECT_EQ(cli->exit_code, 1);
  EXPECT_THAT(cli->err, HasSubstr("NOT_FOUND"));
  EXPECT_TRUE(WaitForLog(*server, absl::StrCat("released the index at ", second_->dir()), 1));
}

// A query admitted before the switch runs to completion on the old index, which is released only
// after it; queries after the switch get the new index meanwhile.
TEST_F(IndexLoadE2eTest, QueryInFlightFinishesOnTheOldIndex) {
  auto server = Start(first_->dir(), {"--threads", "2", "--testing-query-delay", "2s"});
  ASSERT_NE(server, nullptr);
  auto stub = NewStub(server->address());
  const SearchRequest request = TextRequest("t1 t2", tandem::v1::QUERY_MODE_OR, 10);
  SearchResponse old_answer;
  grpc::Status old_status;
  std::thread in_flight([&] { old_status = CallSearch(*stub, request, &old_answer, kE2eTimeout); });
  ASSERT_TRUE(WaitForMetric(server->metrics_address(), "tandem_queries_in_flight", {}, Equals(1)));
  LoadIndexResponse response;
  const grpc::Status status = Load(*server, second_->dir(), &response);
  ASSERT_TRUE(status.ok()) << status.error_message();
  EXPECT_THAT(server->Stderr(), ::testing::Not(HasSubstr("released the index")));
  in_flight.join();
  ASSERT_TRUE(old_status.ok()) << old_status.error_message();
  first_->ExpectSameHits(old_answer, first_->Expected(request));
  EXPECT_TRUE(WaitForLog(*server, absl::StrCat("released the index at ", first_->dir()), 1));
  ExpectServes(*server, *second_);
}

// Clients query without pause while the node switches between the two indexes ten times: every
// answer is OK and equals one of the two indexes' answers, and every old index is released.
TEST_F(IndexLoadE2eTest, NoQueryFailsAcrossSwitches) {
  auto server = Start(first_->dir(), {"--threads", "2"});
  ASSERT_NE(server, nullptr);
  const std::vector<SearchRequest> requests = {
      TextRequest("t1 t2 t3"), TextRequest("t4 t9", tandem::v1::QUERY_MODE_AND, 5),
      TextRequest("t0 t7 t40", tandem::v1::QUERY_MODE_AND_OR, 20)};
  std::atomic<bool> stop{false};
  std::atomic<int> answered{0}, failed{0}, wrong{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 4; ++c) {
    clients.emplace_back([&, c] {
      auto stub = NewStub(server->address());
      for (int i = c; !stop.load(); ++i) {
        const SearchRequest& request = requests[i % requests.size()];
        SearchResponse response;
        if (!CallSearch(*stub, request, &response, kE2eTimeout).ok()) {
          ++failed;
          continue;
        }
        ++answered;
        bool equal_to_one = false;
        for (const E2eIndex* index : {first_, second_}) {
          const index::SearchResult expected = index->Expected(request);
          bool same = static_cast<size_t>(response.hits_size()) == expected.hits.size();
          for (size_t h = 0; same && h < expected.hits.size(); ++h) {
            same = response.hits(static_cast<int>(h)).docid() == expected.hits[h].docid &&
                   response.hits(static_cast<int>(h)).score() == expected.hits[h].score;
          }
          equal_to_one = equal_to_one || same;
        }
        if (!equal_to_one) ++wrong;
      }
    });
  }
  for (int round = 0; round < 10; ++round) {
    LoadIndexResponse response;
    const grpc::Status status =
        Load(*server, round % 2 == 0 ? second_->dir() : first_->dir(), &response);
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(response.generation(), static_cast<uint64_t>(round + 2));
    absl::SleepFor(absl::Milliseconds(50));
  }
  stop = true;
  for (std::thread& t : clients) t.join();
  EXPECT_EQ(failed.load(), 0);
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(answered.load(), 0);
  EXPECT_TRUE(WaitForLog(*server, "released the index at ", 10));
  ExpectServes(*server, *first_);  // generation 11: the first index
}

// --read-only refuses LoadIndex; SIGHUP re-reads --index (a symbolic link an operator repoints).
TEST_F(IndexLoadE2eTest, ReadOnlyNodeRefusesLoadAndReloadsOnSighup) {
  TempDir tmp;
  const std::string link = tmp.path() + "/current";
  std::filesystem::create_directory_symlink(first_->dir(), link);
  auto server = Start(link, {"--threads", "2", "--read-only"});
  ASSERT_NE(server, nullptr);
  LoadIndexResponse response;
  const grpc::Status refused = Load(*server, second_->dir(), &response);
  EXPECT_EQ(refused.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
  EXPECT_THAT(refused.error_message(), HasSubstr("read-only"));
  ExpectServes(*server, *first_);

  const std::string next = tmp.path() + "/next";
  std::filesystem::create_directory_symlink(second_->dir(), next);
  std::filesystem::rename(next, link);  // atomic, as an operator's `ln -sfn` + `mv -T`
  server->Signal(SIGHUP);
  ASSERT_TRUE(WaitForLog(*server, "lists warmed", 1)) << server->Stderr();
  EXPECT_EQ(Info(*server).generation(), 2u);
  ExpectServes(*server, *second_);

  // A SIGHUP while --index holds no index leaves the serving one.
  std::filesystem::remove(link);
  server->Signal(SIGHUP);
  ASSERT_TRUE(WaitForLog(*server, "index not loaded, still serving the old one", 1));
  ExpectServes(*server, *second_);
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(), 0) << server->Stderr();
}

}  // namespace
}  // namespace tandem::testing
