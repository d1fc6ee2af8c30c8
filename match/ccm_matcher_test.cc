// The CCM matcher against BruteForceMatcher: random scenarios (match/scenario.h) in calls of 1, 7,
// 256 and more events than a launch holds, interleaved adds and removes, tables and interfaces
// that grow between matches, launches limited by the counters' memory, concurrent calls. Label
// "gpu": the tests that need a device skip without one.
#include "match/ccm_matcher.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gpu/device/device.h"
#include "gtest/gtest.h"
#include "match/brute_force_matcher.h"
#include "match/scenario.h"

namespace tandem::match {
namespace {

using Matches = std::vector<std::vector<InterfaceId>>;

TEST(CcmMatcherCreateTest, RejectsBadOptionsAndAMissingDevice) {
  CcmOptions options;
  options.max_batch_events = 0;
  EXPECT_EQ(CcmMatcher::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options.max_batch_events = 1 << 20;
  EXPECT_EQ(CcmMatcher::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = CcmOptions{};
  options.max_counter_bytes = 0;
  EXPECT_EQ(CcmMatcher::Create(options).status().code(), absl::StatusCode::kInvalidArgument);
  options = CcmOptions{};
  options.device = gpu::DeviceCount();  // one past the last, or 0 with none
  const absl::StatusOr<std::unique_ptr<CcmMatcher>> none = CcmMatcher::Create(options);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kUnavailable) << none.status();
  EXPECT_FALSE(none.status().message().empty());
}

class CcmMatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const absl::StatusOr<gpu::DeviceInfo> info = gpu::ProbeDevice();
    if (!info.ok()) GTEST_SKIP() << "no CUDA device: " << info.status().message();
  }

  // The matcher, or null after a skip (a device whose kernel image is missing).
  std::unique_ptr<CcmMatcher> Make(const CcmOptions& options = {}) {
    absl::StatusOr<std::unique_ptr<CcmMatcher>> matcher = CcmMatcher::Create(options);
    if (matcher.status().code() == absl::StatusCode::kFailedPrecondition) {
      skipped_ = true;
      return nullptr;
    }
    EXPECT_TRUE(matcher.ok()) << matcher.status();
    return matcher.ok() ? *std::move(matcher) : nullptr;
  }

  static void AddAll(const std::vector<GeneratedSubscription>& subs, Matcher& a, Matcher& b,
                     SubscriptionId first_id = 0) {
    for (size_t i = 0; i < subs.size(); ++i) {
      ASSERT_TRUE(a.Add(first_id + i, subs[i].interface, subs[i].predicate).ok());
      ASSERT_TRUE(b.Add(first_id + i, subs[i].interface, subs[i].predicate).ok());
    }
  }

  // `events` through Match calls of `span` events each.
  static Matches MatchInCalls(Matcher& matcher, const std::vector<Event>& events, size_t span) {
    Matches all;
    Matches part;
    for (size_t done = 0; done < events.size(); done += span) {
      const size_t n = std::min(span, events.size() - done);
      const absl::Status status =
          matcher.Match(absl::MakeConstSpan(events).subspan(done, n), &part);
      EXPECT_TRUE(status.ok()) << status;
      EXPECT_EQ(part.size(), n);
      all.insert(all.end(), part.begin(), part.end());
    }
    return all;
  }

  static void ExpectSame(const Matches& got, const Matches& want, const std::string& what) {
    ASSERT_EQ(got.size(), want.size()) << what;
    for (size_t e = 0; e < want.size(); ++e) {
      ASSERT_EQ(got[e], want[e]) << what << ", event " << e << " of " << want.size();
    }
  }

  static bool AnyMatch(const Matches& matches) {
    return std::any_of(matches.begin(), matches.end(), [](const auto& m) { return !m.empty(); });
  }

  bool skipped_ = false;
};

#define MAKE_OR_SKIP(var, options)                                          \
  std::unique_ptr<CcmMatcher> var = Make(options);                          \
  if (skipped_) GTEST_SKIP() << "the CCM kernel cannot run on this device"; \
  ASSERT_NE(var, nullptr)

Scenario Small() { return SizedScenario(5, 200, 400, /*names=*/20, /*values=*/10); }

TEST_F(CcmMatcherTest, ScenariosMatchBruteForceInCallsOfEverySize) {
  Scenario zipf = SizedScenario(5, 3000, 3000, 20, 10);
  zipf.zipf = 1.2;
  Scenario few_names = Small();
  few_names.names = 4;
  few_names.constraints_min = 1;
  few_names.constraints_max = 3;
  Scenario predicates = Small();
  predicates.filters_per_subscription = 8;
  const std::vector<std::pair<std::string, Scenario>> scenarios = {
      {"small", Small()},
      {"medium", SizedScenario(10, 10000, 10000, 100, 100)},  // 100,000 filters
      {"zipf", zipf},
      {"terms", WithTerms(Small(), 500, 0.3, 30)},
      {"few names", few_names},
      {"1500 interfaces", SizedScenario(1500, 5, 20, 20, 10)},
      {"8 filters a predicate", predicates}};
  for (const auto& [name, scenario] : scenarios) {
    CcmOptions options;
    options.max_batch_events = 100;  // calls of 256 and 700 events take several launches
    MAKE_OR_SKIP(gpu, options);
    BruteForceMatcher brute;
    AddAll(GenerateSubscriptions(scenario, 21), *gpu, brute);
    const std::vector<Event> events = GenerateEvents(scenario, 700, 22);
    const Matches want = MatchInCalls(brute, events, events.size());
    ASSERT_TRUE(AnyMatch(want)) << name << ": a scenario that matches nothing tests little";
    for (size_t span : {1, 7, 256, 700}) {
      ExpectSame(MatchInCalls(*gpu, events, span), want, absl::StrCat(name, ", calls of ", span));
    }
  }
}

TEST_F(CcmMatcherTest, TheDefaultScenario) {
  // Table 1: 10 interfaces of 22,500-27,500 filters, about a million constraints.
  const Scenario scenario;
  MAKE_OR_SKIP(gpu, CcmOptions{});
  BruteForceMatcher brute;
  AddAll(GenerateSubscriptions(scenario, 31), *gpu, brute);
  const std::vector<Event> events = GenerateEvents(scenario, 64, 32);
  const Matches want = MatchInCalls(brute, events, events.size());
  ExpectSame(MatchInCalls(*gpu, events, 1), want, "one at a time");
  ExpectSame(MatchInCalls(*gpu, events, 64), want, "one batch");
  const MatcherStats stats = gpu->stats();
  const MatcherStats reference = brute.stats();
  EXPECT_EQ(stats.subscriptions, reference.subscriptions);
  EXPECT_EQ(stats.filters, reference.filters);
  EXPECT_EQ(stats.constraints, reference.constraints);
  EXPECT_GT(stats.device_bytes, stats.constraints * 16);
  EXPECT_GT(stats.host_bytes, stats.constraints * 16);
}

TEST_F(CcmMatcherTest, BatchesOfDifferentSizesFollowEachOther) {
  // The double-buffered counters (section 4.3): each launch must reset exactly what the previous
  // one dirtied, whatever the sizes in between, including calls that launch nothing.
  MAKE_OR_SKIP(gpu, CcmOptions{});
  BruteForceMatcher brute;
  Scenario scenario = Small();
  scenario.names = 6;  // many matches: most counters and bitmaps are dirty
  AddAll(GenerateSubscriptions(scenario, 41), *gpu, brute);
  const std::vector<Event> big = GenerateEvents(scenario, 1024, 42);
  const std::vector<Event> small = GenerateEvents(scenario, 3, 43);
  const std::vector<Event> unknown = {Event{{Attribute{"nobody", Value::Int(1)}}, {}}, Event{}};
  const Matches want_big = MatchInCalls(brute, big, big.size());
  const Matches want_small = MatchInCalls(brute, small, small.size());
  for (int round = 0; round < 3; ++round) {
    ExpectSame(MatchInCalls(*gpu, big, big.size()), want_big, "big");
    ExpectSame(MatchInCalls(*gpu, small, small.size()), want_small, "small");
    ExpectSame(MatchInCalls(*gpu, unknown, 2), Matches(2), "unknown names");
    ExpectSame(MatchInCalls(*gpu, small, 1), want_small, "small, one at a time");
    Matches none;
    ASSERT_TRUE(gpu->Match({}, &none).ok());
    EXPECT_TRUE(none.empty());
  }
}

TEST_F(CcmMatcherTest, CounterMemorySplitsLaunches) {
  CcmOptions options;
  options.max_counter_bytes = 64 << 10;  // with 16,384+ filters: one event a launch
  MAKE_OR_SKIP(gpu, options);
  BruteForceMatcher brute;
  Scenario scenario = Small();
  scenario.filters_min = scenario.filters_max = 4000;
  AddAll(GenerateSubscriptions(scenario, 51), *gpu, brute);
  const std::vector<Event> events = GenerateEvents(scenario, 50, 52);
  ExpectSame(MatchInCalls(*gpu, events, 50), MatchInCalls(brute, events, 50), "limited");
}

TEST_F(CcmMatcherTest, InterleavedAddsRemovesAndMatches) {
  Scenario scenario = Small();
  scenario.vocabulary = 80;
  scenario.term_share = 0.25;
  scenario.event_terms = 12;
  scenario.filters_per_subscription = 3;
  const std::vector<GeneratedSubscription> subs = GenerateSubscriptions(scenario, 61);
  const std::vector<Event> events = GenerateEvents(scenario, 200, 62);
  CcmOptions options;
  options.max_batch_events = 64;
  MAKE_OR_SKIP(gpu, options);
  BruteForceMatcher brute;
  std::mt19937_64 rng(63);
  std::vector<SubscriptionId> live, removed;
  SubscriptionId next = 0;
  for (int round = 0; round < 60; ++round) {
    const int adds = std::uniform_int_distribution<int>(0, 40)(rng);
    for (int a = 0; a < adds; ++a) {
      // Now and then an id that was removed comes back with another predicate.
      SubscriptionId id = next;
      if (!removed.empty() && rng() % 4 == 0) {
        id = removed.back();
        removed.pop_back();
      } else {
        ++next;
      }
      const GeneratedSubscription& sub = subs[rng() % subs.size()];
      ASSERT_TRUE(gpu->Add(id, sub.interface, sub.predicate).ok());
      ASSERT_TRUE(brute.Add(id, sub.interface, sub.predicate).ok());
      live.push_back(id);
    }
    const int removes = std::uniform_int_distribution<int>(0, 35)(rng);
    for (int r = 0; r < removes && !live.empty(); ++r) {
      const size_t i = rng() % live.size();
      ASSERT_TRUE(gpu->Remove(live[i]).ok());
      ASSERT_TRUE(brute.Remove(live[i]).ok());
      removed.push_back(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    const size_t span = round % 3 == 0 ? 1 : (round % 3 == 1 ? 7 : 200);
    const std::vector<Event> some(events.begin(), events.begin() + (span == 1 ? 20 : 200));
    ExpectSame(MatchInCalls(*gpu, some, span), MatchInCalls(brute, some, some.size()),
               absl::StrCat("round ", round));
    ASSERT_EQ(gpu->stats().constraints, brute.stats().constraints);
  }
}

TEST_F(CcmMatcherTest, DuplicateAndUnknownIds) {
  MAKE_OR_SKIP(gpu, CcmOptions{});
  Predicate p;
  p.filters.push_back(Filter{{Constraint{"a", Op::kEq, Value::Int(1)}}});
  Predicate q;
  q.filters.push_back(Filter{{Constraint{"a", Op::kEq, Value::Int(2)}}});
  ASSERT_TRUE(gpu->Add(7, 3, p).ok());
  EXPECT_EQ(gpu->Add(7, 4, q).code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(gpu->Remove(8).code(), absl::StatusCode::kNotFound);
  const std::vector<Event> events = {Event{{Attribute{"a", Value::Int(1)}}, {}},
                                     Event{{Attribute{"a", Value::Int(2)}}, {}}};
  Matches got;
  ASSERT_TRUE(gpu->Match(events, &got).ok());
  ExpectSame(got, Matches{{3}, {}}, "the duplicate changed nothing");
  ASSERT_TRUE(gpu->Remove(7).ok());
  EXPECT_EQ(gpu->Remove(7).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(gpu->Match(events, &got).ok());
  ExpectSame(got, Matches{{}, {}}, "removed");
  ASSERT_TRUE(gpu->Add(7, 4, q).ok());  // the id again, another predicate
  ASSERT_TRUE(gpu->Match(events, &got).ok());
  ExpectSame(got, Matches{{}, {4}}, "re-added");
  EXPECT_EQ(gpu->stats().subscriptions, 1u);
}

TEST_F(CcmMatcherTest, RejectsWhatItCannotHoldAndUnsortedEvents) {
  MAKE_OR_SKIP(gpu, CcmOptions{});
  Predicate empty_filter;
  empty_filter.filters.push_back(Filter{});
  EXPECT_EQ(gpu->Add(1, 0, empty_filter).code(), absl::StatusCode::kInvalidArgument);
  Predicate p;
  p.filters.push_back(Filter{{Constraint{"a", Op::kEq, Value::Int(1)}}});
  EXPECT_EQ(gpu->Add(1, 1u << 24, p).code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(gpu->stats().subscriptions, 0u);
  const std::vector<Event> unsorted = {
      Event{{Attribute{"b", Value::Int(1)}, Attribute{"a", Value::Int(1)}}, {}}};
  Matches got;
  EXPECT_EQ(gpu->Match(unsorted, &got).code(), absl::StatusCode::kInvalidArgument);
  const std::vector<Event> repeated_terms = {Event{{}, {"x", "x"}}};
  EXPECT_EQ(gpu->Match(repeated_terms, &got).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(CcmMatcherTest, TablesAndInterfacesGrowBetweenMatches) {
  // One name's row grows from 4 constraints to thousands, the pool and Filters double, interface
  // ids pass 32, 128 and 1000, strings pile up: each step is copied before the next Match.
  CcmOptions options;
  options.max_batch_events = 16;
  MAKE_OR_SKIP(gpu, options);
  BruteForceMatcher brute;
  std::vector<Event> events;
  for (int i = 0; i < 40; ++i) {
    events.push_back(Event{{Attribute{"hot", Value::Int(i * 50)},
                            Attribute{"s", Value::String(absl::StrCat("w", i % 9, "x"))}},
                           {i % 2 == 0 ? "even" : "odd"}});
  }
  for (int i = 0; i < 6000; ++i) {
    const InterfaceId interface = static_cast<InterfaceId>(i < 3000 ? i % 40 : (i * 7) % 1200);
    Predicate p;
    Filter f;
    f.constraints.push_back(Constraint{"hot", i % 2 ? Op::kLt : Op::kGe, Value::Int(i % 2000)});
    if (i % 3 == 0) {
      f.constraints.push_back(
          Constraint{"s", Op::kPrefix, Value::String(absl::StrCat("w", i % 11))});
    }
    if (i % 5 == 0) {
      f.constraints.push_back(Constraint{"terms", Op::kContains, Value::String("even")});
    }
    p.filters.push_back(f);
    ASSERT_TRUE(gpu->Add(i, interface, p).ok());
    ASSERT_TRUE(brute.Add(i, interface, p).ok());
    if (i % 250 == 0 || i == 3001) {
      ExpectSame(MatchInCalls(*gpu, events, 40), MatchInCalls(brute, events, 40),
                 absl::StrCat(i + 1, " subscriptions"));
    }
  }
  ExpectSame(MatchInCalls(*gpu, events, 40), MatchInCalls(brute, events, 40), "grown");
  // Most go: rows shrink by moving their last constraints into the holes.
  for (int i = 0; i < 6000; ++i) {
    if (i % 9 != 0) {
      ASSERT_TRUE(gpu->Remove(i).ok());
      ASSERT_TRUE(brute.Remove(i).ok());
    }
  }
  ExpectSame(MatchInCalls(*gpu, events, 40), MatchInCalls(brute, events, 40), "shrunk");
  EXPECT_GT(gpu->stats().device_bytes, 0u);
}

TEST_F(CcmMatcherTest, LongStringsAndManyInputs) {
  // Attribute strings past the block's shared copy (512 bytes) are read from device memory, and
  // past 1 KB the inputs no longer travel in the kernel's parameters; so do events of more than
  // 64 inputs.
  MAKE_OR_SKIP(gpu, CcmOptions{});
  BruteForceMatcher brute;
  const std::string long_a(700, 'a');
  const std::string long_b = std::string(1500, 'b') + "tail";
  std::vector<std::pair<InterfaceId, Constraint>> constraints = {
      {0, Constraint{"s", Op::kPrefix, Value::String("aaaa")}},
      {1, Constraint{"s", Op::kEq, Value::String(long_a)}},
      {2, Constraint{"t", Op::kSubstring, Value::String("btail")}},
      {3, Constraint{"t", Op::kNe, Value::String(long_b)}},
      {4, Constraint{"u", Op::kEq, Value::String("short")}}};
  for (int i = 0; i < 100; ++i) {
    constraints.push_back({static_cast<InterfaceId>(5 + i),
                           Constraint{absl::StrCat("n", i), Op::kGe, Value::Int(i)}});
  }
  SubscriptionId id = 0;
  for (const auto& [interface, c] : constraints) {
    Predicate p;
    p.filters.push_back(Filter{{c}});
    ASSERT_TRUE(gpu->Add(id, interface, p).ok());
    ASSERT_TRUE(brute.Add(id, interface, p).ok());
    ++id;
  }
  std::vector<Event> events = {
      Event{{Attribute{"s", Value::String(long_a)}, Attribute{"u", Value::String("short")}}, {}},
      Event{{Attribute{"s", Value::String(long_a)}, Attribute{"t", Value::String(long_b)}}, {}},
      Event{{Attribute{"t", Value::String(long_b + "x")}}, {}}};
  Event many;
  for (int i = 0; i < 100; ++i) {
    many.attributes.push_back(Attribute{absl::StrCat("n", i), Value::Int(50)});
  }
  std::sort(many.attributes.begin(), many.attributes.end(),
            [](const Attribute& x, const Attribute& y) { return x.name < y.name; });
  events.push_back(many);
  const Matches want = MatchInCalls(brute, events, events.size());
  ASSERT_EQ(want[1].size(), 3u);  // 0, 1 and 2
  for (size_t span : {1, 2, 4}) {
    ExpectSame(MatchInCalls(*gpu, events, span), want, absl::StrCat("calls of ", span));
  }
}

TEST_F(CcmMatcherTest, ConcurrentMatchesWhileSubscriptionsChange) {
  MAKE_OR_SKIP(gpu, CcmOptions{});
  BruteForceMatcher brute;
  Scenario scenario = Small();
  AddAll(GenerateSubscriptions(scenario, 71), *gpu, brute);
  const std::vector<Event> events = GenerateEvents(scenario, 100, 72);
  const Matches want = MatchInCalls(brute, events, events.size());
  std::atomic<bool> failed{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        Matches got;
        const size_t n = 1 + (t * 31 + i * 17) % events.size();
        if (!gpu->Match(absl::MakeConstSpan(events).first(n), &got).ok() ||
            !std::equal(got.begin(), got.end(), want.begin())) {
          failed = true;
        }
      }
    });
  }
  // Changes the events cannot see: a name none of them carries.
  Predicate unseen;
  unseen.filters.push_back(Filter{{Constraint{"unseen", Op::kNe, Value::Int(0)}}});
  for (int i = 0; i < 300; ++i) {
    ASSERT_TRUE(gpu->Add(1'000'000 + i, static_cast<InterfaceId>(i % 3), unseen).ok());
    if (i % 2 == 1) {
      ASSERT_TRUE(gpu->Remove(1'000'000 + i - 1).ok());
    }
  }
  for (std::thread& t : threads) t.join();
  EXPECT_FALSE(failed);
}

}  // namespace
}  // namespace tandem::match
