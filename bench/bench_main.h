// File: bench_main.h
//
// What every benchmark program shares: its command line (base/app.h), the line it fails with, and
// its clock. The usage is built from what every benchmark states: its name, what it measures and
// how it is called. --help prints
//
//   tandem-bench-gpu-cold: cold and warm GPU query latency, ...
//     tandem-bench-gpu-cold --index DIR --queries FILE [--json FILE]
//
// and the flags defined in the program's main file, and --json FILE, where every benchmark writes
// its results (base::WriteJson). A benchmark's main is
//
//   TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-gpu-cold", "--index DIR --queries FILE ...",
//                     "cold and warm GPU query latency, ...");
//
// A benchmark that measures a query log's queries defines --queries and --max-queries in its main
// file, and --split, --seed, --train and --eval there with TANDEM_BENCH_SPLIT_FLAGS(), and chooses
// them with SelectQueries.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "base/app.h"
#include "index/index.h"
#include "workload/query_set.h"
#include "workload/query_split.h"

// Where the benchmark writes its results as JSON; empty: nowhere.
ABSL_DECLARE_FLAG(std::string, json);

// Defines main(): Main with the flags of the file it stands in. `run` is the benchmark's int().
#define TANDEM_BENCH_MAIN(run, name, call, measures)                                 \
  int main(int argc, char** argv) {                                                  \
    return ::tandem::bench::Main(argc, argv, __FILE__, run, {name, call, measures}); \
  }

namespace tandem::bench {

struct BenchInfo {
  const char* name;      // "tandem-bench-gpu-cold"
  const char* call;      // its arguments: "--index DIR --queries FILE [--json FILE]"
  const char* measures;  // what it measures, a sentence without the name
};

// The AppInfo of a benchmark whose flags are defined in `main_file`; names the program for Fail.
base::AppInfo BenchApp(const char* main_file, const BenchInfo& info);

// base::ParseCommandLineOrExit with BenchApp(main_file, info), then run()'s exit status.
int Main(int argc, char** argv, const char* main_file, int (*run)(), const BenchInfo& info);

// "NAME: WHAT" on stderr, NAME the program's (BenchInfo); returns 1, the exit status of a run that
// could not be made.
int Fail(absl::string_view what);

// Defines --split, --seed, --train and --eval in the file it stands in, as the benchmark's own
// flags.
#define TANDEM_BENCH_SPLIT_FLAGS()                                       \
  ABSL_FLAG(std::string, split, "eval",                                  \
            "all (file order), train or eval (workload/query_split.h)"); \
  ABSL_FLAG(uint64_t, seed, ::tandem::workload::kDefaultSplitSeed,       \
            "seed of the train/eval split");                             \
  ABSL_FLAG(uint64_t, train, ::tandem::workload::kDefaultTrainQueries,   \
            "training queries of the split");                            \
  ABSL_FLAG(uint64_t, eval, ::tandem::workload::kDefaultEvalQueries,     \
            "evaluation queries of the split")

// The flags that choose a benchmark's queries from a log (workload::SelectQueries).
struct QueryFlags {
  const absl::Flag<std::string>& queries;  // the log
  const absl::Flag<std::string>& split;    // all (file order), train or eval
  const absl::Flag<uint64_t>& seed;        // of the train/eval split
  const absl::Flag<uint64_t>& train;       // training queries of the split
  const absl::Flag<uint64_t>& eval;        // evaluation queries of the split
  const absl::Flag<int>& max_queries;      // the first N chosen (0 or less: all)
};

// The queries of the log that `flags` choose, each with an index term; the error's message is the
// line to fail with.
absl::StatusOr<std::vector<workload::AnalyzedQuery>> SelectQueries(const index::Index& index,
                                                                   const QueryFlags& flags);

using Clock = std::chrono::steady_clock;

// Calls work(caller, i) for every i in [0, n) on `callers` threads, each taking the next i in turn;
// returns the seconds from the start to the last return.
double ShareOut(size_t n, int callers, const std::function<void(int caller, size_t i)>& work);

// Seconds from `a` to `b`.
double Seconds(Clock::time_point a, Clock::time_point b);

}  // namespace tandem::bench
