// File: bench_main.h
//
// The command line of a benchmark program (base/app.h), its usage built from what every benchmark
// states: its name, what it measures and how it is called. --help prints
//
//   tandem-bench-gpu-cold: cold and warm GPU query latency, ...
//     tandem-bench-gpu-cold --index DIR --queries FILE [--json FILE]
//
// and the flags defined in the program's main file. A benchmark's main is
//
//   int main(int argc, char** argv) {
//     return tandem::bench::Main(argc, argv, __FILE__, tandem::Run,
//                                {"tandem-bench-gpu-cold", "--index DIR --queries FILE ...",
//                                 "cold and warm GPU query latency, ..."});
//   }
#pragma once

#include "base/app.h"

namespace tandem::bench {

struct BenchInfo {
  const char* name;      // "tandem-bench-gpu-cold"
  const char* call;      // its arguments: "--index DIR --queries FILE [--json FILE]"
  const char* measures;  // what it measures, a sentence without the name
};

// The AppInfo of a benchmark whose flags are defined in `main_file`.
base::AppInfo BenchApp(const char* main_file, const BenchInfo& info);

// base::ParseCommandLineOrExit with BenchApp(main_file, info), then run()'s exit status.
int Main(int argc, char** argv, const char* main_file, int (*run)(), const BenchInfo& info);

}  // namespace tandem::bench
