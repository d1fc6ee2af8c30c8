// tandem-bench-gpu-query: the GPU engine beside the CPU engine on a synthetic web-scale index built
// inside the run (index_builder/synth.h, as `tandem-index synth`), over a TREC-05-like query log.
// Every query runs through both engines; results must be equal (same documents and order, scores
// within 1e-5 relative). Prints per-mode latency and throughput ratios and writes JSON with the
// machine, the commit and the GPU.
//
//   tandem-bench-gpu-query --termstats wikipedia-termstats.tsv.gz --doclengths
//     wikipedia-doclengths.tsv --queries trec05-efficiency.txt --num_docs 2000000 --json out.json
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "bench/bench_util.h"
#include "cpu/daat_engine.h"
#include "gpu/gpu_engine.h"
#include "index/index.h"
#include "index/query_file.h"
#include "index_builder/synth.h"
#include "tests/test_collection.h"

ABSL_FLAG(std::string, termstats, "", "term statistics (wikipedia-termstats.tsv.gz)");
ABSL_FLAG(std::string, doclengths, "", "document-length histogram (wikipedia-doclengths.tsv)");
ABSL_FLAG(std::string, queries, "", "query log (trec05-efficiency.txt)");
ABSL_FLAG(uint32_t, num_docs, 2'000'000, "documents of the synthetic index");
ABSL_FLAG(double, postings_per_doc, 240, "synth calibration P (0: raw ratios)");
ABSL_FLAG(std::string, codec, "pfor", "index codec");
ABSL_FLAG(int, max_queries, 2000, "first N queries with at least one index term");
ABSL_FLAG(std::string, modes, "and,or", "modes to measure");
ABSL_FLAG(uint32_t, k, 10, "hits per query");
ABSL_FLAG(int, threads, 0, "threads for the throughput runs (0: all cores)");
ABSL_FLAG(std::string, top_k, "radix", "GPU top-k: radix or heap");
ABSL_FLAG(std::string, json, "", "write results here");

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

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

// Queries per second of `threads` callers sharing the query list.
double Throughput(const index::Engine& engine, const std::vector<index::Query>& queries,
                  int threads, std::atomic<int>* errors) {
  std::atomic<size_t> next{0};
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (size_t i = next++; i < queries.size(); i = next++) {
        if (!engine.Search(queries[i], {}).ok()) ++*errors;
      }
    });
  }
  for (std::thread& th : pool) th.join();
  return queries.size() / Seconds(start, Clock::now());
}

int Run() {
  testing::TempDir tmp;
  index_builder::SynthOptions synth;
  synth.num_docs = absl::GetFlag(FLAGS_num_docs);
  synth.termstats_path = absl::GetFlag(FLAGS_termstats);
  synth.doclengths_path = absl::GetFlag(FLAGS_doclengths);
  synth.query_files = {absl::GetFlag(FLAGS_queries)};
  synth.postings_per_doc = absl::GetFlag(FLAGS_postings_per_doc);
  synth.codec = absl::GetFlag(FLAGS_codec);
  auto summary = index_builder::BuildSyntheticIndex(synth, tmp.path() + "/synth");
  if (!summary.ok()) {
    std::fprintf(stderr, "synth: %s\n", summary.status().ToString().c_str());
    return 1;
  }
  auto idx = index::Index::Open(tmp.path() + "/synth");
  if (!idx.ok()) {
    std::fprintf(stderr, "open: %s\n", idx.status().ToString().c_str());
    return 1;
  }
  const index::Index& index = **idx;
  auto cpu = cpu::DaatEngine::Create(index);
  gpu::GpuEngineOptions gpu_options;
  gpu_options.preload = true;
  gpu_options.top_k = absl::GetFlag(FLAGS_top_k) == "heap" ? gpu::TopKMethod::kMultiLevelHeap
                                                            : gpu::TopKMethod::kRadixSort;
  const auto gpu_start = Clock::now();
  auto gpu = gpu::GpuEngine::Create(index, gpu_options);
  if (!cpu.ok() || !gpu.ok()) {
    std::fprintf(stderr, "engines: %s\n", gpu.status().ToString().c_str());
    return 1;
  }
  const double gpu_setup_s = Seconds(gpu_start, Clock::now());
  const int threads = absl::GetFlag(FLAGS_threads) > 0
                          ? absl::GetFlag(FLAGS_threads)
                          : static_cast<int>(std::thread::hardware_concurrency());

  auto records = index::LoadQueryFile(absl::GetFlag(FLAGS_queries));
  if (!records.ok()) {
    std::fprintf(stderr, "queries: %s\n", records.status().ToString().c_str());
    return 1;
  }
  std::vector<std::vector<std::string>> analyzed;
  for (const index::QueryRecord& r : *records) {
    if (static_cast<int>(analyzed.size()) >= absl::GetFlag(FLAGS_max_queries)) break;
    std::vector<std::string> terms;
    index.analyzer().Analyze(r.text, &terms);
    bool any = false;
    for (const std::string& t : terms) any = any || index.Lookup(t).has_value();
    if (any) analyzed.push_back(std::move(terms));
  }

  nlohmann::json out;
  out["machine"] = bench::MachineInfo((*gpu)->device().name);
  out["gpu_name"] = (*gpu)->device().name;
  out["num_docs"] = index.num_docs();
  out["postings"] = summary->postings;
  out["codec"] = synth.codec;
  out["queries"] = analyzed.size();
  out["k"] = absl::GetFlag(FLAGS_k);
  out["top_k"] = absl::GetFlag(FLAGS_top_k);
  out["threads"] = threads;
  out["gpu_setup_seconds"] = gpu_setup_s;
  std::printf("index: %u docs, %lu postings (%s); %zu queries; k=%u; GPU %s; setup %.2f s\n",
              index.num_docs(), static_cast<unsigned long>(summary->postings),
              synth.codec.c_str(), analyzed.size(), absl::GetFlag(FLAGS_k),
              (*gpu)->device().name.c_str(), gpu_setup_s);
  std::printf("%-7s %10s %10s %10s %10s %8s %11s %11s %8s %9s\n", "mode", "cpu_mean", "gpu_mean",
              "cpu_p99", "gpu_p99", "speedup", "cpu_qps", "gpu_qps", "qps_x", "mismatch");
  int total_mismatches = 0;
  const std::vector<std::string> mode_names =
      absl::StrSplit(absl::GetFlag(FLAGS_modes), ',', absl::SkipEmpty());
  for (const std::string& mode_name : mode_names) {
    index::QueryMode mode;
    if (!index::ParseQueryMode(mode_name, &mode)) {
      std::fprintf(stderr, "unknown mode %s\n", mode_name.c_str());
      return 1;
    }
    std::vector<index::Query> queries;
    for (const auto& terms : analyzed) {
      index::Query q;
      q.mode = mode;
      q.k = absl::GetFlag(FLAGS_k);
      for (const std::string& t : terms) q.terms.push_back({t, 1.0f});
      queries.push_back(std::move(q));
    }
    std::vector<double> cpu_s, gpu_s;
    int mismatches = 0, errors = 0;
    for (const index::Query& q : queries) (void)(*gpu)->Search(q, {});  // warm-up
    for (const index::Query& q : queries) {
      auto t0 = Clock::now();
      auto c = (*cpu)->Search(q, {});
      auto t1 = Clock::now();
      auto g = (*gpu)->Search(q, {});
      auto t2 = Clock::now();
      cpu_s.push_back(Seconds(t0, t1));
      gpu_s.push_back(Seconds(t1, t2));
      if (!c.ok() || !g.ok()) {
        ++errors;
      } else if (!SameHits(*c, *g)) {
        ++mismatches;
      }
    }
    std::atomic<int> throughput_errors{0};
    const double cpu_qps = Throughput(**cpu, queries, threads, &throughput_errors);
    const double gpu_qps = Throughput(**gpu, queries, threads, &throughput_errors);
    const bench::LatencySummary c = bench::Summarize(cpu_s);
    const bench::LatencySummary g = bench::Summarize(gpu_s);
    total_mismatches += mismatches + errors + throughput_errors;
    std::printf("%-7s %8.3fms %8.3fms %8.3fms %8.3fms %7.2fx %11.1f %11.1f %7.2fx %4d/%d\n",
                mode_name.c_str(), c.mean * 1e3, g.mean * 1e3, c.p99 * 1e3, g.p99 * 1e3,
                c.mean / g.mean, cpu_qps, gpu_qps, gpu_qps / cpu_qps, mismatches + errors,
                static_cast<int>(queries.size()));
    out["modes"][mode_name] = {
        {"cpu_latency_ms", {{"mean", c.mean * 1e3}, {"p50", c.p50 * 1e3}, {"p95", c.p95 * 1e3},
                            {"p99", c.p99 * 1e3}, {"max", c.max * 1e3}}},
        {"gpu_latency_ms", {{"mean", g.mean * 1e3}, {"p50", g.p50 * 1e3}, {"p95", g.p95 * 1e3},
                            {"p99", g.p99 * 1e3}, {"max", g.max * 1e3}}},
        {"latency_speedup", c.mean / g.mean},
        {"cpu_qps", cpu_qps},
        {"gpu_qps", gpu_qps},
        {"throughput_ratio", gpu_qps / cpu_qps},
        {"mismatches", mismatches},
        {"errors", errors + throughput_errors.load()}};
  }
  const gpu::GpuCacheStats cache = (*gpu)->cache_stats();
  out["gpu_cache"] = {{"hits", cache.hits},          {"misses", cache.misses},
                      {"bytes_resident", cache.bytes_resident},
                      {"bytes_copied", cache.bytes_copied},
                      {"evictions", cache.evictions}, {"capacity_bytes", cache.capacity_bytes}};
  out["all_equal"] = total_mismatches == 0;
  std::printf("results equal: %s; cache %lu lists resident, %.1f MB\n",
              total_mismatches == 0 ? "yes" : "NO", static_cast<unsigned long>(cache.lists_resident),
              cache.bytes_resident / 1e6);
  if (!absl::GetFlag(FLAGS_json).empty()) {
    std::ofstream(absl::GetFlag(FLAGS_json)) << out.dump(2) << "\n";
  }
  return total_mismatches == 0 ? 0 : 2;
}

}  // namespace
}  // namespace tandem

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return tandem::Run();
}
