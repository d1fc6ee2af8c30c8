// tandem-bench-gpu-query: the GPU engine beside the CPU engine on a synthetic web-scale index built
// inside the run (index_builder/synth.h, as `tandem-index synth`), over the evaluation split of a
// query log (workload/query_split.h: the queries the cost model never trains on). Every GPU answer
// is compared with the CPU engine's (same documents and order, scores within 1e-5 relative).
// Reports, for each mode and k (the paper's Tables 2 and 3):
//   - latency (mean, median, p95, p99) one query at a time, CPU vs GPU, and throughput with all
//     cores calling each engine;
//   - the GPU top-k by CUB radix sort vs the multi-level max-heap;
//   - the share of GPU time per stage (cache, decode, intersect, score, top-k);
//   - AND latency by intersection method (located-block search, merge-find with 0-3 levels);
//   - the device cache: latency cold (empty cache) and warm, and the hit rate of a cache holding
//     --cache_fraction of the index.
// Writes JSON with the machine, the commit and the GPU.
//
//   tandem-bench-gpu-query --termstats wikipedia-termstats.tsv.gz --doclengths
//     wikipedia-doclengths.tsv --queries trec05-efficiency.txt --num_docs 25000000 --json out.json
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
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
#include "base/temp_dir.h"
#include "bench/bench_main.h"
#include "cpu/daat_engine.h"
#include "gpu/engine/gpu_engine.h"
#include "index/index.h"
#include "index_builder/synth.h"
#include "workload/query_file.h"
#include "workload/query_split.h"

ABSL_FLAG(std::string, termstats, "", "term statistics (wikipedia-termstats.tsv.gz)");
ABSL_FLAG(std::string, doclengths, "", "document-length histogram (wikipedia-doclengths.tsv)");
ABSL_FLAG(std::string, queries, "", "query log (trec05-efficiency.txt)");
ABSL_FLAG(uint32_t, num_docs, 2'000'000, "documents of the synthetic index");
ABSL_FLAG(double, postings_per_doc, 240, "synth calibration P (0: raw ratios)");
ABSL_FLAG(std::string, codec, "pfor", "index codec");
ABSL_FLAG(std::string, index, "",
          "an index built before (e.g. by tandem-index synth with the same settings) instead of "
          "synthesizing one in the run");
TANDEM_BENCH_SPLIT_FLAGS();
ABSL_FLAG(int, max_queries, 500, "measure the first N chosen queries");
ABSL_FLAG(std::string, modes, "and,or,and_or", "modes to measure");
ABSL_FLAG(std::string, k, "10,1000", "hits per query, a list");
ABSL_FLAG(int, threads, 0, "threads for the throughput runs (0: all cores)");
ABSL_FLAG(std::string, intersect_levels, "-1,0,1,2,3",
          "AND intersection methods to compare (-1 located block, 0-4 merge-find levels)");
ABSL_FLAG(double, cache_fraction, 0.2, "capacity of the small-cache run, fraction of the index");
ABSL_FLAG(size_t, cache_queries, 4000, "the small-cache run's stream: the log's first N queries");

namespace tandem {
namespace {

using nlohmann::json;

bool SameHits(const index::SearchResult& a, const index::SearchResult& b) {
  if (a.hits.size() != b.hits.size()) return false;
  for (size_t i = 0; i < a.hits.size(); ++i) {
    if (a.hits[i].docid != b.hits[i].docid) return false;
    if (std::fabs(a.hits[i].score - b.hits[i].score) > 1e-5f * std::fabs(a.hits[i].score)) {
      return false;
    }
  }
  return true;
}

json LatencyJson(const base::LatencySummary& s) {
  return {{"mean", s.mean * 1e3},
          {"median", s.p50 * 1e3},
          {"p95", s.p95 * 1e3},
          {"p99", s.p99 * 1e3},
          {"max", s.max * 1e3}};
}

// One pass of `queries` through `engine`, one at a time; counts answers that differ from
// `expected` (or fail).
struct Pass {
  base::LatencySummary latency;
  int mismatches = 0;
};
Pass RunPass(const index::Engine& engine, const std::vector<index::Query>& queries,
             const std::vector<index::SearchResult>& expected) {
  std::vector<double> seconds;
  Pass pass;
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto t0 = bench::Clock::now();
    auto r = engine.Search(queries[i], {});
    seconds.push_back(bench::Seconds(t0, bench::Clock::now()));
    if (!r.ok() || !SameHits(expected[i], *r)) ++pass.mismatches;
  }
  pass.latency = base::Summarize(seconds);
  return pass;
}

// Queries per second of `threads` callers sharing the query list.
double Throughput(const index::Engine& engine, const std::vector<index::Query>& queries,
                  int threads, int* errors) {
  std::atomic<int> failed{0};
  const double seconds = bench::ShareOut(queries.size(), threads, [&](int, size_t i) {
    if (!engine.Search(queries[i], {}).ok()) ++failed;
  });
  *errors += failed;
  return queries.size() / seconds;
}

std::vector<index::Query> MakeQueries(const std::vector<std::vector<std::string>>& analyzed,
                                      index::QueryMode mode, uint32_t k) {
  std::vector<index::Query> queries;
  for (const auto& terms : analyzed) {
    index::Query q;
    q.mode = mode;
    q.k = k;
    for (const std::string& t : terms) q.terms.push_back({t, 1.0f});
    queries.push_back(std::move(q));
  }
  return queries;
}

int Run() {
  base::TempDir tmp;
  std::string index_dir = absl::GetFlag(FLAGS_index);
  if (index_dir.empty()) {
    index_builder::SynthOptions synth;
    synth.num_docs = absl::GetFlag(FLAGS_num_docs);
    synth.termstats_path = absl::GetFlag(FLAGS_termstats);
    synth.doclengths_path = absl::GetFlag(FLAGS_doclengths);
    synth.query_files = {absl::GetFlag(FLAGS_queries)};
    synth.postings_per_doc = absl::GetFlag(FLAGS_postings_per_doc);
    synth.codec = absl::GetFlag(FLAGS_codec);
    index_dir = tmp.path() + "/synth";
    auto summary = index_builder::BuildSyntheticIndex(synth, index_dir);
    if (!summary.ok()) return bench::Fail("synth: " + summary.status().ToString());
  }
  auto idx = index::Index::Open(index_dir);
  if (!idx.ok()) return bench::Fail("open " + index_dir + ": " + idx.status().ToString());
  const index::Index& index = **idx;
  const uint64_t num_postings = index.manifest().stats.num_postings;
  const std::string& codec = index.manifest().codec;

  std::vector<uint32_t> ks;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_k), ',', absl::SkipEmpty())) {
    uint32_t k = 0;
    if (!absl::SimpleAtoi(s, &k) || k == 0 || k > index::kMaxK) return bench::Fail("bad --k");
    ks.push_back(k);
  }
  std::vector<int> levels;
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_intersect_levels), ',', absl::SkipEmpty())) {
    int l = 0;
    if (!absl::SimpleAtoi(s, &l)) return bench::Fail("bad --intersect_levels");
    levels.push_back(l);
  }
  std::vector<index::QueryMode> modes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_modes), ',', absl::SkipEmpty())) {
    index::QueryMode mode;
    if (!index::ParseQueryMode(s, &mode)) return bench::Fail("unknown mode " + std::string(s));
    modes.push_back(mode);
  }

  // The pool: queries with at least one index term, in file order; then the chosen split.
  auto records = workload::LoadQueryFile(absl::GetFlag(FLAGS_queries));
  if (!records.ok()) return bench::Fail("queries: " + records.status().ToString());
  std::vector<std::vector<std::string>> pool;
  for (const workload::QueryRecord& r : *records) {
    std::vector<std::string> terms;
    index.analyzer().Analyze(r.text, &terms);
    bool any = false;
    for (const std::string& t : terms) any = any || index.Lookup(t).has_value();
    if (any) pool.push_back(std::move(terms));
  }
  auto part = workload::ParseSplitPart(absl::GetFlag(FLAGS_split));
  if (!part.ok()) return bench::Fail(std::string(part.status().message()));
  std::vector<std::vector<std::string>> analyzed;
  if (*part == workload::SplitPart::kAll) {
    analyzed = pool;
  } else {
    auto split = workload::SplitQueries(pool.size(), absl::GetFlag(FLAGS_seed),
                                        absl::GetFlag(FLAGS_train), absl::GetFlag(FLAGS_eval));
    if (!split.ok()) return bench::Fail(std::string(split.status().message()));
    for (size_t i : *part == workload::SplitPart::kTrain ? split->train : split->eval) {
      analyzed.push_back(pool[i]);
    }
  }
  if (static_cast<int>(analyzed.size()) > absl::GetFlag(FLAGS_max_queries)) {
    analyzed.resize(absl::GetFlag(FLAGS_max_queries));
  }

  auto cpu = cpu::DaatEngine::Create(index);
  if (!cpu.ok()) return bench::Fail("cpu engine: " + cpu.status().ToString());
  gpu::GpuEngineOptions gpu_options;
  gpu_options.preload = true;
  const auto gpu_start = bench::Clock::now();
  auto created = gpu::GpuEngine::Create(index, gpu_options);
  if (!created.ok()) return bench::Fail("gpu engine: " + created.status().ToString());
  std::unique_ptr<gpu::GpuEngine> gpu = *std::move(created);
  const double gpu_setup_s = bench::Seconds(gpu_start, bench::Clock::now());
  const uint64_t index_device_bytes = gpu->cache_stats().bytes_resident;
  const int threads = absl::GetFlag(FLAGS_threads) > 0
                          ? absl::GetFlag(FLAGS_threads)
                          : static_cast<int>(std::thread::hardware_concurrency());

  json out;
  out["machine"] = base::MachineInfo(gpu->device().name);
  out["gpu_name"] = gpu->device().name;
  out["num_docs"] = index.num_docs();
  out["index"] = absl::GetFlag(FLAGS_index).empty() ? "synthesized in the run" : index_dir;
  out["postings"] = num_postings;
  out["codec"] = codec;
  out["split"] = absl::GetFlag(FLAGS_split);
  out["seed"] = absl::GetFlag(FLAGS_seed);
  out["queries"] = analyzed.size();
  out["threads"] = threads;
  out["gpu_setup_seconds"] = gpu_setup_s;
  out["index_device_bytes"] = index_device_bytes;
  std::printf(
      "index: %u docs, %lu postings (%s), %.2f GB on the device; %zu %s queries; GPU %s; "
      "setup %.1f s\n",
      index.num_docs(), static_cast<unsigned long>(num_postings), codec.c_str(),
      index_device_bytes / 1e9, analyzed.size(), absl::GetFlag(FLAGS_split).c_str(),
      gpu->device().name.c_str(), gpu_setup_s);

  // ---- Latency and throughput, CPU vs GPU (radix and heap top-k) ----
  int total_mismatches = 0;
  std::map<std::pair<int, uint32_t>, std::vector<index::SearchResult>> cpu_results;
  std::printf("\n%-7s %5s %9s %9s %9s %9s %9s %9s %8s %9s %9s %7s %9s %9s %5s\n", "mode", "k",
              "cpu_mean", "cpu_p50", "cpu_p99", "gpu_mean", "gpu_p50", "gpu_p99", "speedup",
              "cpu_qps", "gpu_qps", "qps_x", "heap_p50", "radix_p50", "diff");
  for (uint32_t k : ks) {
    for (index::QueryMode mode : modes) {
      const std::string name(index::QueryModeName(mode));
      const std::vector<index::Query> queries = MakeQueries(analyzed, mode, k);
      std::vector<index::SearchResult>& expected = cpu_results[{static_cast<int>(mode), k}];
      std::vector<double> cpu_s;
      int errors = 0;
      for (const index::Query& q : queries) {
        const auto t0 = bench::Clock::now();
        auto c = (*cpu)->Search(q, {});
        cpu_s.push_back(bench::Seconds(t0, bench::Clock::now()));
        if (!c.ok()) ++errors;
        expected.push_back(c.ok() ? *std::move(c) : index::SearchResult{});
      }
      const base::LatencySummary c = base::Summarize(cpu_s);
      // The engine's default top-k (kAuto), then each method alone.
      (void)gpu->SetTuning({});
      (void)RunPass(*gpu, queries, expected);  // warm-up
      const Pass g = RunPass(*gpu, queries, expected);
      (void)gpu->SetTuning({.top_k = gpu::TopKMethod::kMultiLevelHeap});
      const Pass heap = RunPass(*gpu, queries, expected);
      (void)gpu->SetTuning({.top_k = gpu::TopKMethod::kRadixSort});
      const Pass radix = RunPass(*gpu, queries, expected);
      (void)gpu->SetTuning({});
      const double cpu_qps = Throughput(**cpu, queries, threads, &errors);
      const double gpu_qps = Throughput(*gpu, queries, threads, &errors);
      const int mismatches = g.mismatches + heap.mismatches + radix.mismatches + errors;
      total_mismatches += mismatches;
      std::printf(
          "%-7s %5u %7.3fms %7.3fms %7.3fms %7.3fms %7.3fms %7.3fms %7.1fx %9.1f %9.1f "
          "%6.2fx %7.3fms %7.3fms %5d\n",
          name.c_str(), k, c.mean * 1e3, c.p50 * 1e3, c.p99 * 1e3, g.latency.mean * 1e3,
          g.latency.p50 * 1e3, g.latency.p99 * 1e3, c.mean / g.latency.mean, cpu_qps, gpu_qps,
          gpu_qps / cpu_qps, heap.latency.p50 * 1e3, radix.latency.p50 * 1e3, mismatches);
      out["latency"][name][std::to_string(k)] = {{"cpu_ms", LatencyJson(c)},
                                                 {"gpu_ms", LatencyJson(g.latency)},
                                                 {"gpu_heap_top_k_ms", LatencyJson(heap.latency)},
                                                 {"gpu_radix_top_k_ms", LatencyJson(radix.latency)},
                                                 {"mean_speedup", c.mean / g.latency.mean},
                                                 {"median_speedup", c.p50 / g.latency.p50},
                                                 {"cpu_qps", cpu_qps},
                                                 {"gpu_qps", gpu_qps},
                                                 {"throughput_ratio", gpu_qps / cpu_qps},
                                                 {"mismatches", mismatches}};
    }
  }

  // ---- Stage shares (Table 3) ----
  std::printf("\nGPU time by stage (share of the profiled time; mean ms per query)\n%-7s %5s",
              "mode", "k");
  for (int s = 0; s < gpu::kNumGpuStages; ++s) {
    std::printf(" %16s", gpu::GpuStageName(static_cast<gpu::GpuStage>(s)));
  }
  std::printf("\n");
  for (uint32_t k : ks) {
    for (index::QueryMode mode : modes) {
      const std::string name(index::QueryModeName(mode));
      const std::vector<index::Query> queries = MakeQueries(analyzed, mode, k);
      (void)gpu->SetTuning({.profile_stages = true});
      gpu->ResetStageTimes();
      const Pass p = RunPass(*gpu, queries, cpu_results[{static_cast<int>(mode), k}]);
      total_mismatches += p.mismatches;
      const gpu::GpuStageTimes times = gpu->stage_times();
      double total = 0;
      for (double ms : times.ms) total += ms;
      std::printf("%-7s %5u", name.c_str(), k);
      json stages;
      for (int s = 0; s < gpu::kNumGpuStages; ++s) {
        const double share = total > 0 ? times.ms[s] / total : 0;
        const double mean_ms = times.queries > 0 ? times.ms[s] / times.queries : 0;
        std::printf("   %5.1f%% %6.3fms", share * 100, mean_ms);
        stages[gpu::GpuStageName(static_cast<gpu::GpuStage>(s))] = {{"share", share},
                                                                    {"mean_ms", mean_ms}};
      }
      std::printf("\n");
      out["stages"][name][std::to_string(k)] = {
          {"queries", times.queries}, {"by_stage", stages}, {"mismatches", p.mismatches}};
    }
  }
  (void)gpu->SetTuning({});

  // ---- AND intersection: located-block search vs recursive merge-find (section 7) ----
  if (std::find(modes.begin(), modes.end(), index::QueryMode::kAnd) != modes.end()) {
    const uint32_t k = ks.front();
    const std::vector<index::Query> queries = MakeQueries(analyzed, index::QueryMode::kAnd, k);
    const auto& expected = cpu_results[{static_cast<int>(index::QueryMode::kAnd), k}];
    std::printf("\nAND top-%u by intersection method\n%-22s %9s %9s %9s %5s\n", k, "method", "mean",
                "median", "p99", "diff");
    for (int l : levels) {
      if (!gpu->SetTuning({.intersect_levels = l}).ok()) return bench::Fail("bad intersect level");
      (void)RunPass(*gpu, queries, expected);  // warm-up
      const Pass p = RunPass(*gpu, queries, expected);
      total_mismatches += p.mismatches;
      const std::string method =
          l < 0 ? "located-block search" : "merge-find, " + std::to_string(l) + " levels";
      std::printf("%-22s %7.3fms %7.3fms %7.3fms %5d\n", method.c_str(), p.latency.mean * 1e3,
                  p.latency.p50 * 1e3, p.latency.p99 * 1e3, p.mismatches);
      out["and_intersection"][std::to_string(l)] = {
          {"method", method}, {"latency_ms", LatencyJson(p.latency)}, {"mismatches", p.mismatches}};
    }
    (void)gpu->SetTuning({});
  }
  gpu.reset();  // free the device for the cache runs

  // ---- The device cache: cold vs warm, and a small cache's hit rate ----
  {
    const index::QueryMode mode = modes.front();
    const uint32_t k = ks.front();
    const std::string name(index::QueryModeName(mode));
    const std::vector<index::Query> queries = MakeQueries(analyzed, mode, k);
    const auto& expected = cpu_results[{static_cast<int>(mode), k}];
    // A fresh engine with `capacity` bytes of cache (0: the default, the whole index fits), one
    // pass after another over `stream`; each pass reports its own hit rate.
    auto cache_run = [&](const std::string& label, uint64_t capacity,
                         const std::vector<std::vector<index::Query>>& passes,
                         const std::vector<std::vector<index::SearchResult>>& expected_by_pass,
                         const std::vector<std::string>& pass_names) -> absl::Status {
      gpu::GpuEngineOptions options;
      options.cache_bytes = capacity;
      auto engine = gpu::GpuEngine::Create(index, options);
      if (!engine.ok()) return engine.status();
      for (size_t p = 0; p < passes.size(); ++p) {
        const gpu::GpuCacheStats before = (*engine)->cache_stats();
        const Pass pass = RunPass(**engine, passes[p], expected_by_pass[p]);
        const gpu::GpuCacheStats after = (*engine)->cache_stats();
        const uint64_t hits = after.hits - before.hits, misses = after.misses - before.misses;
        const double hit_rate = hits + misses == 0 ? 0 : double(hits) / double(hits + misses);
        total_mismatches += pass.mismatches;
        const std::string run = label + ", " + pass_names[p];
        std::printf(
            "%-44s %5zu %8.3fms %8.3fms %8.3fms %8.1f%% %9lu %5d\n", run.c_str(), passes[p].size(),
            pass.latency.mean * 1e3, pass.latency.p50 * 1e3, pass.latency.p99 * 1e3, hit_rate * 100,
            static_cast<unsigned long>(after.evictions - before.evictions), pass.mismatches);
        out["cache"][label][pass_names[p]] = {
            {"queries", passes[p].size()},
            {"latency_ms", LatencyJson(pass.latency)},
            {"hits", hits},
            {"misses", misses},
            {"hit_rate", hit_rate},
            {"bytes_copied", after.bytes_copied - before.bytes_copied},
            {"evictions", after.evictions - before.evictions},
            {"mismatches", pass.mismatches}};
      }
      out["cache"][label]["capacity_bytes"] = (*engine)->cache_stats().capacity_bytes;
      return absl::OkStatus();
    };
    std::printf("\ndevice cache, %s top-%u\n%-44s %5s %10s %10s %10s %9s %9s %5s\n", name.c_str(),
                k, "run", "n", "mean", "median", "p99", "hit_rate", "evictions", "diff");
    absl::Status s = cache_run("full-size cache", 0, {queries, queries}, {expected, expected},
                               {"cold (first pass)", "warm (second pass)"});
    // The small cache serves a longer stream, the first --cache_queries queries of the log in
    // file order (the measured queries alone fit in a fifth of the index), in two halves: the
    // second shows the steady-state hit rate.
    const size_t stream_length = std::min<size_t>(pool.size(), absl::GetFlag(FLAGS_cache_queries));
    std::vector<std::vector<std::string>> stream_terms(pool.begin(), pool.begin() + stream_length);
    const std::vector<index::Query> stream = MakeQueries(stream_terms, mode, k);
    std::vector<index::SearchResult> stream_expected;
    for (const index::Query& q : stream) {
      auto c = (*cpu)->Search(q, {});
      stream_expected.push_back(c.ok() ? *std::move(c) : index::SearchResult{});
    }
    const size_t half = stream.size() / 2;
    const double fraction = absl::GetFlag(FLAGS_cache_fraction);
    const std::string small = std::to_string(static_cast<int>(fraction * 100 + 0.5)) + "% cache";
    if (s.ok()) {
      s = cache_run(
          small, static_cast<uint64_t>(fraction * static_cast<double>(index_device_bytes)),
          {{stream.begin(), stream.begin() + half}, {stream.begin() + half, stream.end()}},
          {{stream_expected.begin(), stream_expected.begin() + half},
           {stream_expected.begin() + half, stream_expected.end()}},
          {"log stream, first half (from cold)", "log stream, second half"});
    }
    if (!s.ok()) return bench::Fail("cache run: " + s.ToString());
    out["cache"]["mode"] = name;
    out["cache"]["k"] = k;
    out["cache"]["index_device_bytes"] = index_device_bytes;
  }

  out["all_equal"] = total_mismatches == 0;
  return base::FinishCheckedRun(total_mismatches, out, absl::GetFlag(FLAGS_json));
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(
    tandem::Run, "tandem-bench-gpu-query",
    "[--index DIR | --docs N ...] --queries FILE [--json FILE]",
    "the GPU engine beside the CPU engine on a synthetic index, every answer compared.");
