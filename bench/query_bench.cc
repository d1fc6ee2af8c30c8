// tandem-bench-query: query latency and throughput of the CPU engine over a query log.
//
// For every mode (AND, OR, AND+OR), k and algorithm (every OR algorithm; AND with and without
// block-max skipping): latency per query on one thread (mean, median, p95, p99),
// throughput on one thread and on all threads, postings decoded per query. Before timing, a sample
// of queries is checked against the brute-force reference scorer in the same run. Prints a table
// and writes JSON with the machine, the commit and every figure.
//
//   tandem-bench-query --index DIR --queries trec05-efficiency.txt --json query.json
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "base/huge_pages.h"
#include "base/thread_pool.h"
#include "bench/bench_main.h"
#include "cpu/daat_engine.h"
#include "cpu/reference_engine.h"
#include "index/index.h"
#include "index/prepared_query.h"
#include "workload/query_file.h"

ABSL_FLAG(std::string, index, "", "index directory");
ABSL_FLAG(std::string, queries, "", "query log (id:query, TSV or one per line)");
ABSL_FLAG(int, max_queries, 10000, "use the first N queries that have at least one index term");
ABSL_FLAG(std::string, modes, "and,or,and_or", "modes to measure");
ABSL_FLAG(std::string, ks, "10,1000", "k values to measure");
ABSL_FLAG(int, threads, 0, "threads for the throughput run (0: all cores)");
ABSL_FLAG(std::string, or_algorithms, "maxscore,block-max-maxscore,wand,block-max-wand,exhaustive",
          "CPU OR algorithms to measure side by side (OR and AND+OR rows)");
ABSL_FLAG(std::string, and_block_max, "on,off",
          "AND rows: with block-max skipping (on), without (off), or both side by side");
ABSL_FLAG(bool, known_terms_only, false,
          "drop the terms the index lacks and repeated terms from every query, as PISA's queries "
          "tool does (an AND with an unknown term otherwise matches nothing)");
ABSL_FLAG(std::string, write_queries, "",
          "write the queries as measured, one 'id:term term ...' line each, in the order run");
ABSL_FLAG(bool, latency, true, "measure each query's latency on one thread");
ABSL_FLAG(int, warmup_passes, 1,
          "untimed passes over the queries before the timed ones, for latency and for throughput "
          "(PISA's queries tool makes one)");
ABSL_FLAG(int, runs, 1,
          "timed passes over the queries, each query once a pass (PISA's --runs): the latencies of "
          "every pass are summarized together, and throughput is over all of them");
ABSL_FLAG(bool, throughput, true, "measure throughput on --threads threads");
ABSL_FLAG(bool, pin_threads, false,
          "throughput: pin the thread running share t to the t-th CPU the process may run on, as "
          "the side-by-side script pins each of PISA's processes to a core of its own");
ABSL_FLAG(std::string, timed_from, "text",
          "where a timed query starts: text (its terms as strings: the lexicon lookups timed) or "
          "term-ids (looked up before the timer starts, as PISA's queries tool reads term ids; "
          "DaatEngine::Search from an index::ResolvedQuery)");
ABSL_FLAG(bool, write_queries_only, false, "write --write-queries and stop");
ABSL_FLAG(std::string, share, "",
          "T/N: measure only share T of N of the chosen queries (queries T, T + N, ..., counted "
          "from 0), the share the side-by-side script gives PISA's process T");
ABSL_FLAG(int, verify, 50, "queries per configuration checked against the reference scorer");
ABSL_FLAG(std::string, per_query, "",
          "write each timed query's latency here, a TSV line per query and pass (mode, k, "
          "algorithm, query id, pass counted from 1, microseconds), as PISA's queries tool does");
ABSL_FLAG(bool, whole_microseconds, false,
          "record each timed query's time in whole microseconds, truncated, as PISA's queries tool "
          "does (std::chrono::duration_cast to microseconds; a query under one counts 0): its "
          "latencies, the per-query file and each thread's summed query times; the wall clock of "
          "a pass stays exact");
ABSL_FLAG(tandem::index::FileMemory, postings_memory, tandem::index::FileMemory::kMapped,
          "where the postings live: mapped (the file's pages) or huge-pages (a copy in "
          "transparent huge pages)");
ABSL_FLAG(std::string, perf_control, "",
          "CTL,ACK: the FIFOs of `perf record -D -1 --control fifo:CTL,ACK`; perf records only "
          "the latency and throughput passes (untimed and timed), not the index load, the query "
          "parsing or the check against the reference scorer");

namespace {
using namespace tandem;
using Clock = std::chrono::steady_clock;

// --share T/N: the round-robin share T of N (0 <= T < N).
struct Share {
  uint32_t index = 0;
  uint32_t count = 1;
};
absl::StatusOr<Share> ParseShare(absl::string_view text) {
  Share share;
  if (text.empty()) return share;
  std::vector<absl::string_view> parts = absl::StrSplit(text, '/');
  if (parts.size() != 2 || !absl::SimpleAtoi(parts[0], &share.index) ||
      !absl::SimpleAtoi(parts[1], &share.count) || share.count == 0 || share.index >= share.count) {
    return absl::InvalidArgumentError(
        absl::StrCat("--share takes T/N with 0 <= T < N (e.g. 3/16); got '", text, "'"));
  }
  return share;
}

// perf record's control FIFOs (perf-record(1), --control): "enable" and "disable" commands, each
// answered with "ack" once perf has carried it out.
class PerfControl {
 public:
  ~PerfControl() {
    if (ctl_ >= 0) close(ctl_);
    if (ack_ >= 0) close(ack_);
  }
  // `spec` is "CTL,ACK"; empty: no profiler, Send does nothing.
  absl::Status Open(absl::string_view spec) {
    if (spec.empty()) return absl::OkStatus();
    std::vector<std::string> paths = absl::StrSplit(spec, ',');
    if (paths.size() != 2 || paths[0].empty() || paths[1].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--perf-control takes CTL,ACK (two FIFO paths); got '", spec, "'"));
    }
    ctl_ = open(paths[0].c_str(), O_WRONLY | O_CLOEXEC);
    if (ctl_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--perf-control: cannot open '", paths[0],
                                                     "' for writing: ", std::strerror(errno)));
    }
    ack_ = open(paths[1].c_str(), O_RDONLY | O_CLOEXEC);
    if (ack_ < 0) {
      return absl::InvalidArgumentError(absl::StrCat("--perf-control: cannot open '", paths[1],
                                                     "' for reading: ", std::strerror(errno)));
    }
    return absl::OkStatus();
  }
  absl::Status Send(absl::string_view command) {
    if (ctl_ < 0) return absl::OkStatus();
    const std::string line = absl::StrCat(command, "\n");
    // perf answers "ack\n" with its terminating NUL, in one write.
    char ack[8] = {};
    if (write(ctl_, line.data(), line.size()) != static_cast<ssize_t>(line.size()) ||
        read(ack_, ack, sizeof(ack)) < 4 || std::memcmp(ack, "ack\n", 4) != 0) {
      return absl::UnavailableError(
          absl::StrCat("--perf-control: perf did not acknowledge '", command, "'"));
    }
    return absl::OkStatus();
  }

 private:
  int ctl_ = -1;
  int ack_ = -1;
};
}  // namespace

int main(int argc, char** argv) {
  base::ParseCommandLineOrExit(
      argc, argv,
      bench::BenchApp(__FILE__, {"tandem-bench-query", "--index DIR --queries FILE [--json FILE]",
                                 "the CPU engine's latency and throughput over a query log, every "
                                 "answer checked against the reference engine."}));
  if (absl::GetFlag(FLAGS_warmup_passes) < 0) return bench::Fail("--warmup-passes must be >= 0");
  if (absl::GetFlag(FLAGS_runs) < 1) return bench::Fail("--runs must be >= 1");
  const std::string timed_from = absl::GetFlag(FLAGS_timed_from);
  if (timed_from != "text" && timed_from != "term-ids") {
    return bench::Fail(absl::StrCat("--timed-from takes text or term-ids; got '", timed_from, "'"));
  }
  const bool from_ids = timed_from == "term-ids";
  // One timed query's seconds as recorded: exact, or truncated to whole microseconds as PISA's
  // queries tool records them, whose mean is lower by about half a microsecond a query (a few
  // percent of the shortest queries' times).
  const bool whole_us = absl::GetFlag(FLAGS_whole_microseconds);
  const auto query_seconds = [whole_us](Clock::duration elapsed) {
    return whole_us ? static_cast<double>(
                          std::chrono::duration_cast<std::chrono::microseconds>(elapsed).count()) *
                          1e-6
                    : std::chrono::duration<double>(elapsed).count();
  };
  const absl::StatusOr<Share> share = ParseShare(absl::GetFlag(FLAGS_share));
  if (!share.ok()) return bench::Fail(share.status().message());
  auto idx = index::Index::Open(absl::GetFlag(FLAGS_index),
                                {.postings_memory = absl::GetFlag(FLAGS_postings_memory)});
  if (!idx.ok()) return bench::Fail(idx.status().message());
  // What the kernel made of the request: the bytes of the postings' memory in huge pages.
  const std::optional<uint64_t> huge_bytes = (*idx)->postings_huge_page_bytes();
  const std::string thp_mode = base::TransparentHugePagesMode();
  std::printf("postings %s: %.1f of %.1f MiB in huge pages (THP %s)\n",
              std::string(index::FileMemoryName((*idx)->postings_memory())).c_str(),
              huge_bytes ? static_cast<double>(*huge_bytes) / (1 << 20) : 0.0,
              static_cast<double>((*idx)->postings_bytes()) / (1 << 20), thp_mode.c_str());
  auto records = workload::LoadQueryFile(absl::GetFlag(FLAGS_queries));
  if (!records.ok()) return bench::Fail(records.status().message());
  std::vector<std::pair<std::string, std::unique_ptr<cpu::DaatEngine>>> engines;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_or_algorithms), ',')) {
    absl::StatusOr<cpu::OrAlgorithm> algorithm = cpu::ParseOrAlgorithm(name);
    if (!algorithm.ok()) return bench::Fail(algorithm.status().message());
    engines.emplace_back(std::string(cpu::OrAlgorithmName(*algorithm)),
                         *cpu::DaatEngine::Create(**idx, {.or_algorithm = *algorithm}));
  }
  if (engines.empty()) return bench::Fail("--or-algorithms is empty");
  std::vector<std::pair<std::string, std::unique_ptr<cpu::DaatEngine>>> and_engines;
  for (absl::string_view v : absl::StrSplit(absl::GetFlag(FLAGS_and_block_max), ',')) {
    if (v != "on" && v != "off") return bench::Fail("--and-block-max takes on, off or on,off");
    and_engines.emplace_back(v == "on" ? "block-max" : "plain",
                             *cpu::DaatEngine::Create(**idx, {.block_max_and = v == "on"}));
  }
  if (and_engines.empty()) return bench::Fail("--and-block-max is empty");
  cpu::ReferenceEngine reference(**idx);
  PerfControl perf;
  if (absl::Status s = perf.Open(absl::GetFlag(FLAGS_perf_control)); !s.ok()) {
    return bench::Fail(s.message());
  }

  // Analyze once; keep queries with at least one index term.
  std::vector<std::vector<std::string>> queries;
  std::vector<std::string> query_ids;
  const bool known_only = absl::GetFlag(FLAGS_known_terms_only);
  for (const workload::QueryRecord& r : *records) {
    if (static_cast<int>(queries.size()) >= absl::GetFlag(FLAGS_max_queries)) break;
    std::vector<std::string> terms;
    (*idx)->analyzer().Analyze(r.text, &terms);
    std::vector<std::string> kept;
    for (const auto& t : terms) {
      if (!(*idx)->Lookup(t).has_value()) continue;
      if (known_only && std::find(kept.begin(), kept.end(), t) != kept.end()) continue;
      kept.push_back(t);
    }
    if (kept.empty()) continue;
    queries.push_back(known_only ? std::move(kept) : std::move(terms));
    query_ids.push_back(r.id.empty() ? absl::StrCat(queries.size()) : r.id);
  }
  if (queries.empty()) return bench::Fail("no query has a term in the index");
  if (share->count > 1) {
    // Chosen first, then shared: share T holds the queries a run of N threads gives thread T.
    size_t kept = 0;
    for (size_t i = share->index; i < queries.size(); i += share->count, ++kept) {
      if (kept == i) continue;  // a moved-onto-itself vector would be left empty
      queries[kept] = std::move(queries[i]);
      query_ids[kept] = std::move(query_ids[i]);
    }
    queries.resize(kept);
    query_ids.resize(kept);
    if (queries.empty()) {
      return bench::Fail(
          absl::StrCat("--share ", absl::GetFlag(FLAGS_share), ": the share holds no query"));
    }
  }
  if (!absl::GetFlag(FLAGS_write_queries).empty()) {
    std::ofstream f(absl::GetFlag(FLAGS_write_queries));
    for (size_t i = 0; i < queries.size(); ++i) {
      f << query_ids[i] << ":" << absl::StrJoin(queries[i], " ") << "\n";
    }
    if (!f) return bench::Fail("cannot write --write-queries");
  }
  if (absl::GetFlag(FLAGS_write_queries_only)) return 0;

  nlohmann::json out = {
      {"benchmark", "query"},
      {"machine", base::MachineInfo()},
      {"index",
       {{"path", absl::GetFlag(FLAGS_index)},
        {"documents", (*idx)->num_docs()},
        {"terms", (*idx)->stats().num_terms},
        {"postings", (*idx)->stats().num_postings},
        {"codec", (*idx)->manifest().codec},
        {"bytes", (*idx)->index_bytes()},
        {"postings_memory", index::FileMemoryName((*idx)->postings_memory())},
        {"postings_huge_page_bytes", huge_bytes ? nlohmann::json(*huge_bytes) : nlohmann::json()},
        {"transparent_huge_pages", thp_mode}}},
      {"queries",
       {{"file", absl::GetFlag(FLAGS_queries)},
        {"count", queries.size()},
        {"known_terms_only", known_only},
        {"share", absl::GetFlag(FLAGS_share).empty() ? nlohmann::json()
                                                     : nlohmann::json(absl::GetFlag(FLAGS_share))},
        {"timed_from", timed_from},
        {"query_time_resolution", whole_us ? "whole microseconds, truncated" : "exact"}}},
      {"results", nlohmann::json::array()}};
  std::ofstream per_query;
  if (!absl::GetFlag(FLAGS_per_query).empty()) {
    per_query.open(absl::GetFlag(FLAGS_per_query));
    per_query << "mode\tk\talgorithm\tqid\trun\tusec\n";
    if (!per_query)
      return bench::Fail(absl::StrCat("cannot write --per-query ", absl::GetFlag(FLAGS_per_query)));
  }
  base::ThreadPool pool(absl::GetFlag(FLAGS_threads));
  // --pin-threads: the CPUs this process may run on (taskset's), in order.
  std::vector<int> cpus;
  if (absl::GetFlag(FLAGS_pin_threads)) {
    cpu_set_t allowed;
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) {
      return bench::Fail(absl::StrCat("--pin-threads: sched_getaffinity: ", std::strerror(errno)));
    }
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (CPU_ISSET(c, &allowed)) cpus.push_back(c);
    }
    if (cpus.size() < pool.size()) {
      std::fprintf(stderr,
                   "tandem-bench-query: --pin-threads: %zu threads on %zu CPUs, some share one\n",
                   pool.size(), cpus.size());
    }
  }
  std::printf("%zu queries, %zu threads for throughput\n", queries.size(), pool.size());
  std::printf("%-7s %5s %-18s | %9s %9s %9s %9s | %9s %9s | %12s %12s | %s\n", "mode", "k",
              "algorithm", "mean ms", "p50 ms", "p95 ms", "p99 ms", "QPS 1thr", "QPS all",
              "postings/q", "scored/q", "verified");
  for (absl::string_view mode_name : absl::StrSplit(absl::GetFlag(FLAGS_modes), ',')) {
    index::QueryMode mode;
    if (!index::ParseQueryMode(mode_name, &mode)) return bench::Fail("bad --modes");
    for (absl::string_view k_text : absl::StrSplit(absl::GetFlag(FLAGS_ks), ',')) {
      uint32_t k;
      if (!absl::SimpleAtoi(k_text, &k)) return bench::Fail("bad --ks");
      auto make = [&](const std::vector<std::string>& terms) {
        index::Query q;
        q.mode = mode;
        q.k = k;
        for (const auto& t : terms) q.terms.push_back({t, 1.0f});
        return q;
      };
      // --timed-from term-ids: every query prepared once (its terms looked up), before any timer.
      std::vector<index::PreparedQuery> prepared;
      if (from_ids) {
        for (const auto& terms : queries) {
          absl::StatusOr<index::PreparedQuery> p =
              index::PreparedQuery::Prepare(**idx, make(terms));
          if (!p.ok()) return bench::Fail(p.status().message());
          prepared.push_back(*std::move(p));
        }
      }
      const auto& variants = mode == index::QueryMode::kAnd ? and_engines : engines;
      for (size_t e = 0; e < variants.size(); ++e) {
        const std::string& algorithm = variants[e].first;
        const cpu::DaatEngine* engine = variants[e].second.get();
        auto search = [&](size_t i) {
          return from_ids ? engine->Search(prepared[i], {}) : engine->Search(make(queries[i]), {});
        };
        // Correctness first, in the same run, of the search as it is timed.
        int verified = 0;
        for (int i = 0; i < absl::GetFlag(FLAGS_verify) && i < static_cast<int>(queries.size());
             ++i) {
          auto got = search(i);
          auto want = reference.Search(make(queries[i]), {});
          if (!got.ok() || !want.ok() || got->hits != want->hits) {
            return bench::Fail(
                "CPU engine disagrees with the reference scorer; not timing a wrong engine");
          }
          ++verified;
        }
        // One thread: per-query latency, over whole passes of the queries as PISA measures it
        // (untimed passes first, then each query once per timed pass).
        std::vector<double> latency;
        uint64_t postings = 0, scored = 0, skips = 0;
        const bool measure_latency = absl::GetFlag(FLAGS_latency);
        const int warmup = absl::GetFlag(FLAGS_warmup_passes);
        const int runs = absl::GetFlag(FLAGS_runs);
        double one = 0;
        if (measure_latency) {
          if (absl::Status s = perf.Send("enable"); !s.ok()) return bench::Fail(s.message());
        }
        for (int pass = 0; measure_latency && pass < warmup + runs; ++pass) {
          const bool timed = pass >= warmup;
          const auto t0 = Clock::now();
          for (size_t i = 0; i < queries.size(); ++i) {
            const auto s = Clock::now();
            auto r = search(i);
            const double seconds = query_seconds(Clock::now() - s);
            if (!r.ok()) return bench::Fail(r.status().message());
            if (!timed) continue;
            latency.push_back(seconds);
            if (per_query.is_open()) {
              per_query << mode_name << '\t' << k << '\t' << algorithm << '\t' << query_ids[i]
                        << '\t' << pass - warmup + 1 << '\t';
              if (whole_us) {
                per_query << std::llround(seconds * 1e6) << '\n';
              } else {
                per_query << seconds * 1e6 << '\n';
              }
            }
            postings += r->stats.postings_decoded;
            scored += r->stats.documents_scored;
            skips += r->stats.block_max_skips;
          }
          if (timed) one += std::chrono::duration<double>(Clock::now() - t0).count();
        }
        if (measure_latency) {
          if (absl::Status s = perf.Send("disable"); !s.ok()) return bench::Fail(s.message());
        }
        // All threads: throughput, over --warmup-passes untimed and --runs timed passes. Each
        // thread runs its round-robin share of the queries in a loop of its own, as the
        // side-by-side script hands PISA's processes theirs: a task per query would add the pool's
        // hand-off to queries of a few microseconds.
        // Besides the wall clock of each pass, every thread sums its timed queries' own times:
        // the sum over threads of queries / that time is PISA's summed rate of its processes
        // (bench/pisa_side_by_side.py), which no thread's wait for the slowest one lowers.
        std::atomic<int> errors{0};
        const bool measure_throughput = absl::GetFlag(FLAGS_throughput);
        double all = 0;
        std::vector<double> busy(pool.size(), 0.0);
        std::vector<uint64_t> done(pool.size(), 0);
        if (measure_throughput) {
          if (absl::Status s = perf.Send("enable"); !s.ok()) return bench::Fail(s.message());
        }
        for (int pass = 0; measure_throughput && pass < warmup + runs; ++pass) {
          const bool timed = pass >= warmup;
          const auto t1 = Clock::now();
          for (size_t t = 0; t < pool.size(); ++t) {
            pool.Schedule([&, t, timed] {
              if (!cpus.empty()) {
                cpu_set_t one;
                CPU_ZERO(&one);
                CPU_SET(cpus[t % cpus.size()], &one);
                if (pthread_setaffinity_np(pthread_self(), sizeof(one), &one) != 0) ++errors;
              }
              double seconds = 0;
              uint64_t n = 0;
              for (size_t i = t; i < queries.size(); i += pool.size()) {
                const auto s = Clock::now();
                if (!search(i).ok()) ++errors;
                seconds += query_seconds(Clock::now() - s);
                ++n;
              }
              if (timed) {
                busy[t] += seconds;
                done[t] += n;
              }
            });
          }
          pool.Wait();
          if (timed) all += std::chrono::duration<double>(Clock::now() - t1).count();
        }
        if (measure_throughput) {
          if (absl::Status s = perf.Send("disable"); !s.ok()) return bench::Fail(s.message());
        }
        if (errors > 0)
          return bench::Fail("queries failed in the throughput run (or --pin-threads did)");
        // Each thread's own rate: its share of the queries (share t: queries t, t + threads, ...,
        // as the side-by-side script gives PISA's process t, on CPU t when pinned) over its time.
        double qps_summed = 0;
        std::vector<double> qps_per_thread(pool.size(), 0.0);
        for (size_t t = 0; t < pool.size(); ++t) {
          if (busy[t] > 0) qps_per_thread[t] = static_cast<double>(done[t]) / busy[t];
          qps_summed += qps_per_thread[t];
        }
        base::LatencySummary l = base::Summarize(latency);
        const double n = static_cast<double>(queries.size());
        // Per-query counts and the one-thread rate over every timed pass.
        const double timed_queries = std::max<double>(1.0, static_cast<double>(latency.size()));
        // 0 in the table for a pass not run (null in the JSON).
        const double qps_one = measure_latency ? timed_queries / one : 0.0;
        const double qps_all = measure_throughput ? n * runs / all : 0.0;
        std::printf("%-7s %5u %-18s | %9.3f %9.3f %9.3f %9.3f | %9.0f %9.0f | %12.0f %12.0f | %d\n",
                    std::string(mode_name).c_str(), k, algorithm.c_str(), l.mean * 1e3, l.p50 * 1e3,
                    l.p95 * 1e3, l.p99 * 1e3, qps_one, qps_all, postings / timed_queries,
                    scored / timed_queries, verified);
        out["results"].push_back(
            {{"mode", std::string(mode_name)},
             {"k", k},
             {"or_algorithm", mode == index::QueryMode::kAnd ? "" : algorithm},
             {"and_block_max", mode == index::QueryMode::kAnd
                                   ? nlohmann::json(algorithm == "block-max")
                                   : nlohmann::json()},
             {"block_max_skips_per_query", skips / timed_queries},
             {"documents_scored_per_query", scored / timed_queries},
             {"latency_seconds", measure_latency ? nlohmann::json({{"mean", l.mean},
                                                                   {"p50", l.p50},
                                                                   {"p95", l.p95},
                                                                   {"p99", l.p99},
                                                                   {"max", l.max}})
                                                 : nlohmann::json()},
             {"qps_one_thread", measure_latency ? nlohmann::json(qps_one) : nlohmann::json()},
             {"qps_all_threads", measure_throughput ? nlohmann::json(qps_all) : nlohmann::json()},
             {"qps_summed_over_threads",
              measure_throughput ? nlohmann::json(qps_summed) : nlohmann::json()},
             {"qps_per_thread",
              measure_throughput ? nlohmann::json(qps_per_thread) : nlohmann::json()},
             {"threads", pool.size()},
             {"threads_pinned", !cpus.empty()},
             {"warmup_passes", warmup},
             {"timed_passes", runs},
             {"postings_decoded_per_query", postings / timed_queries},
             {"verified_against_reference", verified}});
      }
    }
  }
  if (per_query.is_open() && !per_query.flush()) {
    return bench::Fail(absl::StrCat("cannot write --per-query ", absl::GetFlag(FLAGS_per_query)));
  }
  base::WriteJson(absl::GetFlag(FLAGS_json), out);
  return 0;
}
