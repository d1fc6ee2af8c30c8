#include "bench/bench_main.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace tandem::bench {

base::AppInfo BenchApp(const char* main_file, const BenchInfo& info) {
  return {.name = info.name,
          .usage = absl::StrCat(info.name, ": ", info.measures, "\n  ", info.name, " ", info.call),
          .main_file = main_file};
}

int Main(int argc, char** argv, const char* main_file, int (*run)(), const BenchInfo& info) {
  base::ParseCommandLineOrExit(argc, argv, BenchApp(main_file, info));
  return run();
}

}  // namespace tandem::bench
