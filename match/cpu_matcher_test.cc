#include "match/cpu_matcher.h"

#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "match/brute_force_matcher.h"
#include "match/model.h"
#include "match/scenario.h"

namespace tandem::match {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

using Matched = std::vector<std::vector<InterfaceId>>;

std::unique_ptr<CpuMatcher> NewCpu(int threads = 1) {
  absl::StatusOr<std::unique_ptr<CpuMatcher>> m = CpuMatcher::Create(CpuMatcherOptions{threads});
  EXPECT_TRUE(m.ok()) << m.status();
  return std::move(*m);
}

Matched MustMatch(Matcher& matcher, absl::Span<const Event> events) {
  Matched out;
  const absl::Status s = matcher.Match(events, &out);
  EXPECT_TRUE(s.ok()) << matcher.name() << ": " << s;
  return out;
}

Constraint C(std::string name, Op op, Value value) {
  return Constraint{std::move(name), op, std::move(value)};
}

Predicate One(Constraint c) { return Predicate{{Filter{{std::move(c)}}}}; }

Event E(std::vector<Attribute> attributes, std::vector<std::string> terms = {}) {
  std::sort(attributes.begin(), attributes.end(),
            [](const Attribute& a, const Attribute& b) { return a.name < b.name; });
  std::sort(terms.begin(), terms.end());
  return Event{std::move(attributes), std::move(terms)};
}

// Adds the same subscriptions to both and expects the same answers for `events`; returns how
// many (event, interface) pairs matched, so callers can check the test had something to compare.
size_t ExpectSame(Matcher& cpu, Matcher& reference, absl::Span<const Event> events) {
  const Matched got = MustMatch(cpu, events);
  const Matched want = MustMatch(reference, events);
  EXPECT_EQ(got.size(), events.size());
  size_t pairs = 0;
  for (size_t e = 0; e < events.size() && e < got.size(); ++e) {
    EXPECT_EQ(got[e], want[e]) << "event " << e;
    pairs += want[e].size();
  }
  return pairs;
}

void AddBoth(Matcher& a, Matcher& b, SubscriptionId id, InterfaceId iface, const Predicate& p) {
  ASSERT_TRUE(a.Add(id, iface, p).ok());
  ASSERT_TRUE(b.Add(id, iface, p).ok());
}

struct ScenarioCase {
  Scenario scenario;
  const char* label;
};

// `scenario` with events of 2-4 attributes and filters of `constraints_min`..`constraints_max`
// constraints.
Scenario Small(Scenario scenario, int constraints_min, int constraints_max,
               int filters_per_subscription) {
  scenario.constraints_min = constraints_min;
  scenario.constraints_max = constraints_max;
  scenario.attributes_min = 2;
  scenario.attributes_max = 4;
  scenario.filters_per_subscription = filters_per_subscription;
  return scenario;
}

std::vector<ScenarioCase> SmallScenarios() {
  Scenario zipf = Small(SizedScenario(20, 100, 200, /*names=*/8, /*values=*/10), 2, 5, 3);
  zipf.zipf = 1.0;
  // Term constraints stay off (vocabulary 0) in the numbers and strings cases.
  Scenario numbers = Small(WithTerms(SizedScenario(5, 500, 600, 10, 5), 0, 0.3, 12), 3, 6, 2);
  numbers.numeric_share = 1.0;
  Scenario strings = numbers;
  strings.numeric_share = 0.0;
  return {{Small(SizedScenario(3, 50, 80, 5, 10), 2, 4, 1), "few names"},
          {zipf, "zipf, 3 filters per subscription"},
          {Small(WithTerms(SizedScenario(10, 1500, 2000, 10, 20), 50, 0.3, 12), 3, 6, 2), "terms"},
          {numbers, "numbers only"},
          {strings, "strings only"}};
}

TEST(CpuMatcher, RandomScenariosMatchBruteForce) {
  uint64_t seed = 1;
  for (const ScenarioCase& c : SmallScenarios()) {
    for (int round = 0; round < 3; ++round, ++seed) {
      SCOPED_TRACE(absl::StrCat(c.label, ", seed ", seed));
      auto cpu = NewCpu();
      BruteForceMatcher reference;
      const std::vector<GeneratedSubscription> subs = GenerateSubscriptions(c.scenario, seed);
      for (size_t i = 0; i < subs.size(); ++i) {
        AddBoth(*cpu, reference, i + 1, subs[i].interface, subs[i].predicate);
      }
      const std::vector<Event> events = GenerateEvents(c.scenario, 200, seed + 1000);
      const size_t pairs = ExpectSame(*cpu, reference, events);
      // Some interfaces match and some do not, or the comparison says little.
      EXPECT_GT(pairs, 0u);
      EXPECT_LT(pairs, events.size() * c.scenario.interfaces);
    }
  }
}

// Every numeric and string operator against every value, each constraint its own interface, and
// an event per value: the index must agree with Satisfies on every pair.
TEST(CpuMatcher, EveryOperatorAgainstEveryValue) {
  const int64_t p53 = int64_t{1} << 53;
  const std::vector<Value> numbers = {
      Value::Int(0),
      Value::Int(3),
      Value::Double(3.0),
      Value::Double(3.5),
      Value::Int(-3),
      Value::Double(-3.0),
      Value::Double(-2.5),
      Value::Int(-4),
      Value::Double(-0.0),
      Value::Int(p53),
      Value::Int(p53 + 1),
      Value::Int(p53 + 2),
      Value::Int(p53 - 1),
      Value::Double(double(p53)),
      Value::Double(double(p53) + 2),
      Value::Int(-p53 - 1),
      Value::Double(-double(p53)),
      Value::Int(std::numeric_limits<int64_t>::max()),
      Value::Int(std::numeric_limits<int64_t>::max() - 1),
      Value::Int(std::numeric_limits<int64_t>::min()),
      Value::Double(9223372036854775808.0),  // 2^63, the double of INT64_MAX
      Value::Double(-9223372036854775808.0),
      Value::Double(1e300),
      Value::Double(-1e300),
      Value::Double(std::numeric_limits<double>::infinity()),
      Value::Double(-std::numeric_limits<double>::infinity()),
  };
  const std::vector<Value> strings = {
      Value::String(""),      Value::String("a"),    Value::String("ab"),
      Value::String("abc"),   Value::String("b"),    Value::String("ba"),
      Value::String("xabcx"), Value::String("abcd"), Value::String("3"),
  };
  const Op kAll[] = {Op::kEq, Op::kNe, Op::kLt,     Op::kGt,
                     Op::kLe, Op::kGe, Op::kPrefix, Op::kSubstring};
  for (int threads : {1, 3}) {
    auto cpu = NewCpu(threads);
    BruteForceMatcher reference;
    InterfaceId iface = 0;
    // Numeric constraints on x, string constraints on x too (type mismatches), and ordering
    // operators on strings, prefix and substring on numbers: never satisfied.
    for (const Op op : kAll) {
      for (const auto* values : {&numbers, &strings}) {
        for (const Value& v : *values) {
          AddBoth(*cpu, reference, iface + 1, iface, One(C("x", op, v)));
          ++iface;
        }
      }
    }
    ASSERT_GT(iface, 64u);
    std::vector<Event> events;
    for (const auto* values : {&numbers, &strings}) {
      for (const Value& v : *values) events.push_back(E({Attribute{"x", v}}));
    }
    // MakeEvent rejects NaN; were one to come, it must still agree with Satisfies.
    events.push_back(E({Attribute{"x", Value::Double(std::nan(""))}}));
    events.push_back(E({Attribute{"y", Value::Int(3)}}));  // x absent: not even != holds
    events.push_back(E({}));
    const Matched want = MustMatch(reference, events);
    EXPECT_GT(ExpectSame(*cpu, reference, events), 0u);
    EXPECT_THAT(want[want.size() - 2], IsEmpty());
    EXPECT_THAT(want.back(), IsEmpty());
  }
}

TEST(CpuMatcher, IntAndDoubleEquality) {
  auto cpu = NewCpu();
  const int64_t p53 = int64_t{1} << 53;
  ASSERT_TRUE(cpu->Add(1, 1, One(C("x", Op::kEq, Value::Int(3)))).ok());
  ASSERT_TRUE(cpu->Add(2, 2, One(C("x", Op::kEq, Value::Double(3.0)))).ok());
  ASSERT_TRUE(cpu->Add(3, 3, One(C("x", Op::kEq, Value::Int(p53 + 1)))).ok());
  ASSERT_TRUE(cpu->Add(4, 4, One(C("x", Op::kLt, Value::Int(p53 + 1)))).ok());
  ASSERT_TRUE(cpu->Add(5, 5, One(C("x", Op::kGt, Value::Int(-5)))).ok());
  const std::vector<Event> events = {
      E({Attribute{"x", Value::Double(3.0)}}),
      E({Attribute{"x", Value::Int(3)}}),
      // As a double, 2^53 + 1 is 2^53: equal to a double attribute 2^53, not below it.
      E({Attribute{"x", Value::Double(static_cast<double>(p53))}}),
      // Exactly against an int.
      E({Attribute{"x", Value::Int(p53)}}),
      E({Attribute{"x", Value::Int(p53 + 1)}}),
      E({Attribute{"x", Value::Double(-5.5)}}),
      E({Attribute{"x", Value::Int(-4)}}),
  };
  const Matched got = MustMatch(*cpu, events);
  EXPECT_THAT(got[0], ElementsAre(1, 2, 4, 5));
  EXPECT_THAT(got[1], ElementsAre(1, 2, 4, 5));
  EXPECT_THAT(got[2], ElementsAre(3, 5));
  EXPECT_THAT(got[3], ElementsAre(4, 5));
  EXPECT_THAT(got[4], ElementsAre(3, 5));
  EXPECT_THAT(got[5], ElementsAre(4));
  EXPECT_THAT(got[6], ElementsAre(4, 5));
}

TEST(CpuMatcher, Strings) {
  auto cpu = NewCpu();
  ASSERT_TRUE(cpu->Add(1, 1, One(C("s", Op::kPrefix, Value::String("")))).ok());
  ASSERT_TRUE(cpu->Add(2, 2, One(C("s", Op::kSubstring, Value::String("")))).ok());
  ASSERT_TRUE(cpu->Add(3, 3, One(C("s", Op::kPrefix, Value::String("enron.com.au")))).ok());
  ASSERT_TRUE(cpu->Add(4, 4, One(C("s", Op::kSubstring, Value::String("n.c")))).ok());
  ASSERT_TRUE(cpu->Add(5, 5, One(C("s", Op::kNe, Value::String("enron")))).ok());
  ASSERT_TRUE(cpu->Add(6, 6, One(C("s", Op::kEq, Value::String("enron.com")))).ok());
  ASSERT_TRUE(cpu->Add(7, 7, One(C("s", Op::kNe, Value::Int(3)))).ok());
  ASSERT_TRUE(cpu->Add(8, 8, One(C("t", Op::kNe, Value::String("x")))).ok());
  ASSERT_TRUE(cpu->Add(9, 9, One(C("s", Op::kPrefix, Value::String("enr")))).ok());
  const std::vector<Event> events = {
      E({Attribute{"s", Value::String("enron.com")}}), E({Attribute{"s", Value::String("")}}),
      E({Attribute{"s", Value::String("enron")}}),
      E({Attribute{"s", Value::Int(3)}}),  // a number: no string constraint holds, != neither
  };
  const Matched got = MustMatch(*cpu, events);
  EXPECT_THAT(got[0], ElementsAre(1, 2, 4, 5, 6, 9));
  EXPECT_THAT(got[1], ElementsAre(1, 2, 5));
  EXPECT_THAT(got[2], ElementsAre(1, 2, 9));
  EXPECT_THAT(got[3], IsEmpty());
}

TEST(CpuMatcher, SubstringByWindowsAndByScan) {
  // Many distinct needles make a short attribute's windows the cheaper way; a long attribute
  // tests each needle. Both must agree with the reference.
  auto cpu = NewCpu();
  BruteForceMatcher reference;
  std::mt19937_64 rng(7);
  auto word = [&](int len) {
    std::string w;
    for (int i = 0; i < len; ++i) w.push_back(static_cast<char>('a' + rng() % 3));
    return w;
  };
  for (int i = 0; i < 300; ++i) {
    AddBoth(*cpu, reference, i + 1, i % 7,
            One(C("s", Op::kSubstring, Value::String(word(static_cast<int>(rng() % 5))))));
  }
  std::vector<Event> events;
  for (int len : {0, 1, 2, 3, 5, 8, 40, 200}) {
    for (int k = 0; k < 5; ++k) events.push_back(E({Attribute{"s", Value::String(word(len))}}));
  }
  EXPECT_GT(ExpectSame(*cpu, reference, events), 0u);
}

TEST(CpuMatcher, TermsAndFilters) {
  auto cpu = NewCpu();
  Predicate p;
  p.filters.push_back(Filter{{C("terms", Op::kContains, Value::String("gas")),
                              C("terms", Op::kContains, Value::String("price")),
                              C("year", Op::kGe, Value::Int(2002))}});
  p.filters.push_back(Filter{{C("terms", Op::kContains, Value::String("enron"))}});
  ASSERT_TRUE(cpu->Add(1, 1, p).ok());
  const std::vector<Event> events = {
      E({Attribute{"year", Value::Int(2003)}}, {"gas", "price"}),
      E({Attribute{"year", Value::Int(2001)}}, {"gas", "price"}),
      E({}, {"gas", "price"}),
      E({}, {"enron"}),
      E({Attribute{"year", Value::Int(2003)}}, {"gas"}),
  };
  const Matched got = MustMatch(*cpu, events);
  EXPECT_THAT(got[0], ElementsAre(1));
  EXPECT_THAT(got[1], IsEmpty());
  EXPECT_THAT(got[2], IsEmpty());
  EXPECT_THAT(got[3], ElementsAre(1));
  EXPECT_THAT(got[4], IsEmpty());
}

TEST(CpuMatcher, RemoveThenMatch) {
  auto cpu = NewCpu();
  ASSERT_TRUE(cpu->Add(1, 1, One(C("x", Op::kGt, Value::Int(0)))).ok());
  ASSERT_TRUE(cpu->Add(2, 2, One(C("x", Op::kGt, Value::Int(0)))).ok());
  ASSERT_TRUE(cpu->Add(3, 1, One(C("x", Op::kLt, Value::Int(100)))).ok());
  const std::vector<Event> events = {E({Attribute{"x", Value::Int(5)}})};
  EXPECT_THAT(MustMatch(*cpu, events)[0], ElementsAre(1, 2));
  ASSERT_TRUE(cpu->Remove(2).ok());
  EXPECT_THAT(MustMatch(*cpu, events)[0], ElementsAre(1));
  ASSERT_TRUE(cpu->Remove(1).ok());
  EXPECT_THAT(MustMatch(*cpu, events)[0], ElementsAre(1));  // still by subscription 3
  ASSERT_TRUE(cpu->Remove(3).ok());
  EXPECT_THAT(MustMatch(*cpu, events)[0], IsEmpty());
  // A reused id and a reused filter slot count from zero.
  ASSERT_TRUE(
      cpu->Add(
             2, 4,
             Predicate{{Filter{{C("x", Op::kGt, Value::Int(0)), C("y", Op::kEq, Value::Int(1))}}}})
          .ok());
  EXPECT_THAT(MustMatch(*cpu, events)[0], IsEmpty());
  EXPECT_THAT(
      MustMatch(*cpu, {E({Attribute{"x", Value::Int(5)}, Attribute{"y", Value::Int(1)}})})[0],
      ElementsAre(4));
}

TEST(CpuMatcher, DuplicateAndUnknownIds) {
  auto cpu = NewCpu();
  ASSERT_TRUE(cpu->Add(7, 1, One(C("x", Op::kEq, Value::Int(1)))).ok());
  EXPECT_EQ(cpu->Add(7, 2, One(C("x", Op::kEq, Value::Int(2)))).code(),
            absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(cpu->Remove(8).code(), absl::StatusCode::kNotFound);
  ASSERT_TRUE(cpu->Remove(7).ok());
  EXPECT_EQ(cpu->Remove(7).code(), absl::StatusCode::kNotFound);
  EXPECT_TRUE(cpu->Add(7, 2, One(C("x", Op::kEq, Value::Int(2)))).ok());
  EXPECT_EQ(cpu->stats().subscriptions, 1u);
}

TEST(CpuMatcher, RejectsWhatItCannotCount) {
  EXPECT_EQ(CpuMatcher::Create(CpuMatcherOptions{0}).status().code(),
            absl::StatusCode::kInvalidArgument);
  auto cpu = NewCpu();
  EXPECT_EQ(cpu->Add(1, 1, Predicate{{Filter{}}}).code(), absl::StatusCode::kInvalidArgument);
  Filter big;
  for (int i = 0; i < kMaxConstraintsPerFilter + 1; ++i) {
    big.constraints.push_back(C(absl::StrCat("a", i), Op::kEq, Value::Int(1)));
  }
  EXPECT_EQ(cpu->Add(1, 1, Predicate{{big}}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu->Add(1, 1, One(C("x", Op::kEq, Value::Double(std::nan(""))))).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(cpu->stats().subscriptions, 0u);
  Matched out;
  const Event unsorted{{Attribute{"b", Value::Int(1)}, Attribute{"a", Value::Int(1)}}, {}};
  EXPECT_EQ(cpu->Match({unsorted}, &out).code(), absl::StatusCode::kInvalidArgument);
  const Event duplicate_terms{{}, {"x", "x"}};
  EXPECT_EQ(cpu->Match({duplicate_terms}, &out).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(cpu->Match({}, &out).ok());
  EXPECT_THAT(out, IsEmpty());
}

TEST(CpuMatcher, MaximalFilter) {
  // 255 constraints: the 8-bit counter reaches the filter's size exactly.
  auto cpu = NewCpu();
  Filter filter;
  std::vector<Attribute> attributes;
  for (int i = 0; i < kMaxConstraintsPerFilter; ++i) {
    filter.constraints.push_back(C(absl::StrCat("a", i), Op::kGe, Value::Int(i)));
    attributes.push_back(Attribute{absl::StrCat("a", i), Value::Int(i)});
  }
  ASSERT_TRUE(cpu->Add(1, 1, Predicate{{filter}}).ok());
  Event all = E(attributes);
  EXPECT_THAT(MustMatch(*cpu, {all})[0], ElementsAre(1));
  attributes.pop_back();
  EXPECT_THAT(MustMatch(*cpu, {E(attributes)})[0], IsEmpty());
}

TEST(CpuMatcher, InterleavedAddRemoveMatch) {
  Scenario s = WithTerms(SizedScenario(12, 300, 400, /*names=*/6, /*values=*/10), 30, 0.2, 8);
  s.constraints_min = 1;
  s.constraints_max = 4;
  s.filters_per_subscription = 2;
  const std::vector<GeneratedSubscription> pool = GenerateSubscriptions(s, 11);
  const std::vector<Event> events = GenerateEvents(s, 60, 12);
  auto cpu = NewCpu(2);
  BruteForceMatcher reference;
  std::mt19937_64 rng(13);
  std::vector<SubscriptionId> live;
  SubscriptionId next_id = 1;
  size_t pairs = 0;
  for (int step = 0; step < 12000; ++step) {
    const int r = static_cast<int>(rng() % 100);
    if (r < 55 || live.empty()) {
      const GeneratedSubscription& sub = pool[rng() % pool.size()];
      AddBoth(*cpu, reference, next_id, sub.interface, sub.predicate);
      live.push_back(next_id++);
    } else if (r < 99) {
      const size_t k = rng() % live.size();
      ASSERT_TRUE(cpu->Remove(live[k]).ok());
      ASSERT_TRUE(reference.Remove(live[k]).ok());
      live[k] = live.back();
      live.pop_back();
    } else {
      SCOPED_TRACE(absl::StrCat("step ", step));
      pairs += ExpectSame(*cpu, reference, events);
      const MatcherStats a = cpu->stats(), b = reference.stats();
      EXPECT_EQ(a.subscriptions, b.subscriptions);
      EXPECT_EQ(a.filters, b.filters);
      EXPECT_EQ(a.constraints, b.constraints);
    }
  }
  EXPECT_GT(pairs, 0u);
  // Removing everything purges the index: ids are reused, memory does not grow with churn.
  for (SubscriptionId id : live) {
    ASSERT_TRUE(cpu->Remove(id).ok());
    ASSERT_TRUE(reference.Remove(id).ok());
  }
  EXPECT_THAT(MustMatch(*cpu, events), ::testing::Each(IsEmpty()));
  size_t first_cycle_bytes = 0;
  for (int cycle = 0; cycle < 6; ++cycle) {
    for (size_t i = 0; i < pool.size(); ++i) {
      ASSERT_TRUE(cpu->Add(1000000 + i, 0, pool[i].predicate).ok());
    }
    for (size_t i = 0; i < pool.size(); ++i) ASSERT_TRUE(cpu->Remove(1000000 + i).ok());
    EXPECT_THAT(MustMatch(*cpu, events), ::testing::Each(IsEmpty()));
    if (cycle == 0) first_cycle_bytes = cpu->stats().host_bytes;
  }
  EXPECT_LT(cpu->stats().host_bytes, first_cycle_bytes * 3 / 2);
}

TEST(CpuMatcher, ThreadsGiveTheSameAnswers) {
  Scenario s = WithTerms(SizedScenario(15, 300, 500, /*names=*/12, /*values=*/20), 100, 0.1, 20);
  s.zipf = 1.0;
  const std::vector<GeneratedSubscription> subs = GenerateSubscriptions(s, 21);
  const std::vector<Event> events = GenerateEvents(s, 400, 22);
  auto one = NewCpu(1);
  auto four = NewCpu(4);
  for (size_t i = 0; i < subs.size(); ++i) {
    ASSERT_TRUE(one->Add(i, subs[i].interface, subs[i].predicate).ok());
    ASSERT_TRUE(four->Add(i, subs[i].interface, subs[i].predicate).ok());
  }
  const Matched a = MustMatch(*one, events);
  const Matched b = MustMatch(*four, events);
  EXPECT_EQ(a, b);
  size_t pairs = 0;
  for (const auto& m : a) pairs += m.size();
  EXPECT_GT(pairs, 0u);
  EXPECT_EQ(MustMatch(*four, absl::MakeSpan(events).subspan(0, 1))[0], a[0]);
}

TEST(CpuMatcher, ConcurrentMatchWithAdds) {
  const Scenario s = SizedScenario(8, 200, 300, /*names=*/6, /*values=*/10);
  const std::vector<GeneratedSubscription> first = GenerateSubscriptions(s, 31);
  const std::vector<GeneratedSubscription> later = GenerateSubscriptions(s, 32);
  const std::vector<Event> events = GenerateEvents(s, 50, 33);
  auto cpu = NewCpu(3);
  BruteForceMatcher before, after;
  for (size_t i = 0; i < first.size(); ++i) {
    ASSERT_TRUE(cpu->Add(i, first[i].interface, first[i].predicate).ok());
    AddBoth(before, after, i, first[i].interface, first[i].predicate);
  }
  for (size_t i = 0; i < later.size(); ++i) {
    ASSERT_TRUE(after.Add(100000 + i, later[i].interface, later[i].predicate).ok());
  }
  const Matched low = MustMatch(before, events);
  const Matched high = MustMatch(after, events);
  std::atomic<bool> stop{false};
  std::atomic<int> inconsistent{0}, rounds{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      while (!stop.load()) {
        Matched got;
        if (!cpu->Match(events, &got).ok()) {
          ++inconsistent;
          continue;
        }
        // Only adds happen: every answer lies between the first and the last.
        for (size_t e = 0; e < events.size(); ++e) {
          if (!std::includes(got[e].begin(), got[e].end(), low[e].begin(), low[e].end()) ||
              !std::includes(high[e].begin(), high[e].end(), got[e].begin(), got[e].end())) {
            ++inconsistent;
          }
        }
        ++rounds;
        (void)cpu->SelectedConstraints(events);
        (void)cpu->stats();
      }
    });
  }
  for (size_t i = 0; i < later.size(); ++i) {
    ASSERT_TRUE(cpu->Add(100000 + i, later[i].interface, later[i].predicate).ok());
  }
  while (rounds.load() < 8) std::this_thread::yield();
  stop = true;
  for (std::thread& t : readers) t.join();
  EXPECT_EQ(inconsistent.load(), 0);
  EXPECT_EQ(MustMatch(*cpu, events), high);
}

TEST(CpuMatcher, ManyInterfacesAndARepeatedFilter) {
  auto cpu = NewCpu(2);
  BruteForceMatcher reference;
  const Filter shared{{C("price", Op::kLt, Value::Int(10)), C("sym", Op::kEq, Value::String("X"))}};
  const Filter other{{C("price", Op::kGt, Value::Double(50.5))}};
  SubscriptionId id = 1;
  for (InterfaceId iface = 0; iface < 150; ++iface) {
    // The same filter in several subscriptions of one interface and across interfaces, twice in
    // one predicate too.
    AddBoth(*cpu, reference, id++, iface, Predicate{{shared}});
    if (iface % 3 == 0) AddBoth(*cpu, reference, id++, iface, Predicate{{shared, shared}});
    if (iface % 5 == 0) AddBoth(*cpu, reference, id++, iface, Predicate{{other, shared}});
  }
  const std::vector<Event> events = {
      E({Attribute{"price", Value::Int(5)}, Attribute{"sym", Value::String("X")}}),
      E({Attribute{"price", Value::Int(60)}, Attribute{"sym", Value::String("X")}}),
      E({Attribute{"price", Value::Int(5)}, Attribute{"sym", Value::String("Y")}}),
  };
  const Matched got = MustMatch(*cpu, events);
  EXPECT_EQ(got[0].size(), 150u);
  EXPECT_EQ(got[1].size(), 30u);
  EXPECT_THAT(got[2], IsEmpty());
  ExpectSame(*cpu, reference, events);
  // Removing one interface's subscriptions leaves the others.
  ASSERT_TRUE(cpu->Remove(4).ok());  // interface 1's only subscription
  ASSERT_TRUE(reference.Remove(4).ok());
  ExpectSame(*cpu, reference, events);
  EXPECT_EQ(MustMatch(*cpu, events)[0].size(), 149u);
}

TEST(CpuMatcher, StatsAndSelectedConstraints) {
  auto cpu = NewCpu();
  EXPECT_EQ(cpu->stats().subscriptions, 0u);
  const size_t empty_bytes = cpu->stats().host_bytes;
  EXPECT_GT(empty_bytes, 0u);
  Predicate p;
  p.filters.push_back(Filter{{C("a", Op::kEq, Value::Int(1)), C("b", Op::kNe, Value::String("x")),
                              C("terms", Op::kContains, Value::String("gas"))}});
  p.filters.push_back(Filter{{C("a", Op::kGt, Value::Double(2.5))}});
  ASSERT_TRUE(cpu->Add(1, 3, p).ok());
  ASSERT_TRUE(cpu->Add(2, 4, One(C("a", Op::kPrefix, Value::String("z")))).ok());
  MatcherStats stats = cpu->stats();
  EXPECT_EQ(stats.subscriptions, 2u);
  EXPECT_EQ(stats.filters, 3u);
  EXPECT_EQ(stats.constraints, 5u);
  EXPECT_GT(stats.host_bytes, empty_bytes);
  EXPECT_EQ(stats.device_bytes, 0u);
  // a holds 3 constraints, b 1, the term gas 1.
  const std::vector<Event> events = {
      E({Attribute{"a", Value::Int(1)}, Attribute{"b", Value::String("y")}}, {"gas", "oil"}),
      E({Attribute{"a", Value::Int(1)}, Attribute{"c", Value::Int(1)}}),
      E({}),
  };
  EXPECT_EQ(cpu->SelectedConstraints(events), 5 + 3);
  ASSERT_TRUE(cpu->Remove(1).ok());
  stats = cpu->stats();
  EXPECT_EQ(stats.subscriptions, 1u);
  EXPECT_EQ(stats.filters, 1u);
  EXPECT_EQ(stats.constraints, 1u);
}

}  // namespace
}  // namespace tandem::match
