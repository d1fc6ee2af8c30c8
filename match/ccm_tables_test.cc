// The CCM matcher's host side without a device: the tables (ccm_tables.h) under random adds and
// removes, copied page by page into a simulated device copy the way the matcher copies them, and
// launches (ccm_launch.h) evaluated from that copy by the kernel's own per-constraint step
// (EvaluateConstraint), block by block and thread by thread, against BruteForceMatcher.
#include "match/ccm_tables.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "match/brute_force_matcher.h"
#include "match/ccm_format.h"
#include "match/ccm_launch.h"
#include "match/scenario.h"

namespace tandem::match::ccm {
namespace {

using Matches = std::vector<std::vector<InterfaceId>>;

// The device copy of the tables, as the matcher keeps it: reallocated (with garbage) when the
// host's capacity grows, then refreshed from the dirty pages only.
struct SimulatedDevice {
  std::vector<DeviceConstraint> constraints;
  std::vector<char> strings;
  std::vector<uint32_t> filters;

  template <typename T>
  static void Refresh(absl::Span<const T> host, size_t used, DirtyPages& dirty,
                      std::vector<T>* device) {
    if (device->size() < host.size()) {
      device->resize(host.size());
      std::memset(static_cast<void*>(device->data()), 0xab, device->size() * sizeof(T));
      dirty.MarkAll();
    }
    ASSERT_TRUE(dirty
                    .Drain(used,
                           [&](size_t begin, size_t end) {
                             EXPECT_LE(end, used);
                             std::copy(host.begin() + begin, host.begin() + end,
                                       device->begin() + begin);
                             return absl::OkStatus();
                           })
                    .ok());
  }

  void Refresh(CcmTables& tables) {
    Refresh(tables.constraints(), tables.constraints_used(), tables.dirty_constraints(),
            &constraints);
    Refresh(tables.strings(), tables.strings_used(), tables.dirty_strings(), &strings);
    Refresh(tables.filters(), tables.filters_used(), tables.dirty_filters(), &filters);
  }
};

// One launch run as the kernel runs it, from the staging bytes and the simulated device; every
// element of every input's row must be evaluated exactly once.
void RunLaunch(const CcmTables& tables, const SimulatedDevice& device, const LaunchBuilder& builder,
               size_t events, Matches::iterator out) {
  std::vector<char> staging(builder.staging_bytes());
  builder.WriteStaging(staging.data());
  const uint32_t counter_stride = tables.filter_capacity() / 4;
  const uint32_t interface_stride = tables.interface_capacity() / 32;
  std::vector<uint32_t> counters(events * counter_stride, 0);
  std::vector<uint32_t> interfaces(events * interface_stride, 0);
  LaunchParams p{};
  p.constraints = device.constraints.data();
  p.strings = device.strings.data();
  p.filters = device.filters.data();
  p.inputs = reinterpret_cast<const DeviceInput*>(staging.data());
  p.chunk_input = reinterpret_cast<const uint32_t*>(staging.data() + builder.chunks_offset());
  p.input_bytes = staging.data() + builder.bytes_offset();
  p.num_chunks = static_cast<uint32_t>(builder.num_chunks());
  p.chunk_items = builder.chunk_items();
  p.counter_stride = counter_stride;
  p.interface_stride = interface_stride;
  p.counters = counters.data();
  p.interfaces = interfaces.data();
  ASSERT_EQ(p.chunk_items % kThreads, 0u);

  std::vector<std::vector<int>> visits(builder.num_inputs());
  for (size_t i = 0; i < builder.num_inputs(); ++i) visits[i].assign(p.inputs[i].row_size, 0);
  for (uint32_t block = 0; block < p.num_chunks; ++block) {
    const uint32_t i = p.chunk_input[block];
    // A small launch's blocks find their input by searching the inputs (InlineInputs).
    ASSERT_EQ(FindInput(p.inputs, static_cast<uint32_t>(builder.num_inputs()), block), i);
    const DeviceInput& input = p.inputs[i];
    const ValueRef attribute = MakeValueRef(input.value, input.meta, p.input_bytes);
    const uint64_t first = uint64_t{block - input.first_chunk} * p.chunk_items;
    const uint64_t end = std::min<uint64_t>(first + p.chunk_items, input.row_size);
    for (uint32_t thread = 0; thread < kThreads; ++thread) {
      for (uint64_t k = first + thread; k < end; k += kThreads) {
        ++visits[i][k];
        EvaluateConstraint(p, input, attribute, static_cast<uint32_t>(k));
      }
    }
  }
  for (size_t i = 0; i < visits.size(); ++i) {
    for (size_t k = 0; k < visits[i].size(); ++k) {
      ASSERT_EQ(visits[i][k], 1) << "input " << i << " element " << k;
    }
  }
  for (size_t e = 0; e < events; ++e) {
    for (uint32_t id = 0; id < interface_stride * 32; ++id) {
      if (interfaces[e * interface_stride + id / 32] >> (id % 32) & 1) out[e].push_back(id);
    }
  }
}

// Every event through launches of at most `max_events` events.
Matches MatchOnHost(CcmTables& tables, SimulatedDevice& device, const std::vector<Event>& events,
                    size_t max_events, uint64_t resident_threads = uint64_t{1} << 18) {
  device.Refresh(tables);
  Matches matched(events.size());
  LaunchBuilder builder;
  LaunchBuilder::Limits limits;
  limits.max_events = max_events;
  limits.resident_threads = resident_threads;
  for (size_t done = 0; done < events.size();) {
    const size_t taken = builder.Build(tables, absl::MakeConstSpan(events).subspan(done), limits);
    EXPECT_GE(taken, 1u);
    EXPECT_LE(taken, max_events);
    RunLaunch(tables, device, builder, taken, matched.begin() + done);
    done += taken;
  }
  return matched;
}

Matches MatchBrute(BruteForceMatcher& brute, const std::vector<Event>& events) {
  Matches matched;
  EXPECT_TRUE(brute.Match(events, &matched).ok());
  return matched;
}

// The tables and the reference, kept in step.
class Both {
 public:
  void Add(SubscriptionId id, const GeneratedSubscription& sub) {
    for (const Filter& f : sub.predicate.filters) ASSERT_TRUE(CcmTables::CheckFilter(f).ok());
    std::vector<uint32_t>& filters = ids_[id];
    for (const Filter& f : sub.predicate.filters) {
      filters.push_back(tables_.AddFilter(sub.interface, f));
    }
    ASSERT_TRUE(brute_.Add(id, sub.interface, sub.predicate).ok());
  }
  void Remove(SubscriptionId id) {
    for (uint32_t f : ids_.at(id)) tables_.RemoveFilter(f);
    ids_.erase(id);
    ASSERT_TRUE(brute_.Remove(id).ok());
  }
  void Expect(const std::vector<Event>& events, size_t max_events, const std::string& what,
              uint64_t resident_threads = uint64_t{1} << 18) {
    ASSERT_TRUE(tables_.CheckInvariants().ok()) << what << ": " << tables_.CheckInvariants();
    const Matches want = MatchBrute(brute_, events);
    const Matches got = MatchOnHost(tables_, device_, events, max_events, resident_threads);
    ASSERT_EQ(got.size(), want.size());
    for (size_t e = 0; e < want.size(); ++e) {
      ASSERT_EQ(got[e], want[e]) << what << ", event " << e << " of " << events.size();
    }
  }
  bool AnyMatch(const std::vector<Event>& events) {
    for (const auto& m : MatchBrute(brute_, events)) {
      if (!m.empty()) return true;
    }
    return false;
  }
  CcmTables& tables() { return tables_; }
  const std::map<SubscriptionId, std::vector<uint32_t>>& ids() const { return ids_; }

 private:
  CcmTables tables_{/*page_bytes=*/64};  // 4 constraints a page: a missed change shows
  SimulatedDevice device_;
  BruteForceMatcher brute_;
  std::map<SubscriptionId, std::vector<uint32_t>> ids_;
};

Scenario Small() { return SizedScenario(5, 100, 200, /*names=*/20, /*values=*/10); }

TEST(CcmTablesTest, ScenariosMatchBruteForceInEveryBatchSize) {
  Scenario zipf = Small();
  zipf.zipf = 1.2;
  Scenario few_names = Small();
  few_names.names = 3;
  few_names.constraints_min = 1;
  few_names.constraints_max = 3;
  Scenario predicates = Small();
  predicates.filters_per_subscription = 4;
  const std::vector<std::pair<std::string, Scenario>> scenarios = {
      {"small", Small()},
      {"zipf", zipf},
      {"terms", WithTerms(Small(), 100, 0.4, 15)},
      {"few names", few_names},
      {"300 interfaces", SizedScenario(300, 3, 8, 20, 10)},
      {"4 filters a predicate", predicates}};
  for (const auto& [name, scenario] : scenarios) {
    Both both;
    const std::vector<GeneratedSubscription> subs = GenerateSubscriptions(scenario, 7);
    for (size_t i = 0; i < subs.size(); ++i) both.Add(i, subs[i]);
    const std::vector<Event> events = GenerateEvents(scenario, 300, 8);
    ASSERT_TRUE(both.AnyMatch(events)) << name << ": a scenario that matches nothing tests little";
    for (size_t batch : {1, 7, 256, 1000}) {
      both.Expect(events, batch, absl::StrCat(name, ", batch ", batch));
    }
    // A small device: chunks of several constraints a thread.
    both.Expect(events, 64, absl::StrCat(name, ", long chunks"), /*resident_threads=*/32);
  }
}

TEST(CcmTablesTest, InterleavedAddsAndRemovesKeepTheTablesAndTheDeviceCopyExact) {
  Scenario scenario = Small();
  scenario.vocabulary = 50;
  scenario.term_share = 0.2;
  scenario.event_terms = 10;
  scenario.filters_per_subscription = 2;
  const std::vector<GeneratedSubscription> subs = GenerateSubscriptions(scenario, 11);
  const std::vector<Event> events = GenerateEvents(scenario, 100, 12);
  std::mt19937_64 rng(13);
  Both both;
  std::vector<SubscriptionId> live;
  SubscriptionId next = 0;
  for (int round = 0; round < 40; ++round) {
    const int adds = std::uniform_int_distribution<int>(0, 60)(rng);
    for (int a = 0; a < adds; ++a) {
      // Each subscription its own interface: a filter missed or matched wrongly shows.
      GeneratedSubscription sub = subs[rng() % subs.size()];
      sub.interface = static_cast<InterfaceId>(next);
      both.Add(next, sub);
      live.push_back(next++);
    }
    const int removes = std::uniform_int_distribution<int>(0, 50)(rng);
    for (int r = 0; r < removes && !live.empty(); ++r) {
      const size_t i = rng() % live.size();
      both.Remove(live[i]);
      live[i] = live.back();
      live.pop_back();
    }
    both.Expect(events, 1 + rng() % 64, absl::StrCat("round ", round));
  }
  // Everything removed: nothing matches, and every row and filter id is free.
  for (SubscriptionId id : live) both.Remove(id);
  both.Expect(events, 64, "all removed");
  EXPECT_EQ(both.tables().live_filters(), 0u);
  EXPECT_EQ(both.tables().live_constraints(), 0u);
}

TEST(CcmTablesTest, RowsOutgrowTheirRangesAndThePoolIsPacked) {
  // One name's row grows from 4 to thousands of constraints, one at a time, matched in between;
  // then most go and others come, so moved rows leave holes and the pool is packed.
  Both both;
  const std::vector<Event> events = {
      Event{{Attribute{"hot", Value::Int(5)}, Attribute{"x", Value::String("abcdef")}}, {}},
      Event{{Attribute{"hot", Value::Int(500)}}, {"t1"}}};
  SubscriptionId id = 0;
  for (int i = 0; i < 3000; ++i, ++id) {
    GeneratedSubscription sub;
    sub.interface = static_cast<InterfaceId>(i);  // its own: a filter missed shows
    Filter f;
    f.constraints.push_back(Constraint{"hot", Op::kLt, Value::Int(i)});
    if (i % 3 == 0) f.constraints.push_back(Constraint{"x", Op::kPrefix, Value::String("abc")});
    if (i % 7 == 0)
      f.constraints.push_back(Constraint{"terms", Op::kContains, Value::String("t1")});
    sub.predicate.filters.push_back(f);
    both.Add(id, sub);
    if (i % 97 == 0) both.Expect(events, 2, absl::StrCat("growing, ", i));
  }
  both.Expect(events, 2, "grown");
  for (SubscriptionId r = 0; r < 3000; ++r) {
    if (r % 10 != 0) both.Remove(r);
  }
  both.Expect(events, 1, "mostly removed");
  for (int i = 0; i < 4000; ++i, ++id) {
    GeneratedSubscription sub;
    sub.interface = static_cast<InterfaceId>(i % 3000);
    Filter f;
    f.constraints.push_back(Constraint{absl::StrCat("n", i % 40), Op::kNe, Value::Int(i)});
    f.constraints.push_back(Constraint{"hot", Op::kGe, Value::Int(i % 600)});
    sub.predicate.filters.push_back(f);
    both.Add(id, sub);
  }
  std::vector<Event> more = events;
  more.push_back(Event{{Attribute{"hot", Value::Int(300)}, Attribute{"n3", Value::Int(1)}}, {}});
  both.Expect(more, 3, "regrown");
}

TEST(CcmTablesTest, StringsAreInternedAndPackedWhenDeadBytesDominate) {
  Both both;
  std::vector<Event> events;
  for (int i = 0; i < 8; ++i) {
    events.push_back(Event{{Attribute{"s", Value::String(absl::StrCat("value", i * 37))}}, {}});
  }
  SubscriptionId id = 0;
  size_t unique_bytes = 0;
  for (int round = 0; round < 30; ++round) {
    std::vector<SubscriptionId> added;
    for (int i = 0; i < 200; ++i, ++id) {
      unique_bytes += absl::StrCat("value", round * 200 + i).size();
      GeneratedSubscription sub;
      sub.interface = static_cast<InterfaceId>(id % 5000);
      Filter f;
      // Unique strings that come and go, beside shared ones that stay interned.
      f.constraints.push_back(
          Constraint{"s", Op::kEq, Value::String(absl::StrCat("value", round * 200 + i))});
      sub.predicate.filters.push_back(f);
      Filter g;
      g.constraints.push_back(Constraint{"s", Op::kSubstring, Value::String("lue1")});
      g.constraints.push_back(Constraint{"s", Op::kNe, Value::String("")});
      sub.predicate.filters.push_back(g);
      both.Add(id, sub);
      added.push_back(id);
    }
    both.Expect(events, 8, absl::StrCat("round ", round));
    for (size_t i = 0; i < added.size(); ++i) {
      if (i % 4 != 0) both.Remove(added[i]);
    }
  }
  both.Expect(events, 3, "after churn");
  // Three quarters of the strings died: the pool was packed along the way.
  EXPECT_LT(both.tables().strings_used(), unique_bytes * 3 / 4);
}

TEST(CcmTablesTest, SameNameTwiceInAFilterAndFilterIdsReused) {
  Both both;
  GeneratedSubscription range;
  range.interface = 2;
  range.predicate.filters.push_back(Filter{
      {Constraint{"p", Op::kGt, Value::Int(10)}, Constraint{"p", Op::kLt, Value::Double(20.5)}}});
  both.Add(1, range);
  const std::vector<Event> events = {Event{{Attribute{"p", Value::Int(15)}}, {}},
                                     Event{{Attribute{"p", Value::Double(20.5)}}, {}},
                                     Event{{Attribute{"p", Value::Int(9)}}, {}}};
  both.Expect(events, 3, "range");
  const uint32_t first_id = both.ids().at(1)[0];
  both.Remove(1);
  GeneratedSubscription other;
  other.interface = 1000;  // past the first bitmap's 128 interfaces
  other.predicate.filters.push_back(Filter{{Constraint{"p", Op::kEq, Value::Int(9)}}});
  both.Add(2, other);
  EXPECT_EQ(both.ids().at(2)[0], first_id);  // the freed id, reused at once
  both.Expect(events, 3, "reused id");
  EXPECT_GE(both.tables().interface_capacity(), 1024u);
}

TEST(CcmTablesTest, CheckFilterRejectsWhatTheLayoutCannotHold) {
  EXPECT_EQ(CcmTables::CheckFilter(Filter{}).code(), absl::StatusCode::kInvalidArgument);
  Filter too_many;
  for (int i = 0; i <= kMaxConstraintsPerFilter; ++i) {
    too_many.constraints.push_back(Constraint{"a", Op::kEq, Value::Int(i)});
  }
  EXPECT_EQ(CcmTables::CheckFilter(too_many).code(), absl::StatusCode::kInvalidArgument);
  too_many.constraints.pop_back();
  EXPECT_TRUE(CcmTables::CheckFilter(too_many).ok());
  EXPECT_EQ(CcmTables::CheckFilter(Filter{{Constraint{"a", Op::kEq, Value::Double(std::nan(""))}}})
                .code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(
      CcmTables::CheckFilter(Filter{{Constraint{"a", static_cast<Op>(12), Value::Int(1)}}}).code(),
      absl::StatusCode::kInvalidArgument);
}

TEST(CcmTablesTest, TheWidestFilterCountsToTwoHundredFiftyFiveWithoutCarrying) {
  // 255 constraints on distinct names, all satisfied: the counter reaches 255 in its byte, and
  // the neighbouring filters' counters (same word) are unharmed.
  Both both;
  Event event;
  Filter wide;
  for (int i = 0; i < kMaxConstraintsPerFilter; ++i) {
    wide.constraints.push_back(Constraint{absl::StrCat("n", 1000 + i), Op::kGe, Value::Int(0)});
    event.attributes.push_back(Attribute{absl::StrCat("n", 1000 + i), Value::Int(i)});
  }
  for (int k = 0; k < 4; ++k) {
    GeneratedSubscription sub;
    sub.interface = static_cast<InterfaceId>(k);
    if (k == 1) {
      sub.predicate.filters.push_back(wide);
    } else {
      Filter f = wide;
      f.constraints.back().value = Value::Int(1000);  // one short of complete
      sub.predicate.filters.push_back(f);
    }
    both.Add(k, sub);
  }
  both.Expect({event}, 1, "wide");
}

TEST(CcmTablesTest, DirtyPagesCoalesceRunsAndSurviveAFailedCopy) {
  DirtyPages dirty(10);
  EXPECT_TRUE(dirty.empty());
  dirty.Mark(5, 6);
  dirty.Mark(12, 25);
  dirty.Mark(60, 61);
  std::vector<std::pair<size_t, size_t>> runs;
  auto record = [&](size_t b, size_t e) {
    runs.emplace_back(b, e);
    return absl::OkStatus();
  };
  ASSERT_TRUE(dirty.Drain(65, record).ok());
  EXPECT_EQ(runs, (std::vector<std::pair<size_t, size_t>>{{0, 30}, {60, 65}}));
  EXPECT_TRUE(dirty.empty());
  dirty.Mark(3, 4);
  EXPECT_FALSE(dirty.Drain(100, [](size_t, size_t) { return absl::InternalError("x"); }).ok());
  runs.clear();
  ASSERT_TRUE(dirty.Drain(42, record).ok());  // all of it, after the failure
  EXPECT_EQ(runs, (std::vector<std::pair<size_t, size_t>>{{0, 42}}));
}

TEST(CcmTablesTest, LaunchesSplitByEventsAndInputs) {
  Both both;
  GeneratedSubscription sub;
  sub.predicate.filters.push_back(Filter{{Constraint{"a", Op::kNe, Value::Int(-1)}}});
  both.Add(0, sub);
  std::vector<Event> events(
      10, Event{{Attribute{"a", Value::Int(1)}, Attribute{"z", Value::Int(1)}}, {}});
  LaunchBuilder builder;
  LaunchBuilder::Limits limits;
  limits.max_events = 4;
  EXPECT_EQ(builder.Build(both.tables(), events, limits), 4u);
  EXPECT_EQ(builder.num_inputs(), 4u);  // "z" selects no row
  limits.max_events = 100;
  limits.max_inputs = 3;
  EXPECT_EQ(builder.Build(both.tables(), events, limits), 3u);
  EXPECT_EQ(builder.Build(both.tables(), {}, limits), 0u);
}

}  // namespace
}  // namespace tandem::match::ccm
