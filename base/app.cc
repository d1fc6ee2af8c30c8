#include "base/app.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/version.h"

namespace tandem::base {
namespace {

std::string Dashed(absl::string_view name) { return absl::StrReplaceAll(name, {{"_", "-"}}); }
std::string Underscored(absl::string_view name) { return absl::StrReplaceAll(name, {{"-", "_"}}); }

// abseil's parse error reads "Illegal value 'x' specified for flag 'name'; why": keep the why.
std::string Reason(const std::string& error, absl::string_view value) {
  const size_t semicolon = error.find("; ");
  if (semicolon != std::string::npos) return error.substr(semicolon + 2);
  return absl::StrCat("invalid value '", value, "'");
}

absl::Status FlagError(absl::string_view written, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("--", written, ": ", why));
}

// Wraps `text` to `width` columns, each line after `indent` spaces.
std::string Wrap(absl::string_view text, size_t indent, size_t width) {
  std::string out;
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && indent + line.size() + 1 + word.size() > width) {
      absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(&out, std::string(indent, ' '), line, "\n");
  return out;
}

}  // namespace

absl::StatusOr<ParsedCommandLine> ParseArgs(const std::vector<std::string>& args) {
  ParsedCommandLine parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--") {
      parsed.positional.insert(parsed.positional.end(), args.begin() + i + 1, args.end());
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.positional.push_back(arg);
      continue;
    }
    absl::string_view body = absl::string_view(arg).substr(arg[1] == '-' ? 2 : 1);
    const size_t equals = body.find('=');
    const absl::string_view written = body.substr(0, equals);
    const bool has_value = equals != absl::string_view::npos;
    const std::string name = Underscored(written);
    if (!has_value && (name == "help" || name == "h")) {
      parsed.action = CommandLineAction::kHelp;
      return parsed;
    }
    if (!has_value && name == "helpfull") {
      parsed.action = CommandLineAction::kHelpFull;
      return parsed;
    }
    if (!has_value && name == "version") {
      parsed.action = CommandLineAction::kVersion;
      return parsed;
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    std::string value;
    if (flag == nullptr && !has_value && absl::StartsWith(name, "no")) {
      // --noflag for a boolean flag.
      absl::CommandLineFlag* negated = absl::FindCommandLineFlag(name.substr(2));
      if (negated != nullptr && negated->IsOfType<bool>()) {
        flag = negated;
        value = "false";
      }
    }
    if (flag == nullptr || flag->IsRetired()) {
      return FlagError(written, "unknown flag (--helpfull lists every flag)");
    }
    if (has_value) {
      value = std::string(body.substr(equals + 1));
    } else if (value.empty() && flag->IsOfType<bool>()) {
      value = "true";
    } else if (value.empty()) {
      if (i + 1 == args.size()) return FlagError(written, "needs a value");
      value = args[++i];
    }
    std::string error;
    if (!flag->ParseFrom(value, &error)) return FlagError(written, Reason(error, value));
  }
  return parsed;
}

std::string HelpText(const AppInfo& app, bool full) {
  // abseil reports a flag's file without its leading slashes.
  auto strip = [](absl::string_view file) {
    file.remove_prefix(std::min(file.find_first_not_of("/\\"), file.size()));
    return file;
  };
  std::vector<absl::string_view> own_files = {strip(app.main_file)};
  for (const std::string& file : app.shared_files) own_files.push_back(strip(file));
  std::vector<std::pair<std::string, absl::CommandLineFlag*>> own;
  std::vector<std::pair<std::string, absl::CommandLineFlag*>> others;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (flag->IsRetired()) continue;
    if (std::find(own_files.begin(), own_files.end(), flag->Filename()) == own_files.end()) {
      others.emplace_back(std::string(name), flag);
    } else if (full || !absl::StartsWith(name, "testing_")) {
      own.emplace_back(std::string(name), flag);
    }
  }
  std::sort(own.begin(), own.end());
  std::sort(others.begin(), others.end());
  auto append = [](std::string& out, const std::string& name, const absl::CommandLineFlag& flag) {
    const std::string default_value = flag.DefaultValue();
    absl::StrAppend(&out, "  --", Dashed(name),
                    default_value.empty() ? "" : absl::StrCat(" (default: ", default_value, ")"),
                    "\n", Wrap(flag.Help(), 6, 100));
  };
  std::string out = absl::StrCat(app.usage, "\n\nFlags (written --name=value or --name value):\n");
  for (const auto& [name, flag] : own) append(out, name, *flag);
  if (!full) {
    absl::StrAppend(&out,
                    "\n--helpfull also lists the expert and tuning flags; --version prints the "
                    "version.\n");
    return out;
  }
  // The groups' flags in the order the groups name them, then the rest.
  for (const FlagGroup& group : app.groups) {
    absl::StrAppend(&out, "\n", group.title, ":\n");
    for (const std::string& written : group.flags) {
      const std::string name = Underscored(written);
      auto it = std::find_if(others.begin(), others.end(),
                             [&](const auto& other) { return other.first == name; });
      if (it == others.end()) continue;
      append(out, it->first, *it->second);
      others.erase(it);
    }
  }
  if (!others.empty()) absl::StrAppend(&out, "\nOther flags:\n");
  for (const auto& [name, flag] : others) append(out, name, *flag);
  return out;
}

std::vector<std::string> ParseCommandLineOrExit(int argc, char** argv, const AppInfo& app) {
  const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  absl::StatusOr<ParsedCommandLine> parsed = ParseArgs(args);
  if (!parsed.ok()) {
    std::fprintf(stderr, "%s: %s\n", app.name.c_str(),
                 std::string(parsed.status().message()).c_str());
    std::exit(2);
  }
  switch (parsed->action) {
    case CommandLineAction::kHelp:
    case CommandLineAction::kHelpFull:
      std::fputs(HelpText(app, parsed->action == CommandLineAction::kHelpFull).c_str(), stdout);
      std::exit(0);
    case CommandLineAction::kVersion:
      std::printf("%s %s (commit %s)\n", app.name.c_str(), base::Version(), base::Commit());
      std::exit(0);
    case CommandLineAction::kRun:
      break;
  }
  return std::move(parsed->positional);
}

void ParseFlagsOrExit(int argc, char** argv, const AppInfo& app) {
  const std::vector<std::string> positional = ParseCommandLineOrExit(argc, argv, app);
  if (positional.empty()) return;
  std::fprintf(stderr, "%s: unexpected argument '%s' (see --help)\n", app.name.c_str(),
               positional[0].c_str());
  std::exit(2);
}

bool AbslParseFlag(absl::string_view text, CountOrAuto* value, std::string* error) {
  if (text == "auto") {
    value->count.reset();
    return true;
  }
  uint32_t count = 0;
  if (!absl::SimpleAtoi(text, &count)) {
    *error = absl::StrCat("must be auto or a number >= 0, got '", text, "'");
    return false;
  }
  value->count = count;
  return true;
}

std::string AbslUnparseFlag(const CountOrAuto& value) {
  return value.count.has_value() ? absl::StrCat(*value.count) : "auto";
}

}  // namespace tandem::base
