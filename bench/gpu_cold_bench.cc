// tandem-bench-gpu-cold: what a list's first use costs the GPU engine. For the same queries, a
// fresh engine (empty device cache) answers them once (cold: every list loaded at first use) and
// again (warm), with lists transcoded on the host at first use and with lists copied from the
// layouts stored beside the index (gpu_layouts.bin, `tandem-index gpu-layouts`), each with and
// without the batch path's search forms (which the cache then also builds per list). One query at a
// time, per-query path; every answer compared with the CPU engine's. Prints a table and writes JSON
// with the machine, the commit and the GPU.
//
//   tandem-index gpu-layouts DIR
//   tandem-bench-gpu-cold --index DIR --queries trec05-efficiency.txt --json out.json
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "bench/bench_main.h"
#include "cpu/daat_engine.h"
#include "gpu/engine/gpu_engine.h"
#include "gpu/layouts/stored_layouts.h"
#include "index/index.h"
#include "nlohmann/json.hpp"
#include "workload/query_set.h"
#include "workload/query_split.h"

ABSL_FLAG(std::string, index, "", "index directory (required; with gpu_layouts.bin)");
ABSL_FLAG(std::string, queries, "", "query log (trec05-efficiency.txt; required)");
ABSL_FLAG(std::string, split, "eval", "all (file order), train or eval (workload/query_split.h)");
ABSL_FLAG(int, max_queries, 500, "the first N chosen queries");
ABSL_FLAG(std::string, mode, "and", "query mode");
ABSL_FLAG(uint32_t, k, 10, "hits per query");

namespace tandem {
namespace {

using nlohmann::json;

struct Pass {
  base::LatencySummary latency;
  int mismatches = 0;
  double seconds = 0;
};

Pass RunPass(const gpu::GpuEngine& gpu, const std::vector<index::Query>& queries,
             const std::vector<absl::StatusOr<index::SearchResult>>& expected) {
  Pass pass;
  std::vector<double> seconds;
  const auto start = bench::Clock::now();
  for (size_t i = 0; i < queries.size(); ++i) {
    const auto t0 = bench::Clock::now();
    absl::StatusOr<index::SearchResult> got = gpu.Search(queries[i], {});
    seconds.push_back(bench::Seconds(t0, bench::Clock::now()));
    const bool same = got.ok() && expected[i].ok() ? got->hits == expected[i]->hits
                                                   : got.ok() == expected[i].ok();
    pass.mismatches += !same;
  }
  pass.seconds = bench::Seconds(start, bench::Clock::now());
  pass.latency = base::Summarize(seconds);
  return pass;
}

int Run() {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  auto idx = index::Index::Open(absl::GetFlag(FLAGS_index));
  if (!idx.ok()) return bench::Fail("open index: " + idx.status().ToString());
  const index::Index& index = **idx;
  index::QueryMode mode;
  if (!index::ParseQueryMode(absl::GetFlag(FLAGS_mode), &mode)) return bench::Fail("bad --mode");
  auto part = workload::ParseSplitPart(absl::GetFlag(FLAGS_split));
  if (!part.ok()) return bench::Fail(std::string(part.status().message()));
  auto selected = workload::SelectQueries(
      absl::GetFlag(FLAGS_queries), index,
      {.part = *part, .limit = static_cast<size_t>(std::max(1, absl::GetFlag(FLAGS_max_queries)))});
  if (!selected.ok()) return bench::Fail("queries: " + selected.status().ToString());
  std::vector<index::Query> queries;
  for (const workload::AnalyzedQuery& a : *selected) {
    index::Query q;
    q.mode = mode;
    q.k = absl::GetFlag(FLAGS_k);
    for (const std::string& t : a.terms) q.terms.push_back({t, 1.0f});
    queries.push_back(std::move(q));
  }
  auto cpu = cpu::DaatEngine::Create(index);
  if (!cpu.ok()) return bench::Fail(cpu.status().ToString());
  std::vector<absl::StatusOr<index::SearchResult>> expected;
  for (const index::Query& q : queries) expected.push_back((*cpu)->Search(q, {}));
  auto stored =
      gpu::StoredGpuLayouts::Open(index.directory() + "/" + gpu::kStoredLayoutsFile, index);
  if (!stored.ok()) return bench::Fail("stored layouts: " + stored.status().ToString());

  json out;
  out["benchmark"] = "gpu_cold";
  out["index"] = {{"path", index.directory()},
                  {"documents", index.num_docs()},
                  {"postings", index.stats().num_postings},
                  {"codec", index.manifest().codec}};
  out["queries"] = {{"count", queries.size()},
                    {"split", absl::GetFlag(FLAGS_split)},
                    {"mode", absl::GetFlag(FLAGS_mode)},
                    {"k", absl::GetFlag(FLAGS_k)}};
  std::printf("%-40s %5s %9s %9s %9s %9s %10s %5s\n", "run", "n", "mean_ms", "p50_ms", "p99_ms",
              "misses", "MB copied", "diff");
  int total_mismatches = 0;
  std::string gpu_name;
  for (bool forms : {false, true}) {
    for (bool use_stored : {false, true}) {
      gpu::GpuEngineOptions options;
      options.stored_layouts = use_stored;
      options.batch.enabled = forms;  // the cache then builds each list's search form too
      auto engine = gpu::GpuEngine::Create(index, options);
      if (!engine.ok()) return bench::Fail(engine.status().ToString());
      gpu_name = (*engine)->device().name;
      const std::string label = std::string(use_stored ? "stored layouts" : "transcoded") +
                                (forms ? ", search forms" : "");
      for (const char* pass_name : {"cold", "warm"}) {
        const gpu::GpuCacheStats before = (*engine)->cache_stats();
        const Pass pass = RunPass(**engine, queries, expected);
        const gpu::GpuCacheStats after = (*engine)->cache_stats();
        total_mismatches += pass.mismatches;
        const std::string run = label + ", " + pass_name;
        std::printf("%-40s %5zu %9.3f %9.3f %9.3f %9lu %10.1f %5d\n", run.c_str(), queries.size(),
                    pass.latency.mean * 1e3, pass.latency.p50 * 1e3, pass.latency.p99 * 1e3,
                    static_cast<unsigned long>(after.misses - before.misses),
                    (after.bytes_copied - before.bytes_copied) / 1e6, pass.mismatches);
        out["runs"][label][pass_name] = {{"mean_ms", pass.latency.mean * 1e3},
                                         {"p50_ms", pass.latency.p50 * 1e3},
                                         {"p95_ms", pass.latency.p95 * 1e3},
                                         {"p99_ms", pass.latency.p99 * 1e3},
                                         {"max_ms", pass.latency.max * 1e3},
                                         {"misses", after.misses - before.misses},
                                         {"bytes_copied", after.bytes_copied - before.bytes_copied},
                                         {"mismatches", pass.mismatches}};
      }
    }
  }
  out["machine"] = base::MachineInfo(gpu_name);
  out["all_equal"] = total_mismatches == 0;
  return base::FinishCheckedRun(total_mismatches, out, absl::GetFlag(FLAGS_json));
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-gpu-cold", "--index DIR --queries FILE [--json FILE]",
                  "cold and warm GPU query latency, lists transcoded at first use vs "
                  "copied from stored layouts, every answer checked.");
