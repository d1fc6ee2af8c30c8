// tandem-bench-gpu-batch: the GPU engine's batch path (Ao et al. 2011, PARA) beside its per-query
// path on one index, every answer compared with the CPU engine's (same documents, order and
// scores):
//   - the paper's Figure 5 and Figure 6: throughput and response time (the time a batch takes) by
//     computational threshold c, the sum of the batch's shortest-list lengths (OR: of all its list
//     lengths), for each search range (BS, LR, HS16, HS32, HS256) on uncompressed docIDs, or with
//     --seglrc_forms on docIDs compressed in SegLRC and searched in place (section 4.3);
//   - the per-query path with all cores calling it, for the same queries.
// Batches are formed from the query log in order until the threshold is reached and run by
// --batch_threads callers of GpuEngine::SearchBatch at once. Prints a table and writes JSON with
// the machine, the commit and the GPU.
//
//   tandem-bench-gpu-batch --index DIR --queries trec05-efficiency.txt --json out.json
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "base/thread_pool.h"
#include "bench/bench_main.h"
#include "cpu/daat_engine.h"
#include "gpu/engine/gpu_engine.h"
#include "index/index.h"
#include "index/resolved_query.h"
#include "nlohmann/json.hpp"
#include "workload/query_set.h"
#include "workload/query_split.h"

ABSL_FLAG(std::string, index, "", "index directory (required)");
ABSL_FLAG(std::string, queries, "", "query log (trec05-efficiency.txt; required)");
TANDEM_BENCH_SPLIT_FLAGS();
ABSL_FLAG(int, max_queries, 1000, "measure the first N chosen queries (0: all)");
ABSL_FLAG(std::string, modes, "and,or", "modes to measure");
ABSL_FLAG(std::string, k, "10,1000", "hits per query, a list");
ABSL_FLAG(std::string, ranges, "bs,lr,hs16,hs32,hs256", "search ranges of the AND to measure");
ABSL_FLAG(std::string, thresholds, "16384,65536,262144,1048576,4194304,16777216,67108864",
          "computational thresholds c to measure (postings per batch)");
ABSL_FLAG(bool, seglrc_forms, false,
          "keep the search forms' docIDs in SegLRC and search them in place (Ao et al. 2011, "
          "section 4.3) instead of plain");
ABSL_FLAG(int, batch_threads, 2, "callers of SearchBatch at once (batch contexts)");
ABSL_FLAG(int, threads, 0, "callers of the per-query path (0: all cores)");
ABSL_FLAG(int, repeat, 3, "timed runs per configuration; the fastest is reported");

namespace tandem {
namespace {

using nlohmann::json;

// Same documents in the same order with bit-equal scores.
bool SameHits(const absl::StatusOr<index::SearchResult>& want,
              const absl::StatusOr<index::SearchResult>& got) {
  if (!want.ok() || !got.ok()) return want.ok() == got.ok();
  return want->hits == got->hits;
}

// Consecutive runs of queries whose cost adds up to at least `threshold` (the last may be less).
std::vector<std::pair<size_t, size_t>> FormBatches(const std::vector<uint64_t>& cost,
                                                   uint64_t threshold) {
  std::vector<std::pair<size_t, size_t>> batches;  // [begin, end)
  size_t begin = 0;
  uint64_t sum = 0;
  for (size_t i = 0; i < cost.size(); ++i) {
    sum += cost[i];
    if (sum >= threshold) {
      batches.push_back({begin, i + 1});
      begin = i + 1;
      sum = 0;
    }
  }
  if (begin < cost.size()) batches.push_back({begin, cost.size()});
  return batches;
}

struct BatchRun {
  double qps = 0;
  base::LatencySummary batch_latency;  // seconds per batch
  int mismatches = 0;
};

// The batches run by `callers` threads taking the next batch in turn.
BatchRun RunBatches(const gpu::GpuEngine& gpu, const std::vector<index::Query>& queries,
                    const std::vector<std::pair<size_t, size_t>>& batches,
                    const std::vector<absl::StatusOr<index::SearchResult>>& expected, int callers) {
  std::atomic<int> mismatches{0};
  std::vector<std::vector<double>> latencies(callers);
  const double seconds = bench::ShareOut(batches.size(), callers, [&](int c, size_t b) {
    const auto [begin, end] = batches[b];
    const std::vector<index::Query> batch(queries.begin() + begin, queries.begin() + end);
    const auto t0 = bench::Clock::now();
    auto got = gpu.SearchBatch(batch, {index::SearchContext{}});
    latencies[c].push_back(bench::Seconds(t0, bench::Clock::now()));
    for (size_t i = 0; i < got.size(); ++i) {
      if (!SameHits(expected[begin + i], got[i])) ++mismatches;
    }
  });
  BatchRun run;
  run.qps = queries.size() / seconds;
  std::vector<double> all;
  for (const auto& l : latencies) all.insert(all.end(), l.begin(), l.end());
  run.batch_latency = base::Summarize(all);
  run.mismatches = mismatches;
  return run;
}

// Queries per second of `callers` threads calling Search; counts wrong answers.
double PerQueryThroughput(const gpu::GpuEngine& gpu, const std::vector<index::Query>& queries,
                          const std::vector<absl::StatusOr<index::SearchResult>>& expected,
                          int callers, int* mismatches) {
  std::atomic<int> wrong{0};
  const double seconds = bench::ShareOut(queries.size(), callers, [&](int, size_t i) {
    if (!SameHits(expected[i], gpu.Search(queries[i], {}))) ++wrong;
  });
  *mismatches += wrong;
  return queries.size() / seconds;
}

template <typename T, typename Parse>
absl::StatusOr<std::vector<T>> ParseList(const std::string& text, Parse parse) {
  std::vector<T> out;
  for (absl::string_view s : absl::StrSplit(text, ',', absl::SkipEmpty())) {
    T value;
    if (!parse(s, &value)) return absl::InvalidArgumentError(absl::StrCat("bad value '", s, "'"));
    out.push_back(value);
  }
  return out;
}

int Run() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // rows as they come, also through a pipe
  auto idx = index::Index::Open(absl::GetFlag(FLAGS_index));
  if (!idx.ok()) return bench::Fail("open index: " + idx.status().ToString());
  const index::Index& index = **idx;
  auto ks = ParseList<uint32_t>(absl::GetFlag(FLAGS_k), [](absl::string_view s, uint32_t* k) {
    return absl::SimpleAtoi(s, k) && *k >= 1 && *k <= index::kMaxK;
  });
  auto modes = ParseList<index::QueryMode>(
      absl::GetFlag(FLAGS_modes),
      [](absl::string_view s, index::QueryMode* m) { return index::ParseQueryMode(s, m); });
  auto ranges = ParseList<gpu::SearchRange>(absl::GetFlag(FLAGS_ranges),
                                            [](absl::string_view s, gpu::SearchRange* r) {
                                              return gpu::ParseSearchRange(std::string(s), r);
                                            });
  auto thresholds = ParseList<uint64_t>(
      absl::GetFlag(FLAGS_thresholds),
      [](absl::string_view s, uint64_t* c) { return absl::SimpleAtoi(s, c) && *c > 0; });
  for (const absl::Status& s :
       {ks.status(), modes.status(), ranges.status(), thresholds.status()}) {
    if (!s.ok()) return bench::Fail(std::string(s.message()));
  }
  const int batch_threads = std::max(1, absl::GetFlag(FLAGS_batch_threads));
  const int threads = absl::GetFlag(FLAGS_threads) > 0
                          ? absl::GetFlag(FLAGS_threads)
                          : static_cast<int>(std::thread::hardware_concurrency());
  const int repeat = std::max(1, absl::GetFlag(FLAGS_repeat));

  // The pool (queries with an index term, in file order), the split's part, the first
  // --max_queries.
  auto selected = bench::SelectQueries(
      index, {FLAGS_queries, FLAGS_split, FLAGS_seed, FLAGS_train, FLAGS_eval, FLAGS_max_queries});
  if (!selected.ok()) return bench::Fail(selected.status().message());
  std::vector<std::vector<std::string>> analyzed;
  for (workload::AnalyzedQuery& q : *selected) analyzed.push_back(std::move(q.terms));

  auto cpu = cpu::DaatEngine::Create(index);
  if (!cpu.ok()) return bench::Fail("cpu engine: " + cpu.status().ToString());
  gpu::GpuEngineOptions options;  // the default 4 query contexts: each holds scratch for an OR
  options.batch = {.enabled = true,
                   .compressed_forms = absl::GetFlag(FLAGS_seglrc_forms),
                   .contexts = batch_threads};
  auto created = gpu::GpuEngine::Create(index, options);
  if (!created.ok()) return bench::Fail("gpu engine: " + created.status().ToString());
  const gpu::GpuEngine& gpu = **created;

  json out;
  out["benchmark"] = "gpu_batch";
  out["machine"] = base::MachineInfo(gpu.device().name);
  out["index"] = {{"path", absl::GetFlag(FLAGS_index)},
                  {"documents", index.num_docs()},
                  {"postings", index.manifest().stats.num_postings},
                  {"codec", index.manifest().codec}};
  out["queries"] = {{"file", absl::GetFlag(FLAGS_queries)},
                    {"split", absl::GetFlag(FLAGS_split)},
                    {"count", analyzed.size()}};
  out["batch_threads"] = batch_threads;
  out["search_forms"] = absl::GetFlag(FLAGS_seglrc_forms) ? "seglrc" : "plain";
  out["per_query_threads"] = threads;
  std::printf(
      "index: %u docs, %lu postings; %zu %s queries; GPU %s; %d batch callers, %d "
      "per-query callers\n",
      index.num_docs(), static_cast<unsigned long>(index.manifest().stats.num_postings),
      analyzed.size(), absl::GetFlag(FLAGS_split).c_str(), gpu.device().name.c_str(), batch_threads,
      threads);
  std::printf("\n%-4s %5s %-6s %9s %8s %9s %10s %9s %9s %9s %5s\n", "mode", "k", "path", "c",
              "batches", "q/batch", "q/s", "mean_ms", "p50_ms", "p99_ms", "diff");
  int total_mismatches = 0;
  for (uint32_t k : *ks) {
    for (index::QueryMode mode : *modes) {
      const std::string mode_name(index::QueryModeName(mode));
      std::vector<index::Query> queries;
      std::vector<uint64_t> cost;
      for (const auto& terms : analyzed) {
        index::Query q;
        q.mode = mode;
        q.k = k;
        for (const std::string& t : terms) q.terms.push_back({t, 1.0f});
        const index::ResolvedQuery r = index::ResolveQuery(index, q);
        uint64_t shortest = UINT64_MAX, all = 0;
        for (const index::ResolvedTerm& t : r.terms) {
          shortest = std::min<uint64_t>(shortest, t.info.df);
          all += t.info.df;
        }
        cost.push_back(mode == index::QueryMode::kAnd && r.runs_and() ? shortest : all);
        queries.push_back(std::move(q));
      }
      // The CPU engine's answers, on every core.
      std::vector<absl::StatusOr<index::SearchResult>> expected(queries.size(),
                                                                index::SearchResult{});
      {
        base::ThreadPool workers(threads);
        for (size_t i = 0; i < queries.size(); ++i) {
          workers.Schedule([&, i] { expected[i] = (*cpu)->Search(queries[i], {}); });
        }
        workers.Wait();
      }
      // Warm: every list of the queries in the device cache, with its search form.
      const auto warm_start = bench::Clock::now();
      (void)gpu.SearchBatch(queries, {index::SearchContext{}});
      const gpu::GpuCacheStats cache = gpu.cache_stats();
      std::printf(
          "%-4s %5u warm-up (lists loaded, search forms built): %.1f s; device cache %.2f "
          "GB, %.2f bytes per posting of the index\n",
          mode_name.c_str(), k, bench::Seconds(warm_start, bench::Clock::now()),
          cache.bytes_resident / 1e9,
          static_cast<double>(cache.bytes_resident) /
              std::max<uint64_t>(1, index.manifest().stats.num_postings));
      out["device_cache_bytes"] = cache.bytes_resident;
      // The per-query path.
      int per_query_wrong = 0;
      double best_qps = 0;
      for (int r = 0; r < repeat; ++r) {
        best_qps = std::max(best_qps,
                            PerQueryThroughput(gpu, queries, expected, threads, &per_query_wrong));
      }
      total_mismatches += per_query_wrong;
      std::printf("%-4s %5u %-6s %9s %8s %9s %10.0f %9s %9s %9s %5d\n", mode_name.c_str(), k,
                  "query", "-", "-", "-", best_qps, "-", "-", "-", per_query_wrong);
      json& row = out["results"][mode_name][std::to_string(k)];
      row["per_query"] = {{"qps", best_qps}, {"mismatches", per_query_wrong}};
      const std::vector<gpu::SearchRange> mode_ranges =
          mode == index::QueryMode::kOr ? std::vector<gpu::SearchRange>{gpu::SearchRange::kHash16}
                                        : *ranges;
      for (gpu::SearchRange range : mode_ranges) {
        gpu::GpuQueryTuning tuning;
        tuning.batch_range = range;
        if (absl::Status s = (*created)->SetTuning(tuning); !s.ok())
          return bench::Fail(s.ToString());
        const std::string path =
            mode == index::QueryMode::kOr ? "batch" : gpu::SearchRangeName(range);
        for (uint64_t c : *thresholds) {
          const auto batches = FormBatches(cost, c);
          BatchRun best;
          int wrong = 0;
          for (int r = 0; r < repeat; ++r) {
            BatchRun run = RunBatches(gpu, queries, batches, expected, batch_threads);
            wrong += run.mismatches;
            if (run.qps > best.qps) best = run;
          }
          total_mismatches += wrong;
          std::printf("%-4s %5u %-6s %9lu %8zu %9.1f %10.0f %9.3f %9.3f %9.3f %5d\n",
                      mode_name.c_str(), k, path.c_str(), static_cast<unsigned long>(c),
                      batches.size(), static_cast<double>(queries.size()) / batches.size(),
                      best.qps, best.batch_latency.mean * 1e3, best.batch_latency.p50 * 1e3,
                      best.batch_latency.p99 * 1e3, wrong);
          row["batch"][path][std::to_string(c)] = {{"batches", batches.size()},
                                                   {"qps", best.qps},
                                                   {"batch_ms",
                                                    {{"mean", best.batch_latency.mean * 1e3},
                                                     {"p50", best.batch_latency.p50 * 1e3},
                                                     {"p99", best.batch_latency.p99 * 1e3}}},
                                                   {"mismatches", wrong}};
        }
      }
    }
  }
  out["mismatches"] = total_mismatches;
  return base::FinishCheckedRun(total_mismatches, out, absl::GetFlag(FLAGS_json), 1);
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-gpu-batch", "--index DIR --queries FILE [--json FILE]",
                  "the GPU's batch path beside its per-query path, every answer "
                  "checked against the CPU engine.");
