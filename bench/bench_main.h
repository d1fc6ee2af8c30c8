// File: bench_main.h
//
// What every benchmark program shares: its command line (base/app.h), the line it fails with, and
// its clock. The usage is built from what every benchmark states: its name, what it measures and
// how it is called. --help prints
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

#include <chrono>

#include "absl/strings/string_view.h"
#include "base/app.h"

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

using Clock = std::chrono::steady_clock;

// Seconds from `a` to `b`.
double Seconds(Clock::time_point a, Clock::time_point b);

}  // namespace tandem::bench
