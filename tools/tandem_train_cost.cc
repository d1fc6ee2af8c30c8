// tandem-train-cost: trains the scheduler's cost model on the machine it will run on (Ding et al.
// 2009, section 9: M5 rules over shortest list, second-shortest, sum of lengths and terms, here
// plus mode, k, the GPU cache fraction and the filter's selectivity).
//
// The pool is the query file's queries with at least one index term; index/query_split.h splits
// it, by --seed, into disjoint training and evaluation queries (--train-fraction of the first
// --max-queries). Every query runs in every --modes x --k configuration on the CPU engine (one
// thread) and, when there is one, the GPU engine: once untimed (so lists are decoded, cached and
// paged in), then --repeat timed runs whose median is the sample. The rules are trained on the
// training samples; the table and the JSON give each engine's mean relative error on the
// evaluation samples beside the heuristic's. With --filters (a file of filter texts, one per
// line, index/filter.h's grammar), query i of each configuration carries filter i mod (F + 1),
// where 0 is no filter, so the rules learn what a filter's selectivity costs. The model file
// (cost_model_file.h) keeps the rules, the figures and the training samples for the server's live
// refinement.
//
//   tandem-train-cost --index /srv/tandem/gov2like --queries trec05-efficiency.txt
//       --out /srv/tandem/cost-model.txt --json cost-model-report.json
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "base/app.h"
#include "base/bench_util.h"
#include "base/status_macros.h"
#include "cost_model/cost_model_file.h"
#include "cost_model/cost_training.h"
#include "filter/filter.h"
#include "index/index.h"
#include "index/prepared_query.h"
#include "server/engine_factory.h"
#include "workload/query_set.h"
#include "workload/query_split.h"

ABSL_FLAG(std::string, index, "", "index directory");
ABSL_FLAG(std::string, queries, "", "query log (id:query, id:priority:query, TSV or one per line)");
ABSL_FLAG(double, train_fraction, 0.75, "share of the chosen queries used for training");
ABSL_FLAG(uint64_t, max_queries, 4000, "queries drawn from the pool (0: the whole pool)");
ABSL_FLAG(uint64_t, seed, tandem::workload::kDefaultSplitSeed, "seed of the train/eval split");
ABSL_FLAG(std::string, modes, "and,or", "query modes to time (and, or, and_or)");
ABSL_FLAG(std::string, k, "10,1000", "values of k to time");
ABSL_FLAG(std::string, gpu, "auto", "GPU engine: auto, off or required");
ABSL_FLAG(uint64_t, gpu_cache_bytes, 0, "GPU device cache size (0: the engine's default)");
ABSL_FLAG(int, repeat, 3, "timed runs per query and configuration (the median is kept)");
ABSL_FLAG(std::string, space, "log", "feature space of the rules: log or linear");
ABSL_FLAG(bool, smooth, true, "smooth the rules' models along their tree paths (Quinlan's k = 15)");
ABSL_FLAG(uint64_t, train_limit, 0,
          "time only the first N training queries of the split, in file order (0: all)");
ABSL_FLAG(uint64_t, eval_limit, 0,
          "evaluate on the first N evaluation queries of the split, in file order (0: all)");
ABSL_FLAG(std::string, eval_queries_out, "",
          "write the whole evaluation split here as id:query lines (for tandem-loadgen)");
ABSL_FLAG(std::string, filters, "",
          "a file of filter texts, one per line: the queries take turns with each filter and "
          "with none");
ABSL_FLAG(std::string, out, "", "write the model file here");
ABSL_FLAG(std::string, json, "", "write the results here");

namespace tandem::cost_model {
namespace {

using Clock = std::chrono::steady_clock;

int Fail(absl::string_view message) {
  std::fprintf(stderr, "tandem-train-cost: %s\n", std::string(message).c_str());
  return 1;
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

// One engine's samples over `queries`: a warm-up run, then the median of `repeat` timed runs.
absl::StatusOr<std::vector<CostSample>> Measure(const index::Engine& engine,
                                                const std::vector<index::Query>& queries,
                                                const index::Index& idx,
                                                const ResidentFractionFn& resident, int repeat) {
  std::vector<CostSample> samples;
  samples.reserve(queries.size());
  std::vector<double> ms(repeat);
  for (const index::Query& query : queries) {
    // Prepared once, as the node prepares a query at admission: the timed runs are the engine's.
    TANDEM_ASSIGN_OR_RETURN(index::PreparedQuery q, index::PreparedQuery::Prepare(idx, query));
    if (absl::StatusOr<index::SearchResult> warm = engine.Search(q, {}); !warm.ok()) {
      return warm.status();
    }
    CostSample s;
    s.features = ComputeFeatures(q, resident);
    for (int r = 0; r < repeat; ++r) {
      const Clock::time_point t0 = Clock::now();
      absl::StatusOr<index::SearchResult> result = engine.Search(q, {});
      ms[r] = Seconds(t0) * 1e3;
      if (!result.ok()) return result.status();
    }
    std::nth_element(ms.begin(), ms.begin() + repeat / 2, ms.end());
    s.ms = ms[repeat / 2];
    samples.push_back(s);
  }
  return samples;
}

std::vector<CostSample> OfMode(const std::vector<CostSample>& samples, index::QueryMode mode) {
  std::vector<CostSample> out;
  for (const CostSample& s : samples) {
    if (s.features.mode == static_cast<double>(mode)) out.push_back(s);
  }
  return out;
}

double Mean(const std::vector<CostSample>& samples) {
  double sum = 0;
  for (const CostSample& s : samples) sum += s.ms;
  return samples.empty() ? 0 : sum / static_cast<double>(samples.size());
}

nlohmann::json Figure(double v) { return std::isnan(v) ? nlohmann::json() : nlohmann::json(v); }
std::string Percent(double v) { return std::isnan(v) ? "-" : absl::StrFormat("%.1f%%", 100 * v); }

int Run() {
  const int repeat = absl::GetFlag(FLAGS_repeat);
  const double fraction = absl::GetFlag(FLAGS_train_fraction);
  if (absl::GetFlag(FLAGS_index).empty() || absl::GetFlag(FLAGS_queries).empty()) {
    return Fail("--index and --queries are required (--help lists the flags)");
  }
  if (repeat < 1) return Fail("--repeat must be at least 1");
  if (!(fraction > 0 && fraction < 1)) return Fail("--train-fraction must lie between 0 and 1");
  absl::StatusOr<FeatureSpace> space = ParseFeatureSpace(absl::GetFlag(FLAGS_space));
  if (!space.ok()) return Fail(space.status().message());
  std::vector<index::QueryMode> modes;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_modes), ',')) {
    index::QueryMode m;
    if (!index::ParseQueryMode(name, &m)) return Fail(absl::StrCat("unknown mode '", name, "'"));
    modes.push_back(m);
  }
  std::vector<uint32_t> ks;
  for (absl::string_view text : absl::StrSplit(absl::GetFlag(FLAGS_k), ',')) {
    uint32_t k;
    if (!absl::SimpleAtoi(text, &k) || k < 1 || k > index::kMaxK) {
      return Fail(absl::StrCat("bad --k value '", text, "'"));
    }
    ks.push_back(k);
  }
  server::EngineOptions engine_options;
  engine_options.gpu_batch = false;  // each query timed alone, on the per-query path
  const std::string gpu_flag = absl::GetFlag(FLAGS_gpu);
  if (gpu_flag == "off") {
    engine_options.gpu = server::GpuMode::kOff;
  } else if (gpu_flag == "required") {
    engine_options.gpu = server::GpuMode::kRequired;
  } else if (gpu_flag != "auto") {
    return Fail("--gpu must be auto, off or required");
  }
  engine_options.gpu_cache_bytes = absl::GetFlag(FLAGS_gpu_cache_bytes);

  absl::StatusOr<std::unique_ptr<index::Index>> opened =
      index::Index::Open(absl::GetFlag(FLAGS_index));
  if (!opened.ok()) return Fail(opened.status().message());
  const index::Index& idx = **opened;
  absl::StatusOr<std::vector<workload::AnalyzedQuery>> read =
      workload::LoadQuerySet(absl::GetFlag(FLAGS_queries), idx.analyzer());
  if (!read.ok()) return Fail(read.status().message());
  std::vector<const workload::AnalyzedQuery*> pool;
  for (const workload::AnalyzedQuery& q : *read) {
    const bool known = std::any_of(q.terms.begin(), q.terms.end(), [&idx](const std::string& t) {
      return idx.Lookup(t).has_value();
    });
    if (known) pool.push_back(&q);
  }
  const uint64_t max_queries = absl::GetFlag(FLAGS_max_queries);
  const size_t chosen = max_queries == 0 ? pool.size() : std::min<size_t>(pool.size(), max_queries);
  const size_t train_n = static_cast<size_t>(std::llround(fraction * static_cast<double>(chosen)));
  if (train_n == 0 || train_n == chosen) {
    return Fail(absl::StrCat(pool.size(), " queries have an index term: too few to split"));
  }
  absl::StatusOr<workload::QuerySplit> split =
      workload::SplitQueries(pool.size(), absl::GetFlag(FLAGS_seed), train_n, chosen - train_n);
  if (!split.ok()) return Fail(split.status().message());
  if (const std::string path = absl::GetFlag(FLAGS_eval_queries_out); !path.empty()) {
    std::ofstream eval_file(path);
    for (size_t i : split->eval) {
      eval_file << pool[i]->id << ":" << pool[i]->text << "\n";
    }
    eval_file.close();
    if (!eval_file) return Fail(absl::StrCat("cannot write ", path));
  }
  // The limits keep the split itself (and so the evaluation queries other tools draw with the
  // same seed and sizes) unchanged; they only time fewer of its queries.
  auto limit = [](std::vector<size_t>& positions, uint64_t n) {
    if (n != 0 && positions.size() > n) positions.resize(n);
  };
  limit(split->train, absl::GetFlag(FLAGS_train_limit));
  limit(split->eval, absl::GetFlag(FLAGS_eval_limit));

  // Filters the queries take turns with; the first slot is no filter.
  std::vector<std::shared_ptr<const filter::Bitmap>> filters = {nullptr};
  std::vector<std::string> filter_texts;
  if (const std::string path = absl::GetFlag(FLAGS_filters); !path.empty()) {
    if (idx.attributes() == nullptr) {
      return Fail(absl::StrCat("--filters needs an index with attributes; ", idx.directory(),
                               " has none (tandem-index build --attributes)"));
    }
    std::ifstream in(path);
    if (!in) return Fail(absl::StrCat("cannot open --filters file ", path));
    std::string line;
    for (int number = 1; std::getline(in, line); ++number) {
      if (absl::StripAsciiWhitespace(line).empty() || absl::StartsWith(line, "#")) continue;
      absl::StatusOr<filter::FilterNode> node = filter::ParseFilter(line);
      absl::StatusOr<filter::Bitmap> docs =
          node.ok() ? filter::EvaluateFilter(*node, *idx.attributes()) : node.status();
      if (!docs.ok()) {
        return Fail(absl::StrCat(path, ": line ", number, ": ", docs.status().message()));
      }
      filter_texts.push_back(line);
      filters.push_back(std::make_shared<const filter::Bitmap>(*std::move(docs)));
    }
    if (filter_texts.empty()) return Fail(absl::StrCat(path, " holds no filter"));
    for (size_t f = 0; f < filter_texts.size(); ++f) {
      std::printf("filter %zu allows %.2f%% of the documents: %s\n", f + 1,
                  100.0 * filter::FilterSelectivity(*filters[f + 1]), filter_texts[f].c_str());
    }
  }

  absl::StatusOr<server::EngineSet> engines = server::CreateEngines(idx, engine_options);
  if (!engines.ok()) return Fail(engines.status().message());
  std::printf("%s\n", engines->summary.c_str());
  if (!engines->gpu) std::printf("no GPU engine: training the CPU model only\n");
  const ResidentFractionFn resident = engines->gpu_resident_fraction;

  auto queries_of = [&](const std::vector<size_t>& positions) {
    std::vector<index::Query> out;
    for (index::QueryMode mode : modes) {
      for (uint32_t k : ks) {
        for (size_t n = 0; n < positions.size(); ++n) {
          const size_t i = positions[n];
          index::Query q;
          q.mode = mode;
          q.k = k;
          q.filter = filters[n % filters.size()];
          for (const std::string& t : pool[i]->terms) q.terms.push_back({t, 1.0f});
          out.push_back(std::move(q));
        }
      }
    }
    return out;
  };
  const std::vector<index::Query> train_queries = queries_of(split->train);
  const std::vector<index::Query> eval_queries = queries_of(split->eval);
  std::printf(
      "%zu queries read, %zu with an index term; %zu training and %zu evaluation queries, "
      "%zu configurations, %d timed runs each\n",
      read->size(), pool.size(), split->train.size(), split->eval.size(), modes.size() * ks.size(),
      repeat);

  CostModelFile file;
  file.space = *space;
  const nlohmann::json machine =
      base::MachineInfo(engines->gpu ? engines->gpu_name : "none (CPU engine)");
  file.metadata = {{"machine", absl::StrCat(machine["host"].get<std::string>(), ": ",
                                            machine["cpu"].get<std::string>(), ", ",
                                            machine["cores"].get<unsigned>(), " cores")},
                   {"gpu", machine["gpu"].get<std::string>()},
                   {"date", machine["time"].get<std::string>()},
                   {"commit", machine["commit"].get<std::string>()},
                   {"index", absl::StrCat(idx.directory(), " (", idx.num_docs(), " documents)")},
                   {"queries", absl::GetFlag(FLAGS_queries)},
                   {"train_queries", absl::StrCat(split->train.size())},
                   {"eval_queries", absl::StrCat(split->eval.size())},
                   {"seed", absl::StrCat(absl::GetFlag(FLAGS_seed))},
                   {"modes", absl::GetFlag(FLAGS_modes)},
                   {"k", absl::GetFlag(FLAGS_k)},
                   {"repeat", absl::StrCat(repeat)},
                   {"filters", absl::StrCat(filter_texts.size())}};
  nlohmann::json out = {{"benchmark", "cost_model"},
                        {"machine", machine},
                        {"index",
                         {{"path", idx.directory()},
                          {"documents", idx.num_docs()},
                          {"postings", idx.stats().num_postings}}},
                        {"queries",
                         {{"file", absl::GetFlag(FLAGS_queries)},
                          {"read", read->size()},
                          {"pool", pool.size()},
                          {"train", split->train.size()},
                          {"eval", split->eval.size()},
                          {"seed", absl::GetFlag(FLAGS_seed)}}},
                        {"modes", absl::GetFlag(FLAGS_modes)},
                        {"k", absl::GetFlag(FLAGS_k)},
                        {"repeat", repeat},
                        {"filters", filter_texts},
                        {"space", std::string(FeatureSpaceName(*space))},
                        {"smooth", absl::GetFlag(FLAGS_smooth)},
                        {"engines", nlohmann::json::object()}};

  std::printf("\n%-6s %-7s %7s %7s %6s %12s %12s %10s\n", "engine", "mode", "train", "eval",
              "rules", "MRE model", "MRE heur.", "mean ms");
  for (Processor p : {Processor::kCpu, Processor::kGpu}) {
    const index::Engine* engine = p == Processor::kCpu ? engines->cpu.get() : engines->gpu.get();
    if (engine == nullptr) continue;
    // The GPU cache fraction says nothing about CPU times: the CPU samples hold 1.
    const ResidentFractionFn& fraction_fn = p == Processor::kGpu ? resident : ResidentFractionFn();
    const Clock::time_point t0 = Clock::now();
    absl::StatusOr<std::vector<CostSample>> train =
        Measure(*engine, train_queries, idx, fraction_fn, repeat);
    if (!train.ok()) return Fail(absl::StrCat(ProcessorName(p), ": ", train.status().message()));
    absl::StatusOr<std::vector<CostSample>> eval =
        Measure(*engine, eval_queries, idx, fraction_fn, repeat);
    if (!eval.ok()) return Fail(absl::StrCat(ProcessorName(p), ": ", eval.status().message()));
    const double timing_s = Seconds(t0);
    const Clock::time_point t1 = Clock::now();
    M5Options m5;
    m5.smooth = absl::GetFlag(FLAGS_smooth);
    absl::StatusOr<M5Rules> rules = TrainCostRules(*train, *space, m5);
    if (!rules.ok()) return Fail(rules.status().message());
    const double training_s = Seconds(t1);

    EngineCostRecord& record = file.engine(p);
    record.rules = std::make_shared<const M5Rules>(*std::move(rules));
    record.trained_samples = train->size();
    record.evaluated_samples = eval->size();
    auto model_ms = [&](const QueryFeatures& f) { return PredictMs(*record.rules, *space, f); };
    auto heuristic_ms = [p](const QueryFeatures& f) { return HeuristicMs(f, p); };
    record.mean_relative_error = MeanRelativeError(model_ms, *eval);
    record.heuristic_relative_error = MeanRelativeError(heuristic_ms, *eval);
    record.samples = ThinSamples(*train, kMaxFileSamples);

    nlohmann::json e = {{"train_samples", train->size()},
                        {"eval_samples", eval->size()},
                        {"rules", record.rules->rules().size()},
                        {"mean_relative_error", Figure(record.mean_relative_error)},
                        {"heuristic_mean_relative_error", Figure(record.heuristic_relative_error)},
                        {"eval_mean_ms", Mean(*eval)},
                        {"timing_seconds", timing_s},
                        {"training_seconds", training_s},
                        {"by_mode", nlohmann::json::object()}};
    std::printf("%-6s %-7s %7zu %7zu %6zu %12s %12s %10.4f\n",
                std::string(ProcessorName(p)).c_str(), "all", train->size(), eval->size(),
                record.rules->rules().size(), Percent(record.mean_relative_error).c_str(),
                Percent(record.heuristic_relative_error).c_str(), Mean(*eval));
    for (index::QueryMode mode : modes) {
      const std::vector<CostSample> of_mode = OfMode(*eval, mode);
      const double model_error = MeanRelativeError(model_ms, of_mode);
      const double heuristic_error = MeanRelativeError(heuristic_ms, of_mode);
      const std::string name(index::QueryModeName(mode));
      e["by_mode"][name] = {{"eval_samples", of_mode.size()},
                            {"mean_relative_error", Figure(model_error)},
                            {"heuristic_mean_relative_error", Figure(heuristic_error)},
                            {"eval_mean_ms", Mean(of_mode)}};
      std::printf("%-6s %-7s %7s %7zu %6s %12s %12s %10.4f\n", "", name.c_str(), "", of_mode.size(),
                  "", Percent(model_error).c_str(), Percent(heuristic_error).c_str(),
                  Mean(of_mode));
    }
    out["engines"][std::string(ProcessorName(p))] = e;
  }
  std::printf(
      "\nmean relative error = mean |predicted - measured| / measured over the evaluation "
      "runs (Ding et al. 2009 report 22%% on the GPU)\n");

  if (!absl::GetFlag(FLAGS_out).empty()) {
    if (absl::Status s = WriteCostModelFile(file, absl::GetFlag(FLAGS_out)); !s.ok()) {
      return Fail(s.message());
    }
    std::printf("model written to %s\n", absl::GetFlag(FLAGS_out).c_str());
    out["model_file"] = absl::GetFlag(FLAGS_out);
  }
  if (!absl::GetFlag(FLAGS_json).empty()) {
    std::ofstream json(absl::GetFlag(FLAGS_json));
    json << out.dump(2) << "\n";
    if (!json) return Fail(absl::StrCat("cannot write ", absl::GetFlag(FLAGS_json)));
  }
  return 0;
}

}  // namespace
}  // namespace tandem::cost_model

int main(int argc, char** argv) {
  tandem::base::ParseFlagsOrExit(
      argc, argv,
      {.name = "tandem-train-cost",
       .usage = "tandem-train-cost trains the scheduler's cost model (M5 rules per engine) from "
                "measured query times.\n"
                "  tandem-train-cost --index DIR --queries FILE --out MODEL [--json FILE] [--gpu "
                "auto|off|"
                "required]\n"
                "      [--modes and,or] [--k 10,1000] [--train-fraction 0.75] [--max-queries 4000] "
                "[--seed "
                "1]\n"
                "      [--repeat 3] [--space log|linear] [--nosmooth] [--filters FILE]",
       .main_file = __FILE__});
  return tandem::cost_model::Run();
}
