// Crashes during concurrent changes to the subscriptions: tandem-server is killed (SIGKILL) while
// eight clients subscribe and unsubscribe, after a random while, several times over the same
// files, half the trials with a log so small it is compacted all the time. After every kill the
// server must start again (a torn final log frame is dropped, nothing else), every acknowledged
// Subscribe must be there with its interface and predicate, and no acknowledged Unsubscribe's.
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tandem/v1/subscription.grpc.pb.h"
#include "tests/e2e_fixture.h"
#include "tests/e2e_process.h"

namespace tandem::testing {
namespace {

using tandem::v1::SubscriptionService;

struct Acked {
  std::string interface;
  std::string predicate_text;
};

class SubscriptionCrashTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    index_ = E2eIndex::Build({.num_docs = 50}).release();
    ASSERT_NE(index_, nullptr);
  }
  static void TearDownTestSuite() { delete index_; }

  std::unique_ptr<ServerProcess> Start(int64_t compact_bytes) {
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        ServerProcess::Start({"--index", index_->dir(), "--threads", "2", "--match-threads", "1",
                              "--subscriptions", tmp_.path() + "/subscriptions",
                              "--subscriptions-compact-bytes", std::to_string(compact_bytes)});
    EXPECT_TRUE(server.ok()) << server.status();
    return server.ok() ? *std::move(server) : nullptr;
  }

  static E2eIndex* index_;
  TempDir tmp_;
};

E2eIndex* SubscriptionCrashTest::index_ = nullptr;

TEST_F(SubscriptionCrashTest, EveryAcknowledgedChangeSurvivesSigkill) {
  constexpr int kTrials = 6;
  constexpr int kClients = 8;
  std::mt19937 random(20261207);
  std::map<uint64_t, Acked> live;  // acknowledged and not acknowledged as removed
  std::set<uint64_t> removed;      // acknowledged Unsubscribes
  std::set<uint64_t> uncertain;    // Unsubscribes in flight at a kill: either outcome is right
  int serial = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    SCOPED_TRACE(absl::StrCat("trial ", trial));
    auto server = Start(trial % 2 == 0 ? 256 : 1 << 20);
    ASSERT_NE(server, nullptr);

    // What the previous kill left: every acknowledged change, nothing acknowledged as removed.
    auto channel = NewChannel(server->address());
    auto stub = SubscriptionService::NewStub(channel);
    {
      grpc::ClientContext context;
      SetTimeout(context, kE2eTimeout);
      tandem::v1::ListSubscriptionsResponse listed;
      ASSERT_TRUE(stub->ListSubscriptions(&context, {}, &listed).ok());
      std::map<uint64_t, Acked> present;
      for (const tandem::v1::Subscription& s : listed.subscriptions()) {
        present[s.id()] = Acked{s.interface(), s.predicate_text()};
      }
      for (const auto& [id, acked] : live) {
        if (uncertain.contains(id)) continue;
        auto it = present.find(id);
        ASSERT_NE(it, present.end()) << "acknowledged subscription " << id << " is gone";
        EXPECT_EQ(it->second.interface, acked.interface);
        EXPECT_EQ(it->second.predicate_text, acked.predicate_text);
      }
      for (uint64_t id : removed) EXPECT_FALSE(present.contains(id)) << id << " came back";
      // Changes in flight at the kill may have landed either way; from here on they count as
      // made, so the next kill is checked against them too.
      for (uint64_t id : uncertain) {
        if (!present.contains(id)) live.erase(id);
      }
      uncertain.clear();
      for (const auto& [id, acked] : present) {
        if (!removed.contains(id)) live[id] = acked;
      }
    }

    std::mutex mu;
    std::atomic<int> acked_now{0};
    std::atomic<bool> stop{false};
    std::vector<std::thread> clients;
    const int base = serial;
    serial += 100000;
    for (int c = 0; c < kClients; ++c) {
      clients.emplace_back([&, c] {
        auto own = SubscriptionService::NewStub(channel);
        std::vector<uint64_t> mine;
        for (int i = 0; !stop.load(); ++i) {
          if (i % 4 == 3 && !mine.empty()) {
            const uint64_t id = mine.back();
            mine.pop_back();
            grpc::ClientContext context;
            SetTimeout(context, absl::Seconds(10));
            tandem::v1::UnsubscribeRequest request;
            request.set_id(id);
            tandem::v1::UnsubscribeResponse response;
            {
              std::lock_guard<std::mutex> lock(mu);
              uncertain.insert(id);
            }
            const grpc::Status status = own->Unsubscribe(&context, request, &response);
            if (!status.ok()) return;  // the server is gone
            std::lock_guard<std::mutex> lock(mu);
            uncertain.erase(id);
            live.erase(id);
            removed.insert(id);
            continue;
          }
          grpc::ClientContext context;
          SetTimeout(context, absl::Seconds(10));
          tandem::v1::SubscribeRequest request;
          request.set_interface(absl::StrCat("client", c));
          request.set_predicate_text(
              absl::StrCat("year = ", base + c * 10000 + i, " AND label = \"c", c, "\""));
          tandem::v1::SubscribeResponse response;
          const grpc::Status status = own->Subscribe(&context, request, &response);
          if (!status.ok()) return;
          ++acked_now;
          mine.push_back(response.id());
          std::lock_guard<std::mutex> lock(mu);
          live[response.id()] = Acked{request.interface(), response.predicate_text()};
        }
      });
    }
    absl::SleepFor(absl::Milliseconds(std::uniform_int_distribution<int>(150, 600)(random)));
    server->Signal(SIGKILL);
    server->WaitForExit();
    stop = true;
    for (std::thread& t : clients) t.join();
    EXPECT_GT(acked_now.load(), 0) << "no change was acknowledged before the kill";
  }

  // The last kill's changes, checked by a final start.
  auto server = Start(1 << 20);
  ASSERT_NE(server, nullptr);
  auto stub = SubscriptionService::NewStub(NewChannel(server->address()));
  grpc::ClientContext context;
  SetTimeout(context, kE2eTimeout);
  tandem::v1::ListSubscriptionsResponse listed;
  ASSERT_TRUE(stub->ListSubscriptions(&context, {}, &listed).ok());
  std::set<uint64_t> present;
  for (const tandem::v1::Subscription& s : listed.subscriptions()) present.insert(s.id());
  for (const auto& [id, acked] : live) {
    if (!uncertain.contains(id)) EXPECT_TRUE(present.contains(id)) << id << " is gone";
  }
  for (uint64_t id : removed) EXPECT_FALSE(present.contains(id)) << id << " came back";
  EXPECT_GT(live.size(), 0u);
  server->Signal(SIGTERM);
  EXPECT_EQ(server->WaitForExit(), 0) << server->Stderr();
}

}  // namespace
}  // namespace tandem::testing
