#include "match/subscription_registry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "absl/strings/str_cat.h"
#include "base/temp_dir.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "match/brute_force_matcher.h"
#include "match/match_router.h"
#include "match/predicate_parser.h"
#include "match/scenario.h"
#include "match/subscription_file.h"
#include "match/subscription_store.h"

namespace tandem::match {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

using base::TempDir;

Predicate P(absl::string_view text) {
  return *NormalizePredicate(*ParsePredicate(text), nullptr, Limits{});
}

std::unique_ptr<SubscriptionRegistry> Open(const RegistryOptions& options) {
  absl::StatusOr<std::unique_ptr<SubscriptionRegistry>> r =
      SubscriptionRegistry::Open(options, std::make_unique<BruteForceMatcher>(), nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : nullptr;
}

Event E(std::vector<Attribute> attributes) {
  return *MakeEvent(std::move(attributes), "", nullptr, Limits{});
}

TEST(SubscriptionFile, RoundTripAndDamage) {
  TempDir dir;
  const std::string path = dir.path() + "/subs";
  Scenario sc;
  sc.interfaces = 3;
  sc.filters_min = sc.filters_max = 30;
  sc.filters_per_subscription = 4;
  sc.vocabulary = 20;
  sc.term_share = 0.3;
  SubscriptionSnapshot snapshot;
  for (const GeneratedSubscription& g : GenerateSubscriptions(sc, 1)) {
    snapshot.records.push_back(
        SubscriptionRecord{snapshot.next_id++, absl::StrCat("if", g.interface), g.predicate});
  }
  snapshot.records.push_back(
      SubscriptionRecord{snapshot.next_id++, "d", P("x = -0.25 AND y = -9")});
  ASSERT_TRUE(WriteSubscriptionFile(path, snapshot).ok());
  absl::StatusOr<SubscriptionSnapshot> back = ReadSubscriptionFile(path);
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->next_id, snapshot.next_id);
  ASSERT_EQ(back->records.size(), snapshot.records.size());
  for (size_t i = 0; i < snapshot.records.size(); ++i) {
    EXPECT_EQ(back->records[i].id, snapshot.records[i].id);
    EXPECT_EQ(back->records[i].interface, snapshot.records[i].interface);
    EXPECT_EQ(back->records[i].predicate, snapshot.records[i].predicate);
  }
  // No temporary file left beside it.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir.path()), {}), 1);

  // Every flipped byte is caught (the checksum), and every truncation.
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t pos : {size_t{3}, size_t{40}, bytes.size() / 2, bytes.size() - 3}) {
    std::string damaged = bytes;
    damaged[pos] ^= 0x20;
    std::ofstream(path, std::ios::binary | std::ios::trunc) << damaged;
    absl::StatusOr<SubscriptionSnapshot> r = ReadSubscriptionFile(path);
    ASSERT_FALSE(r.ok()) << pos;
    EXPECT_TRUE(absl::IsDataLoss(r.status()) || absl::IsFailedPrecondition(r.status()))
        << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr(path));
  }
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() - 9);
  EXPECT_TRUE(absl::IsDataLoss(ReadSubscriptionFile(path).status()));
  EXPECT_TRUE(absl::IsNotFound(ReadSubscriptionFile(dir.path() + "/none").status()));
}

TEST(SubscriptionFile, MalformedPayloads) {
  SubscriptionSnapshot good;
  good.records.push_back(SubscriptionRecord{1, "a", P("x = 1")});
  good.next_id = 2;
  const std::string payload = EncodeSubscriptions(good);
  ASSERT_TRUE(DecodeSubscriptions(payload).ok());
  // Every truncation and every single-byte change either decodes to something valid or is refused
  // with DATA_LOSS: never a crash.
  for (size_t n = 0; n < payload.size(); ++n) {
    EXPECT_TRUE(absl::IsDataLoss(DecodeSubscriptions(payload.substr(0, n)).status())) << n;
  }
  for (size_t i = 0; i < payload.size(); ++i) {
    for (int v : {0, 1, 0x7f, 0x80, 0xff}) {
      std::string p = payload;
      p[i] = static_cast<char>(v);
      absl::StatusOr<SubscriptionSnapshot> r = DecodeSubscriptions(p);
      if (!r.ok()) {
        EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
      }
    }
  }
  SubscriptionSnapshot bad_id = good;
  bad_id.next_id = 1;  // an id not below next_id
  EXPECT_THAT(DecodeSubscriptions(EncodeSubscriptions(bad_id)).status().message(),
              HasSubstr("out of order"));
  SubscriptionSnapshot bad_op = good;
  bad_op.records[0].predicate.filters[0].constraints[0].op = Op::kContains;
  EXPECT_TRUE(absl::IsDataLoss(DecodeSubscriptions(EncodeSubscriptions(bad_op)).status()));
  EXPECT_THAT(DecodeSubscriptions(payload + "x").status().message(), HasSubstr("trailing"));
}

TEST(MatchRouter, LearnsTheCrossover) {
  MatchRouter::Options options;
  options.explore_every = 16;
  MatchRouter router(/*has_gpu=*/true, options);
  // The CPU costs 10 ns per constraint, the GPU 30 us plus 0.1 ns: the crossover is near 3,000.
  auto truth = [](MatchRouter::Engine e, int64_t w) {
    return e == MatchRouter::kCpu ? 1e-8 * w : 30e-6 + 1e-10 * w;
  };
  std::mt19937_64 rng(5);
  std::uniform_int_distribution<int> exp(0, 7);
  for (int i = 0; i < 4000; ++i) {
    int64_t w = 1;
    for (int k = exp(rng); k > 0; --k) w *= 10;
    w += rng() % 1000;
    const MatchRouter::Engine e = router.Choose(w);
    router.Record(e, w, truth(e, w));
  }
  int right = 0;
  for (int64_t w : {10, 100, 1000, 10'000, 100'000, 1'000'000}) {
    const bool gpu_better = truth(MatchRouter::kGpu, w) < truth(MatchRouter::kCpu, w);
    right +=
        (router.Predict(MatchRouter::kGpu, w) < router.Predict(MatchRouter::kCpu, w)) == gpu_better;
  }
  EXPECT_EQ(right, 6);
  MatchRouter cpu_only(/*has_gpu=*/false);
  EXPECT_EQ(cpu_only.Choose(1'000'000'000), MatchRouter::kCpu);
}

TEST(SubscriptionRegistry, SubscribeMatchUnsubscribeAndRestart) {
  TempDir dir;
  RegistryOptions options;
  options.path = dir.path() + "/subscriptions";
  SubscriptionId alice_id;
  {
    auto registry = Open(options);
    ASSERT_NE(registry, nullptr);
    alice_id = *registry->Subscribe("alice", P("year >= 2001 AND domain = \"enron.com\""));
    const SubscriptionId bob =
        *registry->Subscribe("bob", P("year < 2001 OR domain prefix \"en\""));
    ASSERT_TRUE(registry->Subscribe("carol", P("year = 1")).ok());
    const std::vector<Event> events = {
        E({Attribute{"year", Value::Int(2002)}, Attribute{"domain", Value::String("enron.com")}}),
        E({Attribute{"year", Value::Int(1999)}}), E({})};
    absl::StatusOr<MatchResult> r = registry->Match(events);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_STREQ(r->engine, "brute_force");
    EXPECT_THAT(r->interfaces[0], ElementsAre("alice", "bob"));
    EXPECT_THAT(r->interfaces[1], ElementsAre("bob"));
    EXPECT_TRUE(r->interfaces[2].empty());
    EXPECT_EQ(registry->SelectedConstraints(events), 3 + 2 + 3);  // year, domain; year; nothing
    ASSERT_TRUE(registry->Unsubscribe(bob).ok());
    EXPECT_TRUE(absl::IsNotFound(registry->Unsubscribe(bob)));
    EXPECT_THAT(registry->List("alice"), ::testing::SizeIs(1));
    EXPECT_THAT(registry->List(""), ::testing::SizeIs(2));
    EXPECT_THAT(registry->List("nobody"), ::testing::IsEmpty());
  }
  auto registry = Open(options);  // restart: the same subscriptions and ids, and no id reused
  ASSERT_NE(registry, nullptr);
  const std::vector<SubscriptionRecord> all = registry->List("");
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].id, alice_id);
  EXPECT_EQ(all[0].interface, "alice");
  EXPECT_EQ(all[0].predicate, P("year >= 2001 AND domain = \"enron.com\""));
  EXPECT_GT(*registry->Subscribe("dave", P("x = 1")), all[1].id);
  absl::StatusOr<MatchResult> r = registry->Match(std::vector<Event>{
      E({Attribute{"year", Value::Int(2005)}, Attribute{"domain", Value::String("enron.com")}})});
  EXPECT_THAT(r->interfaces[0], ElementsAre("alice"));
}

TEST(SubscriptionRegistry, RefusesInterfacesThatAreNotUtf8AndDropsStoredOnes) {
  TempDir dir;
  RegistryOptions options;
  options.path = dir.path() + "/subscriptions";
  // A file as older builds wrote it: a subscription whose strings are not UTF-8 among good ones.
  SubscriptionSnapshot old;
  old.records.push_back(SubscriptionRecord{1, "alice", P("x = 1")});
  Predicate bad_value;
  bad_value.filters.push_back(Filter{{Constraint{"s", Op::kEq, Value::String("\xff")}}});
  old.records.push_back(SubscriptionRecord{2, "mallory", bad_value});
  old.records.push_back(SubscriptionRecord{3, "mall\xc3", P("x = 2")});
  Predicate bad_name;
  bad_name.filters.push_back(Filter{{Constraint{"\xfe", Op::kEq, Value::Int(1)}}});
  old.records.push_back(SubscriptionRecord{4, "mallory", bad_name});
  old.records.push_back(SubscriptionRecord{5, "bob", P("s = \"caf\\xc3\\xa9\"")});
  old.next_id = 6;
  ASSERT_TRUE(WriteSubscriptionFile(options.path, old).ok());
  {
    auto registry = Open(options);
    ASSERT_NE(registry, nullptr);
    const std::vector<SubscriptionRecord> kept = registry->List("");
    ASSERT_EQ(kept.size(), 2u);
    EXPECT_EQ(kept[0].id, 1u);
    EXPECT_EQ(kept[1].id, 5u);
    const absl::StatusOr<SubscriptionId> refused = registry->Subscribe("\x80", P("x = 1"));
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << refused.status();
    EXPECT_THAT(refused.status().message(), HasSubstr("not valid UTF-8"));
    EXPECT_EQ(registry->List("").size(), 2u);
    EXPECT_EQ(*registry->Subscribe("carol", P("x = 3")), 6u);  // ids are still never reused
  }
  auto registry = Open(options);  // and the dropped ones are gone from the file
  EXPECT_EQ(registry->List("").size(), 3u);
}

TEST(SubscriptionRegistry, RefusesADamagedFileAndBadPaths) {
  TempDir dir;
  RegistryOptions options;
  options.path = dir.path() + "/subscriptions";
  {
    auto registry = Open(options);
    ASSERT_TRUE(registry->Subscribe("a", P("x = 1")).ok());
  }
  std::fstream f(options.path, std::ios::in | std::ios::out | std::ios::binary);
  f.seekp(40);
  f.put('\x55');
  f.close();
  absl::StatusOr<std::unique_ptr<SubscriptionRegistry>> r =
      SubscriptionRegistry::Open(options, std::make_unique<BruteForceMatcher>(), nullptr);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(absl::IsDataLoss(r.status())) << r.status();
  EXPECT_THAT(r.status().message(), HasSubstr(options.path));

  RegistryOptions nowhere;
  nowhere.path = dir.path() + "/missing-dir/subscriptions";
  EXPECT_FALSE(
      SubscriptionRegistry::Open(nowhere, std::make_unique<BruteForceMatcher>(), nullptr).ok());
  RegistryOptions gpu;
  gpu.engine = MatchEngine::kGpu;
  EXPECT_TRUE(absl::IsFailedPrecondition(
      SubscriptionRegistry::Open(gpu, std::make_unique<BruteForceMatcher>(), nullptr).status()));
  EXPECT_FALSE(SubscriptionRegistry::Open(RegistryOptions{}, nullptr, nullptr).ok());
  EXPECT_FALSE(ParseMatchEngine("fast").ok());
  EXPECT_EQ(*ParseMatchEngine("gpu"), MatchEngine::kGpu);
}

TEST(SubscriptionRegistry, LimitsAndAFailedWriteIsUndone) {
  TempDir dir;
  RegistryOptions options;
  options.path = dir.path() + "/sub/subscriptions";
  std::filesystem::create_directory(dir.path() + "/sub");
  options.max_subscriptions = 2;
  options.max_constraints = 3;
  options.max_interface_bytes = 4;
  auto registry = Open(options);
  EXPECT_THAT(registry->Subscribe("", P("x = 1")).status().message(), HasSubstr("empty interface"));
  EXPECT_THAT(registry->Subscribe("toolong", P("x = 1")).status().message(), HasSubstr("7 bytes"));
  ASSERT_TRUE(registry->Subscribe("a", P("x = 1 AND y = 2")).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(registry->Subscribe("a", P("x = 1 AND y = 2")).status()));
  ASSERT_TRUE(registry->Subscribe("a", P("x = 1")).ok());
  EXPECT_TRUE(absl::IsResourceExhausted(registry->Subscribe("a", P("z = 1")).status()));

  // The directory replaced by a file: every write fails, root's too.
  std::filesystem::remove_all(dir.path() + "/sub");
  std::ofstream(dir.path() + "/sub") << "not a directory";
  const std::vector<SubscriptionRecord> before = registry->List("");
  absl::Status s = registry->Unsubscribe(before[0].id);
  // The caller learns that nothing changed, not where the node keeps its files or its pid.
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("could not be saved"));
  EXPECT_THAT(s.message(), Not(HasSubstr(dir.path())));
  EXPECT_THAT(s.message(), Not(HasSubstr(std::to_string(getpid()))));
  EXPECT_EQ(registry->List("").size(), before.size());  // undone
  ASSERT_TRUE(registry->Unsubscribe(before[1].id).code() != absl::StatusCode::kOk);
  std::filesystem::remove(dir.path() + "/sub");
  std::filesystem::create_directory(dir.path() + "/sub");
  ASSERT_TRUE(registry->Unsubscribe(before[1].id).ok());
  EXPECT_EQ(ReadSubscriptionFile(options.path)->records.size(), 1u);
}

TEST(SubscriptionRegistry, ConcurrentSubscribersShareSnapshots) {
  TempDir dir;
  RegistryOptions options;
  options.path = dir.path() + "/subscriptions";
  auto registry = Open(options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 25; ++i) {
        const SubscriptionId id =
            *registry->Subscribe(absl::StrCat("t", t), P(absl::StrCat("x = ", i)));
        if (i % 5 == 0) {
          ASSERT_TRUE(registry->Unsubscribe(id).ok());
        }
        ASSERT_TRUE(registry->Match(std::vector<Event>{E({Attribute{"x", Value::Int(i)}})}).ok());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(registry->List("").size(), 8u * 20u);
  // Every returned change is on disk: what a second reader of the files replays.
  SubscriptionStore reader(SubscriptionStoreOptions{.path = options.path});
  absl::StatusOr<SubscriptionSnapshot> file = reader.Load();
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->records.size(), 8u * 20u);
  // 240 changes: each appended its own bytes, not the whole set, and callers shared fsyncs.
  const SubscriptionStoreStats stats = registry->store_stats();
  EXPECT_LE(stats.log_writes, 240u);
  EXPECT_GE(stats.log_writes, 1u);
  EXPECT_EQ(stats.compactions, 1u);  // the one at Open
  EXPECT_LT(stats.bytes_written, 240u * 64u + 1024u);
}

}  // namespace
}  // namespace tandem::match

namespace tandem::match {
namespace {

// The brute force, slowed down and recording each call's size, so concurrent calls pile up.
class RecordingMatcher final : public Matcher {
 public:
  explicit RecordingMatcher(std::vector<size_t>* sizes, std::mutex* mu) : sizes_(sizes), mu_(mu) {}
  const char* name() const override { return "recording"; }
  absl::Status Add(SubscriptionId id, InterfaceId i, const Predicate& p) override {
    return inner_.Add(id, i, p);
  }
  absl::Status Remove(SubscriptionId id) override { return inner_.Remove(id); }
  absl::Status Match(absl::Span<const Event> events,
                     std::vector<std::vector<InterfaceId>>* matched) override {
    {
      std::lock_guard<std::mutex> lock(*mu_);
      sizes_->push_back(events.size());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    return inner_.Match(events, matched);
  }
  MatcherStats stats() const override { return inner_.stats(); }

 private:
  BruteForceMatcher inner_;
  std::vector<size_t>* sizes_;
  std::mutex* mu_;
};

TEST(SubscriptionRegistry, ConcurrentMatchCallsAreMatchedTogether) {
  std::vector<size_t> sizes;
  std::mutex mu;
  RegistryOptions options;
  options.max_batch_events = 10;
  auto registry = *SubscriptionRegistry::Open(
      options, std::make_unique<RecordingMatcher>(&sizes, &mu), nullptr);
  for (int i = 0; i < 20; ++i) {
    ASSERT_TRUE(registry->Subscribe(absl::StrCat("i", i), P(absl::StrCat("x = ", i))).ok());
  }
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 16; ++t) {
    threads.emplace_back([&, t] {
      for (int round = 0; round < 10; ++round) {
        const int x = (t + round) % 25;  // 20..24 match nobody
        std::vector<Event> events = {E({Attribute{"x", Value::Int(x)}}), E({})};
        absl::StatusOr<MatchResult> r = registry->Match(events);
        if (!r.ok() || r->interfaces.size() != 2 || !r->interfaces[1].empty() ||
            r->interfaces[0] != (x < 20 ? std::vector<std::string>{absl::StrCat("i", x)}
                                        : std::vector<std::string>{})) {
          ++wrong;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(wrong.load(), 0);
  size_t events = 0, largest = 0;
  for (size_t s : sizes) {
    events += s;
    largest = std::max(largest, s);
  }
  EXPECT_EQ(events, 16u * 10u * 2u);
  EXPECT_LT(sizes.size(), 160u);  // calls were combined...
  EXPECT_LE(largest, 10u);        // ...within max_batch_events
  // A call larger than a batch goes alone.
  std::vector<Event> many(25, E({Attribute{"x", Value::Int(3)}}));
  absl::StatusOr<MatchResult> r = registry->Match(many);
  ASSERT_TRUE(r.ok());
  EXPECT_THAT(r->interfaces[24], ElementsAre("i3"));
  RegistryOptions bad;
  bad.max_batch_events = 0;
  EXPECT_FALSE(
      SubscriptionRegistry::Open(bad, std::make_unique<BruteForceMatcher>(), nullptr).ok());
}

}  // namespace
}  // namespace tandem::match
