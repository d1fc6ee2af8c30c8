// File: filter_bench.cc
//
// tandem-bench-filter: what a filter costs. On an index with a synthetic attribute column
// (`tandem-index synth --attribute-columns sel:100`: 100 values drawn uniformly), filters of the
// form `sel IN (v00, ..., vNN)` allow 50%, 10% and 1% of the documents (--selectivities). For
// each, the time to evaluate it on the compressed bitmaps on the CPU (filter::EvaluateFilter) and
// on the GPU (gpu::GpuFilterEvaluator: wall time with the compression and copy back, and its
// kernel time; the bitmaps must be equal), and the latency of the same queries unfiltered and
// filtered on the CPU engine and on the GPU engine: one query at a time, each query's two forms
// back to back so that both see the same machine (each first in turn), the filter cached by each
// engine after its first use as a server's recurring filter is. Mean and p50, their ratio, and
// every GPU answer checked against the CPU's.
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "bench/bench_main.h"
#include "cpu/daat_engine.h"
#include "filter/filter.h"
#include "gpu/bitmaps/filter_eval.h"
#include "gpu/device/device.h"
#include "gpu/engine/gpu_engine.h"
#include "index/index.h"
#include "nlohmann/json.hpp"
#include "workload/query_set.h"

ABSL_FLAG(std::string, index, "",
          "index directory with an attribute column (tandem-index synth "
          "--attribute-columns sel:100)");
ABSL_FLAG(std::string, queries, "", "query log (trec05-efficiency.txt)");
ABSL_FLAG(std::string, field, "sel", "the attribute column of 100 uniform values");
ABSL_FLAG(std::string, selectivities, "50,10,1", "percent of the documents each filter allows");
ABSL_FLAG(int, max_queries, 500, "queries measured (the log's first, with an index term)");
ABSL_FLAG(std::string, modes, "and,or", "modes to measure");
ABSL_FLAG(uint32_t, k, 10, "hits per query");
ABSL_FLAG(bool, gpu, true, "also measure the GPU engine (when a device is present)");

namespace tandem {
namespace {

using json = nlohmann::json;

struct Latency {
  double mean_ms = 0, p50_ms = 0;
};

// Runs every query unfiltered and filtered (a warm-up pass of both first), query by query, the two
// forms back to back so that both see the same machine (each first in turn), and returns both
// latencies and the filtered answers.
struct PairedLatency {
  Latency plain, filtered;
};
absl::StatusOr<PairedLatency> MeasurePaired(const index::Engine& engine,
                                            const std::vector<index::Query>& plain,
                                            const std::vector<index::Query>& filtered,
                                            std::vector<std::vector<index::Hit>>* answers) {
  for (const std::vector<index::Query>* queries : {&plain, &filtered}) {
    for (const index::Query& q : *queries) {
      auto warm = engine.Search(q, {});
      if (!warm.ok()) return warm.status();
    }
  }
  std::vector<double> plain_seconds, filtered_seconds;
  answers->clear();
  answers->resize(plain.size());
  for (size_t i = 0; i < plain.size(); ++i) {
    // Either form first in turn: the second runs with the first's lists in the caches.
    for (const bool run_filtered : {i % 2 == 1, i % 2 == 0}) {
      const absl::Time start = absl::Now();
      auto result = engine.Search(run_filtered ? filtered[i] : plain[i], {});
      (run_filtered ? filtered_seconds : plain_seconds)
          .push_back(absl::ToDoubleSeconds(absl::Now() - start));
      if (!result.ok()) return result.status();
      if (run_filtered) (*answers)[i] = std::move(result->hits);
    }
  }
  const base::LatencySummary p = base::Summarize(plain_seconds);
  const base::LatencySummary f = base::Summarize(filtered_seconds);
  return PairedLatency{{p.mean * 1e3, p.p50 * 1e3}, {f.mean * 1e3, f.p50 * 1e3}};
}

int Main() {
  auto opened = index::Index::Open(absl::GetFlag(FLAGS_index));
  if (!opened.ok()) return bench::Fail(opened.status().ToString());
  const index::Index& idx = **opened;
  const filter::AttributeIndex* attributes = idx.attributes();
  if (attributes == nullptr) return bench::Fail("the index stores no attributes");
  const filter::AttributeField* field = attributes->Find(absl::GetFlag(FLAGS_field));
  if (field == nullptr || field->cardinality() != 100) {
    return bench::Fail("the index needs a keyword column of 100 values named --field");
  }
  std::vector<index::QueryMode> modes;
  for (absl::string_view s : absl::StrSplit(absl::GetFlag(FLAGS_modes), ',', absl::SkipEmpty())) {
    index::QueryMode mode;
    if (!index::ParseQueryMode(s, &mode)) return bench::Fail("unknown mode " + std::string(s));
    modes.push_back(mode);
  }
  std::vector<int> percents;
  for (absl::string_view s :
       absl::StrSplit(absl::GetFlag(FLAGS_selectivities), ',', absl::SkipEmpty())) {
    int p = 0;
    if (!absl::SimpleAtoi(s, &p) || p < 1 || p > 100)
      return bench::Fail("bad --selectivities entry");
    percents.push_back(p);
  }
  workload::QuerySelection selection;
  selection.part = workload::SplitPart::kAll;
  selection.limit = static_cast<size_t>(absl::GetFlag(FLAGS_max_queries));
  auto analyzed = workload::SelectQueries(absl::GetFlag(FLAGS_queries), idx, selection);
  if (!analyzed.ok()) return bench::Fail(analyzed.status().ToString());

  auto cpu = cpu::DaatEngine::Create(idx);
  if (!cpu.ok()) return bench::Fail(cpu.status().ToString());
  std::unique_ptr<gpu::GpuEngine> gpu_engine;
  std::string gpu_name = "none";
  if (absl::GetFlag(FLAGS_gpu)) {
    if (auto device = gpu::ProbeDevice(); device.ok()) {
      auto created = gpu::GpuEngine::Create(idx, {.preload = true});
      if (!created.ok()) return bench::Fail(created.status().ToString());
      gpu_engine = *std::move(created);
      gpu_name = device->name;
    }
  }
  std::unique_ptr<gpu::GpuFilterEvaluator> gpu_filters;
  if (gpu_engine) {
    auto created = gpu::GpuFilterEvaluator::Create(*attributes);
    if (!created.ok()) return bench::Fail(created.status().ToString());
    gpu_filters = *std::move(created);
  }
  std::printf("%s: %u documents, %zu queries, k = %u, GPU %s\n\n", idx.directory().c_str(),
              idx.num_docs(), analyzed->size(), absl::GetFlag(FLAGS_k), gpu_name.c_str());
  std::printf("%-4s %6s %9s %9s %9s %9s | %9s %9s %6s | %9s %9s %6s %s\n", "mode", "allow", "docs",
              "eval ms", "GPU eval", "kernel", "CPU ms", "filtered", "ratio", "GPU ms", "filtered",
              "ratio", "check");
  json rows = json::array();
  int mismatches = 0;
  for (index::QueryMode mode : modes) {
    std::vector<index::Query> plain;
    for (const workload::AnalyzedQuery& a : *analyzed) {
      index::Query q;
      for (const std::string& t : a.terms) q.terms.push_back({t, 1.0f});
      q.terms = index::MergeRepeatedTerms(q.terms);
      q.mode = mode;
      q.k = absl::GetFlag(FLAGS_k);
      plain.push_back(std::move(q));
    }
    for (int percent : percents) {
      std::vector<std::string> values;
      for (int v = 0; v < percent; ++v) values.push_back(absl::StrFormat("v%02d", v));
      const filter::FilterNode filter = filter::FilterNode::In(field->name, values);
      std::vector<double> eval_seconds;
      std::shared_ptr<const filter::Bitmap> docs;
      for (int i = 0; i < 5; ++i) {
        const absl::Time start = absl::Now();
        auto evaluated = filter::EvaluateFilter(filter, *attributes);
        eval_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
        if (!evaluated.ok()) return bench::Fail(evaluated.status().ToString());
        docs = std::make_shared<const filter::Bitmap>(*std::move(evaluated));
      }
      std::sort(eval_seconds.begin(), eval_seconds.end());
      // The same filter evaluated on the device: the same bitmap, and how long it takes.
      std::vector<double> gpu_eval_seconds, gpu_kernel_ms;
      bool gpu_eval_same = true;
      for (int i = 0; gpu_filters && i < 5; ++i) {
        gpu::FilterEvalTimes times;
        const absl::Time start = absl::Now();
        auto evaluated = gpu_filters->Evaluate(filter, &times);
        gpu_eval_seconds.push_back(absl::ToDoubleSeconds(absl::Now() - start));
        gpu_kernel_ms.push_back(times.evaluate_ms);
        if (!evaluated.ok()) return bench::Fail(evaluated.status().ToString());
        gpu_eval_same = gpu_eval_same && evaluated->words() == docs->words();
      }
      std::sort(gpu_eval_seconds.begin(), gpu_eval_seconds.end());
      std::sort(gpu_kernel_ms.begin(), gpu_kernel_ms.end());
      const double gpu_eval_ms = gpu_filters ? gpu_eval_seconds[2] * 1e3 : 0;
      const double gpu_eval_kernel_ms = gpu_filters ? gpu_kernel_ms[2] : 0;
      mismatches += gpu_eval_same ? 0 : 1;
      std::vector<index::Query> filtered = plain;
      for (index::Query& q : filtered) q.filter = docs;
      std::vector<std::vector<index::Hit>> cpu_hits, gpu_hits;
      auto cpu_pair = MeasurePaired(**cpu, plain, filtered, &cpu_hits);
      if (!cpu_pair.ok()) return bench::Fail(cpu_pair.status().ToString());
      const Latency* cpu_plain = &cpu_pair->plain;
      const Latency* cpu_filtered = &cpu_pair->filtered;
      PairedLatency gpu_pair;
      bool same = true;
      if (gpu_engine) {
        auto measured = MeasurePaired(*gpu_engine, plain, filtered, &gpu_hits);
        if (!measured.ok()) return bench::Fail(measured.status().ToString());
        gpu_pair = *measured;
        same = gpu_hits == cpu_hits;
        mismatches += same ? 0 : 1;
      }
      const Latency* gpu_plain = &gpu_pair.plain;
      const Latency* gpu_filtered = &gpu_pair.filtered;
      const double cpu_ratio = cpu_filtered->mean_ms / cpu_plain->mean_ms;
      const double gpu_ratio = gpu_engine ? gpu_filtered->mean_ms / gpu_plain->mean_ms : 0;
      std::printf(
          "%-4s %5d%% %9llu %9.3f %9.3f %9.3f | %9.3f %9.3f %6.2f | %9.3f %9.3f %6.2f %s%s\n",
          std::string(index::QueryModeName(mode)).c_str(), percent,
          static_cast<unsigned long long>(docs->Count()), eval_seconds[2] * 1e3, gpu_eval_ms,
          gpu_eval_kernel_ms, cpu_plain->mean_ms, cpu_filtered->mean_ms, cpu_ratio,
          gpu_plain->mean_ms, gpu_filtered->mean_ms, gpu_ratio,
          gpu_engine ? (same ? "same hits" : "MISMATCH") : "",
          gpu_eval_same ? "" : ", GPU bitmap DIFFERS");
      rows.push_back(json{
          {"mode", index::QueryModeName(mode)},
          {"percent_allowed", percent},
          {"documents_allowed", docs->Count()},
          {"filter_words", docs->words().size()},
          {"evaluate_ms_median", eval_seconds[2] * 1e3},
          {"filter_columns", percent},
          {"filter_column_words",
           filter::FilterProgramWords(*filter::CompileFilter(filter, *attributes), *attributes)},
          {"gpu_evaluate_ms_median", gpu_eval_ms},
          {"gpu_evaluate_kernel_ms_median", gpu_eval_kernel_ms},
          {"gpu_evaluate_equals_cpu", gpu_eval_same},
          {"cpu_mean_ms", cpu_plain->mean_ms},
          {"cpu_p50_ms", cpu_plain->p50_ms},
          {"cpu_filtered_mean_ms", cpu_filtered->mean_ms},
          {"cpu_filtered_p50_ms", cpu_filtered->p50_ms},
          {"gpu_mean_ms", gpu_plain->mean_ms},
          {"gpu_p50_ms", gpu_plain->p50_ms},
          {"gpu_filtered_mean_ms", gpu_filtered->mean_ms},
          {"gpu_filtered_p50_ms", gpu_filtered->p50_ms},
          {"gpu_equals_cpu", same}});
    }
  }
  if (mismatches > 0) std::printf("\n%d GPU runs did NOT match the CPU engine\n", mismatches);
  base::WriteJson(absl::GetFlag(FLAGS_json), {{"benchmark", "filter"},
                                              {"machine", base::MachineInfo(gpu_name)},
                                              {"index", idx.directory()},
                                              {"documents", idx.num_docs()},
                                              {"queries", analyzed->size()},
                                              {"k", absl::GetFlag(FLAGS_k)},
                                              {"rows", rows},
                                              {"mismatches", mismatches}});
  return mismatches == 0 ? 0 : 2;
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Main, "tandem-bench-filter", "--index DIR --queries FILE [--json FILE]",
                  "filtered against unfiltered queries at 50%, 10% and 1% selectivity "
                  "on the CPU and GPU engines, every GPU answer checked.");
