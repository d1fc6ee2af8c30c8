#include "bench/bench_main.h"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "workload/query_split.h"

ABSL_FLAG(std::string, json, "", "write the results here (JSON)");

namespace tandem::bench {
namespace {

// The running benchmark's name, for Fail: set once, while the command line is parsed.
const char* program_name = "tandem-bench";

}  // namespace

base::AppInfo BenchApp(const char* main_file, const BenchInfo& info) {
  program_name = info.name;
  return {.name = info.name,
          .usage = absl::StrCat(info.name, ": ", info.measures, "\n  ", info.name, " ", info.call),
          .main_file = main_file,
          .shared_files = {__FILE__}};
}

int Main(int argc, char** argv, const char* main_file, int (*run)(), const BenchInfo& info) {
  base::ParseCommandLineOrExit(argc, argv, BenchApp(main_file, info));
  return run();
}

int Fail(absl::string_view what) {
  std::fprintf(stderr, "%s: %.*s\n", program_name, static_cast<int>(what.size()), what.data());
  return 1;
}

absl::StatusOr<std::vector<workload::AnalyzedQuery>> SelectQueries(const index::Index& index,
                                                                   const QueryFlags& flags) {
  absl::StatusOr<workload::SplitPart> part = workload::ParseSplitPart(absl::GetFlag(flags.split));
  if (!part.ok()) return part.status();
  absl::StatusOr<std::vector<workload::AnalyzedQuery>> selected = workload::SelectQueries(
      absl::GetFlag(flags.queries), index,
      {.part = *part,
       .seed = absl::GetFlag(flags.seed),
       .train = absl::GetFlag(flags.train),
       .eval = absl::GetFlag(flags.eval),
       .limit = static_cast<size_t>(std::max(0, absl::GetFlag(flags.max_queries)))});
  if (!selected.ok()) {
    return absl::Status(selected.status().code(),
                        absl::StrCat("queries: ", selected.status().ToString()));
  }
  return selected;
}

double ShareOut(size_t n, int callers, const std::function<void(int caller, size_t i)>& work) {
  std::atomic<size_t> next{0};
  const Clock::time_point start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < callers; ++c) {
    threads.emplace_back([&, c] {
      for (size_t i = next++; i < n; i = next++) work(c, i);
    });
  }
  for (std::thread& t : threads) t.join();
  return Seconds(start, Clock::now());
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace tandem::bench
