// File: app.h
//
// The command line of every Tandem program (PISA's tools/app.hpp): flags are written with dashes,
// as the docs write them (--metrics-listen; abseil names that flag metrics_listen), and
//   --help       prints the program's usage and the flags an operator sets: those defined in its
//                main file (and its shared files), with their defaults; flags named testing_* are
//                left out,
//   --helpfull   prints those, then every other flag linked in: the program's expert and tuning
//                flags (defined in a second file of the program, so that --help leaves them out)
//                under the titles of their groups, then any others,
//   --version    prints the version and the commit it was built from.
// A flag that is unknown, lacks its value or does not parse is reported in one line naming the
// flag as the user wrote it ("tandem-server: --tune-gpu-wait: must be auto, spin, yield or
// blocking, got 'sleep'"), and the program exits 2. Enum-like flags parse through AbslParseFlag,
// which gives the reason.
//
//   int main(int argc, char** argv) {
//     std::vector<std::string> args = base::ParseCommandLineOrExit(
//         argc, argv, {.name = "tandem-index", .usage = "tandem-index build|inspect|lookup ...",
//                      .main_file = __FILE__, .groups = ExpertFlagGroups()});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::base {

// Flags that --helpfull lists together under a title, each group one owner's (the scheduler's,
// the GPU engine's, the request limits).
struct FlagGroup {
  std::string title;               // "Scheduler"
  std::vector<std::string> flags;  // as written on the command line: "tune-max-wait"
};

struct AppInfo {
  std::string name;       // "tandem-server"
  std::string usage;      // what --help prints before the flags: what it does, how to call it
  std::string main_file;  // __FILE__ of the file that defines the flags --help lists
  std::vector<FlagGroup> groups;  // --helpfull's sections after the main file's flags
  // __FILE__ of more files whose flags --help lists with the main file's: a library's flags that
  // every program of a kind has (bench/bench_main.cc's --json).
  std::vector<std::string> shared_files;
};

enum class CommandLineAction { kRun, kHelp, kHelpFull, kVersion };

struct ParsedCommandLine {
  CommandLineAction action = CommandLineAction::kRun;
  std::vector<std::string> positional;  // in order; everything after "--" included
};

// Sets the flags named in `args` (argv without argv[0]) and returns the positional arguments, or
// INVALID_ARGUMENT naming the flag. Stops at --help, --helpfull and --version.
absl::StatusOr<ParsedCommandLine> ParseArgs(const std::vector<std::string>& args);

// The text --help (full: --helpfull) prints.
std::string HelpText(const AppInfo& app, bool full);

// ParseArgs on argv; prints help or the version and exits 0, or prints the error and exits 2.
std::vector<std::string> ParseCommandLineOrExit(int argc, char** argv, const AppInfo& app);

// The same for a program that takes no positional argument: one is reported as "NAME: unexpected
// argument 'ARG' (see --help)", and the program exits 2.
void ParseFlagsOrExit(int argc, char** argv, const AppInfo& app);

// A flag value that is a count or "auto" (the program's own choice).
struct CountOrAuto {
  std::optional<uint32_t> count;  // nothing: auto
};
bool AbslParseFlag(absl::string_view text, CountOrAuto* value, std::string* error);
std::string AbslUnparseFlag(const CountOrAuto& value);

}  // namespace tandem::base
