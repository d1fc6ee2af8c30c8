// tandem-bench-match: standing queries, CCM on the GPU beside the CPU matcher (Margara & Cugola,
// DEBS 2011, section 5), every answer compared:
//   - the default scenario of the paper's Table 1 (10 interfaces, 22,500-27,500 filters each, 3-5
//     constraints per filter, 100 names, 50/50 numeric and string, events of 3-5 attributes);
//   - its sweeps, one parameter at a time: attributes per event (Figure 6), constraints per filter
//     (Figure 7), filters per interface (Figure 8), interfaces (Figure 9), names (Figure 10), the
//     numeric share (Figure 11), and Zipf name popularity (Table 2);
//   - real text: the TREC 2005 efficiency queries as `terms contains` subscriptions, matched
//     against Wikipedia articles;
//   - bursts: one event per Match call from many threads at once, through the registry, which
//     matches the calls that wait for each other as one batch.
// For each point: the time per event at batch 1 (mean, p50, p99; the paper's measure), events/s in
// batches (CCM; the CPU matcher on one thread and on every core), the time to deploy the
// subscriptions (every Add and the first Match, which loads the tables) and the memory the engines
// hold, and whether a Subscribe made just before an event is matched for it. CCM's answers are
// compared with the CPU matcher's for every event, and the CPU matcher's with the brute force on a
// sample. Prints a table and writes JSON with the machine, the commit and the GPU.
//
//   tandem-bench-match --sweeps default,attributes,...,text,callers
//       --queries trec05-efficiency.txt --wikipedia ../shared/data/text/wikipedia --json out.json
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "bench/bench_main.h"
#include "index/analyzer.h"
#include "index_builder/document_reader.h"
#include "match/brute_force_matcher.h"
#include "match/cpu_matcher.h"
#include "match/model.h"
#include "match/scenario.h"
#include "match/subscription_registry.h"
#include "nlohmann/json.hpp"
#include "workload/query_set.h"
#if TANDEM_HAVE_CCM
#include "gpu/device/device.h"
#include "match/ccm_matcher.h"
#endif

ABSL_FLAG(std::string, sweeps, "default",
          "comma-separated: default, attributes, constraints, filters, interfaces, names, numeric, "
          "zipf, text, callers");
ABSL_FLAG(std::string, callers, "1,4,16,64",
          "callers sweep: threads each calling SubscriptionRegistry::Match with one event");
ABSL_FLAG(int, events, 1000, "events per point");
ABSL_FLAG(int, batch, 1024, "events per Match call for the throughput runs");
ABSL_FLAG(int, throughput_events, 65536, "events matched for each throughput figure");
ABSL_FLAG(int, cpu_threads, 0, "threads of the multi-core CPU matcher (0: every core)");
ABSL_FLAG(int, check_events, 40, "events per point checked against the brute force (0: none)");
ABSL_FLAG(double, scale, 1.0, "multiplies the filters per interface of every point (quick runs)");
ABSL_FLAG(std::string, queries, "", "TREC 2005 efficiency queries, for the text sweep");
ABSL_FLAG(int, text_queries, 50000, "queries of the text sweep (subscriptions)");
ABSL_FLAG(int, text_interfaces, 100, "interfaces the text sweep's queries are dealt to");
ABSL_FLAG(std::string, wikipedia, "", "WikiExtractor directory, the text sweep's events");
ABSL_FLAG(int, text_events, 2000, "articles of the text sweep");

namespace tandem {
namespace {

using match::Event;
using match::InterfaceId;
using match::Matcher;
using Clock = std::chrono::steady_clock;
using json = nlohmann::json;

double Since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

void Die(const absl::Status& s, const std::string& what) {
  if (s.ok()) return;
  std::fprintf(stderr, "tandem-bench-match: %s: %s\n", what.c_str(), s.ToString().c_str());
  std::exit(1);
}

struct Workload {
  std::string sweep;
  std::string label;  // the swept value
  std::vector<match::GeneratedSubscription> subscriptions;
  std::vector<Event> events;
};

struct EngineRun {
  std::string engine;
  double deploy_seconds = 0;
  match::MatcherStats stats;
  base::LatencySummary latency;  // per event at batch 1
  double events_per_second = 0;  // in batches
  bool visible = false;          // a Subscribe made just before an event matched it
};

// Deploys, measures batch-1 latency and batched throughput, and returns each event's answer.
EngineRun Measure(const std::string& engine, Matcher& matcher, const Workload& w,
                  std::vector<std::vector<InterfaceId>>* answers, bool latency) {
  EngineRun run;
  run.engine = engine;
  const auto deploy = Clock::now();
  match::SubscriptionId id = 1;
  for (const auto& s : w.subscriptions) Die(matcher.Add(id++, s.interface, s.predicate), "Add");
  // Deployment ends with the first Match, which uploads CCM's tables and sorts the CPU matcher's
  // indexes: what a node pays once after loading its subscriptions, kept out of the per-event
  // times.
  std::vector<std::vector<InterfaceId>> one;
  Die(matcher.Match(absl::MakeConstSpan(&w.events[0], 1), &one), "Match");
  run.deploy_seconds = Since(deploy);
  run.stats = matcher.stats();

  answers->assign(w.events.size(), {});
  if (latency) {
    std::vector<double> seconds;
    for (size_t e = 0; e < w.events.size(); ++e) {
      const auto t = Clock::now();
      Die(matcher.Match(absl::MakeConstSpan(&w.events[e], 1), &one), "Match");
      seconds.push_back(Since(t));
      (*answers)[e] = one[0];
    }
    run.latency = base::Summarize(seconds);
  }
  const int batch = std::max(1, absl::GetFlag(FLAGS_batch));
  const int total = std::max(batch, absl::GetFlag(FLAGS_throughput_events));
  std::vector<Event> batch_events;
  for (int i = 0; i < batch; ++i) batch_events.push_back(w.events[i % w.events.size()]);
  std::vector<std::vector<InterfaceId>> out;
  Die(matcher.Match(batch_events, &out), "Match");  // warm
  if (!latency) {
    for (size_t e = 0; e < w.events.size(); ++e) (*answers)[e] = out[e % batch];
    if (static_cast<int>(w.events.size()) > batch) {
      std::vector<std::vector<InterfaceId>> all;
      Die(matcher.Match(w.events, &all), "Match");
      *answers = std::move(all);
    }
  }
  const auto t = Clock::now();
  int matched = 0;
  // Until `total` events or one second, whichever comes first (the single-thread CPU matcher at
  // the larger points would take minutes).
  while (matched < total && (matched == 0 || Since(t) < 1.0)) {
    Die(matcher.Match(batch_events, &out), "Match");
    matched += batch;
  }
  run.events_per_second = matched / Since(t);

  // A new interface subscribes to exactly the first event's attributes and terms; the next Match
  // must deliver it, and the one after its removal must not.
  match::Predicate exact;
  match::Filter filter;
  for (const auto& a : w.events[0].attributes) {
    filter.constraints.push_back(match::Constraint{a.name, match::Op::kEq, a.value});
  }
  for (size_t t2 = 0; t2 < std::min<size_t>(3, w.events[0].terms.size()); ++t2) {
    filter.constraints.push_back(match::Constraint{std::string(match::kTermsName),
                                                   match::Op::kContains,
                                                   match::Value::String(w.events[0].terms[t2])});
  }
  exact.filters.push_back(std::move(filter));
  InterfaceId probe = 0;
  for (const auto& s : w.subscriptions) probe = std::max(probe, s.interface + 1);
  Die(matcher.Add(id, probe, exact), "Add");
  Die(matcher.Match(absl::MakeConstSpan(&w.events[0], 1), &one), "Match");
  const bool seen = std::binary_search(one[0].begin(), one[0].end(), probe);
  Die(matcher.Remove(id), "Remove");
  Die(matcher.Match(absl::MakeConstSpan(&w.events[0], 1), &one), "Match");
  run.visible = seen && !std::binary_search(one[0].begin(), one[0].end(), probe);
  return run;
}

std::vector<Workload> Sweep(const std::string& sweep) {
  const double scale = absl::GetFlag(FLAGS_scale);
  const int events = absl::GetFlag(FLAGS_events);
  auto scaled = [&](match::Scenario s) {
    s.filters_min = std::max(1, static_cast<int>(s.filters_min * scale));
    s.filters_max = std::max(s.filters_min, static_cast<int>(s.filters_max * scale));
    return s;
  };
  std::vector<std::pair<std::string, match::Scenario>> points;
  const match::Scenario base;
  if (sweep == "default") points.push_back({"table1", base});
  auto each = [&](std::vector<int> values, auto set) {
    for (int v : values) {
      match::Scenario s = base;
      set(s, v);
      points.push_back({std::to_string(v), s});
    }
  };
  if (sweep == "attributes") {
    each({1, 3, 5, 7, 9},
         [](match::Scenario& s, int v) { s.attributes_min = s.attributes_max = v; });
  } else if (sweep == "constraints") {
    each({1, 3, 5, 7, 9},
         [](match::Scenario& s, int v) { s.constraints_min = s.constraints_max = v; });
  } else if (sweep == "filters") {
    each({1000, 5000, 25000, 100000, 250000}, [](match::Scenario& s, int v) {
      s.filters_min = v * 9 / 10;
      s.filters_max = v * 11 / 10;
    });
  } else if (sweep == "interfaces") {
    each({10, 25, 50, 100}, [](match::Scenario& s, int v) { s.interfaces = v; });
  } else if (sweep == "names") {
    each({10, 30, 100, 300, 1000}, [](match::Scenario& s, int v) { s.names = v; });
  } else if (sweep == "numeric") {
    each({0, 25, 50, 75, 100}, [](match::Scenario& s, int v) { s.numeric_share = v / 100.0; });
  } else if (sweep == "zipf") {
    match::Scenario s = base;
    s.zipf = 1.0;
    points.push_back({"zipf1", s});
  }
  std::vector<Workload> out;
  uint64_t seed = 1;
  for (auto& [label, scenario] : points) {
    const match::Scenario s = scaled(scenario);
    Workload w{sweep, label, match::GenerateSubscriptions(s, seed), {}};
    w.events = match::GenerateEvents(s, events, seed + 1000);
    ++seed;
    out.push_back(std::move(w));
  }
  return out;
}

// The TREC 2005 queries as subscriptions (one filter of `terms contains` per query term), dealt
// round-robin to interfaces; Wikipedia articles as events.
Workload TextWorkload() {
  Workload w{"text", "trec05_x_wikipedia", {}, {}};
  auto analyzer = index::Analyzer::Create(index::AnalyzerConfig{});
  Die(analyzer.status(), "analyzer");
  auto queries = workload::LoadQuerySet(absl::GetFlag(FLAGS_queries), **analyzer);
  Die(queries.status(), "queries");
  const int interfaces = std::max(1, absl::GetFlag(FLAGS_text_interfaces));
  const match::Limits limits;
  int n = 0;
  for (const auto& q : *queries) {
    if (n >= absl::GetFlag(FLAGS_text_queries)) break;
    const std::vector<std::string> terms = workload::DistinctTerms(q.terms);
    if (terms.empty() || static_cast<int>(terms.size()) > limits.max_constraints_per_filter) {
      continue;
    }
    match::Filter f;
    for (const std::string& t : terms) {
      f.constraints.push_back(match::Constraint{std::string(match::kTermsName),
                                                match::Op::kContains, match::Value::String(t)});
    }
    match::GeneratedSubscription s;
    s.interface = static_cast<InterfaceId>(n % interfaces);
    s.predicate.filters.push_back(std::move(f));
    w.subscriptions.push_back(std::move(s));
    ++n;
  }
  index_builder::ReaderOptions options;
  auto reader =
      index_builder::OpenDocumentReader("wikiextractor", absl::GetFlag(FLAGS_wikipedia), options);
  Die(reader.status(), "wikipedia");
  index_builder::Document doc;
  while (static_cast<int>(w.events.size()) < absl::GetFlag(FLAGS_text_events)) {
    auto more = (*reader)->Next(&doc);
    Die(more.status(), "wikipedia");
    if (!*more) break;
    auto event = match::MakeEvent({}, doc.text, analyzer->get(), limits);
    Die(event.status(), "article " + doc.external_id);
    w.events.push_back(*std::move(event));
  }
  return w;
}

// Bursts: the default scenario's events, one per Match call, from many threads at once through
// SubscriptionRegistry, which matches the calls that wait for each other as one batch. Events/s
// per engine (forced) by the number of callers; every answer checked against the CPU matcher's.
json CallersSweep(int cores, bool have_gpu, bool* all_ok) {
  json rows = json::array();
  const match::Scenario sc = [] {
    match::Scenario s;
    s.filters_min = std::max(1, static_cast<int>(s.filters_min * absl::GetFlag(FLAGS_scale)));
    s.filters_max =
        std::max(s.filters_min, static_cast<int>(s.filters_max * absl::GetFlag(FLAGS_scale)));
    return s;
  }();
  const auto subscriptions = match::GenerateSubscriptions(sc, 1);
  const std::vector<Event> events = match::GenerateEvents(sc, absl::GetFlag(FLAGS_events), 1001);
  std::vector<std::vector<InterfaceId>> expected;
  {
    auto cpu = match::CpuMatcher::Create({.threads = cores});
    Die(cpu.status(), "CpuMatcher");
    match::SubscriptionId id = 1;
    for (const auto& s : subscriptions) Die((*cpu)->Add(id++, s.interface, s.predicate), "Add");
    Die((*cpu)->Match(events, &expected), "Match");
  }
  std::vector<std::string> engines = {"cpu"};
  if (have_gpu) engines.push_back("gpu");
  for (const std::string& engine : engines) {
    auto cpu = match::CpuMatcher::Create({.threads = cores});
    Die(cpu.status(), "CpuMatcher");
    std::unique_ptr<Matcher> gpu;
#if TANDEM_HAVE_CCM
    if (engine == "gpu") {
      auto ccm = match::CcmMatcher::Create(match::CcmOptions{});
      Die(ccm.status(), "CcmMatcher");
      gpu = *std::move(ccm);
    }
#endif
    match::RegistryOptions options;
    options.engine = engine == "gpu" ? match::MatchEngine::kGpu : match::MatchEngine::kCpu;
    auto registry = match::SubscriptionRegistry::Open(options, *std::move(cpu), std::move(gpu));
    Die(registry.status(), "registry");
    // Interface i is named "i"; the answers come back as names.
    for (const auto& s : subscriptions) {
      Die((*registry)->Subscribe(std::to_string(s.interface), s.predicate).status(), "Subscribe");
    }
    Die((*registry)->Match(events).status(), "Match");  // loads the tables
    for (const std::string& c :
         std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_callers), ','))) {
      int callers = 1;
      if (!absl::SimpleAtoi(c, &callers) || callers < 1) {
        Die(absl::InvalidArgumentError("bad --callers " + c), "--callers");
      }
      std::atomic<int64_t> matched{0};
      std::atomic<int> wrong{0};
      std::atomic<bool> stop{false};
      std::vector<std::thread> threads;
      const auto start = Clock::now();
      for (int t = 0; t < callers; ++t) {
        threads.emplace_back([&, t] {
          for (size_t e = t; !stop.load(std::memory_order_relaxed); e += callers) {
            const size_t i = e % events.size();
            auto r = (*registry)->Match(absl::MakeConstSpan(&events[i], 1));
            if (!r.ok() || r->interfaces[0].size() != expected[i].size()) {
              ++wrong;
            } else {
              for (size_t k = 0; k < expected[i].size(); ++k) {
                if (std::find(r->interfaces[0].begin(), r->interfaces[0].end(),
                              std::to_string(expected[i][k])) == r->interfaces[0].end()) {
                  ++wrong;
                }
              }
            }
            matched.fetch_add(1, std::memory_order_relaxed);
          }
        });
      }
      std::this_thread::sleep_for(std::chrono::seconds(1));
      stop = true;
      for (auto& t : threads) t.join();
      const double seconds = Since(start);
      const double rate = matched.load() / seconds;
      std::printf("callers     %-18s %10s %9s | %9s %9s %9s %7s | %12.0f %12s %12s %7s | %s\n",
                  (engine + " x" + c).c_str(), "", "", "", "", "", "", rate, "", "", "",
                  wrong.load() == 0 ? "same" : "DIFFER");
      std::fflush(stdout);
      *all_ok &= wrong.load() == 0;
      rows.push_back(
          {{"engine", engine},
           {"callers", callers},
           {"events_per_second", rate},
           {"mean_us_per_call", 1e6 * seconds * callers / std::max<int64_t>(1, matched.load())},
           {"answers_equal", wrong.load() == 0}});
    }
  }
  return rows;
}

int Run() {
  json out;
  std::string gpu_name = "none";
#if TANDEM_HAVE_CCM
  if (auto info = gpu::ProbeDevice(0); info.ok()) gpu_name = info->name;
#endif
  out["machine"] = base::MachineInfo(gpu_name);
  out["flags"] = {{"events", absl::GetFlag(FLAGS_events)},
                  {"batch", absl::GetFlag(FLAGS_batch)},
                  {"throughput_events", absl::GetFlag(FLAGS_throughput_events)},
                  {"scale", absl::GetFlag(FLAGS_scale)}};
  const int cores = absl::GetFlag(FLAGS_cpu_threads) > 0
                        ? absl::GetFlag(FLAGS_cpu_threads)
                        : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::printf("%-11s %-18s %10s %9s | %9s %9s %9s %7s | %12s %12s %12s %7s | %s\n", "sweep",
              "point", "constraints", "match%", "ccm us", "cpu us", "ccm p99", "speedup",
              "ccm ev/s", "cpu1 ev/s", "cpuN ev/s", "x cpuN", "check");
  bool all_ok = true;
  for (const std::string& sweep :
       std::vector<std::string>(absl::StrSplit(absl::GetFlag(FLAGS_sweeps), ','))) {
    std::vector<Workload> workloads;
    if (sweep == "callers") {
      out["callers"] = CallersSweep(cores, gpu_name != "none", &all_ok);
      continue;
    }
    if (sweep == "text") {
      workloads.push_back(TextWorkload());
    } else {
      workloads = Sweep(sweep);
      if (workloads.empty()) Die(absl::InvalidArgumentError("unknown sweep " + sweep), "--sweeps");
    }
    for (const Workload& w : workloads) {
      json point = {{"sweep", w.sweep},
                    {"point", w.label},
                    {"events", w.events.size()},
                    {"subscriptions", w.subscriptions.size()}};
      std::vector<std::vector<InterfaceId>> cpu_answers, ccm_answers, cpu_mt_answers;
      EngineRun cpu_run, cpu_mt_run, ccm_run;
      {
        auto cpu = match::CpuMatcher::Create({.threads = 1});
        Die(cpu.status(), "CpuMatcher");
        cpu_run = Measure("cpu_1_thread", **cpu, w, &cpu_answers, /*latency=*/true);
        // The CPU matcher against the brute force on a sample.
        const int check = std::min<int>(absl::GetFlag(FLAGS_check_events), w.events.size());
        if (check > 0) {
          match::BruteForceMatcher brute;
          match::SubscriptionId id = 1;
          for (const auto& s : w.subscriptions)
            Die(brute.Add(id++, s.interface, s.predicate), "Add");
          std::vector<std::vector<InterfaceId>> expected;
          Die(brute.Match(absl::MakeConstSpan(w.events.data(), check), &expected), "Match");
          const bool same = std::equal(expected.begin(), expected.end(), cpu_answers.begin());
          point["cpu_equals_brute_force"] = same;
          all_ok &= same;
        }
      }
      {
        auto cpu = match::CpuMatcher::Create({.threads = cores});
        Die(cpu.status(), "CpuMatcher");
        cpu_mt_run = Measure("cpu_all_cores", **cpu, w, &cpu_mt_answers, /*latency=*/false);
        const bool same = cpu_mt_answers == cpu_answers;
        point["cpu_threads_equal"] = same;
        all_ok &= same;
      }
      bool have_ccm = false;
#if TANDEM_HAVE_CCM
      if (gpu_name != "none") {
        auto ccm = match::CcmMatcher::Create(match::CcmOptions{});
        Die(ccm.status(), "CcmMatcher");
        ccm_run = Measure("ccm", **ccm, w, &ccm_answers, /*latency=*/true);
        have_ccm = true;
        const bool same = ccm_answers == cpu_answers;
        point["ccm_equals_cpu"] = same;
        all_ok &= same;
      }
#endif
      size_t matched = 0, interfaces = 0;
      std::map<InterfaceId, bool> seen;
      for (const auto& s : w.subscriptions) seen[s.interface] = true;
      interfaces = seen.size();
      for (const auto& a : cpu_answers) matched += a.size();
      const double match_share =
          100.0 * matched / std::max<size_t>(1, w.events.size() * interfaces);
      point["matched_interfaces_percent"] = match_share;
      point["constraints"] = cpu_run.stats.constraints;
      point["filters"] = cpu_run.stats.filters;
      for (const EngineRun* r : {&cpu_run, &cpu_mt_run, &ccm_run}) {
        if (r->engine.empty()) continue;
        point[r->engine] = {{"deploy_seconds", r->deploy_seconds},
                            {"host_bytes", r->stats.host_bytes},
                            {"device_bytes", r->stats.device_bytes},
                            {"events_per_second", r->events_per_second},
                            {"subscribe_visible_to_next_event", r->visible}};
        if (r != &cpu_mt_run) {
          point[r->engine]["latency_us"] = {{"mean", r->latency.mean * 1e6},
                                            {"p50", r->latency.p50 * 1e6},
                                            {"p99", r->latency.p99 * 1e6}};
        }
        all_ok &= r->visible;
      }
      point["cpu_all_cores"]["threads"] = cores;
      const bool ok = point.value("cpu_equals_brute_force", true) &&
                      point.value("cpu_threads_equal", true) && point.value("ccm_equals_cpu", true);
      std::printf(
          "%-11s %-18s %10zu %8.2f%% | %9.1f %9.1f %9.1f %6.1fx | %12.0f %12.0f %12.0f %6.1fx | "
          "%s\n",
          w.sweep.c_str(), w.label.c_str(), cpu_run.stats.constraints, match_share,
          have_ccm ? ccm_run.latency.mean * 1e6 : 0.0, cpu_run.latency.mean * 1e6,
          have_ccm ? ccm_run.latency.p99 * 1e6 : 0.0,
          have_ccm ? cpu_run.latency.mean / ccm_run.latency.mean : 0.0,
          have_ccm ? ccm_run.events_per_second : 0.0, cpu_run.events_per_second,
          cpu_mt_run.events_per_second,
          have_ccm ? ccm_run.events_per_second / cpu_mt_run.events_per_second : 0.0,
          ok ? "same" : "DIFFER");
      std::fflush(stdout);
      out["points"].push_back(point);
      base::WriteJson(absl::GetFlag(FLAGS_json), out,
                      1);  // after every point: a cut-off run keeps them
    }
  }
  out["all_answers_equal"] = all_ok;
  base::WriteJson(absl::GetFlag(FLAGS_json), out, 1);
  if (!all_ok) std::fprintf(stderr, "tandem-bench-match: answers differ or a Subscribe was late\n");
  return all_ok ? 0 : 1;
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(
    tandem::Run, "tandem-bench-match", "[--sweeps default,attributes,...] [--json FILE]",
    "standing queries, CCM on the GPU beside the CPU matcher (Margara & Cugola's scenarios), "
    "every answer compared.");
