// File: command_line.h
//
// absl flag names are C identifiers (--metrics_listen); Tandem's commands document them with dashes
// (--metrics-listen). DashedFlags rewrites the dashes inside flag names to underscores before
// absl::ParseCommandLine, stopping at "--"; flag values and positional arguments are left alone.
//
//   tandem::tools::DashedFlags flags(argc, argv);
//   std::vector<char*> positional = absl::ParseCommandLine(flags.argc(), flags.argv());
//
// Header-only so every binary can use it without linking the index library. Keep the object alive
// while the positional arguments (which point into it) are used.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace tandem::tools {

class DashedFlags {
 public:
  DashedFlags(int argc, char** argv) : args_(argv, argv + argc) {
    for (size_t i = 1; i < args_.size(); ++i) {
      std::string& arg = args_[i];
      if (arg == "--") break;
      if (arg.size() < 3 || arg[0] != '-') continue;
      const size_t name_begin = arg[1] == '-' ? 2 : 1;
      const size_t name_end = std::min(arg.find('='), arg.size());
      std::replace(arg.begin() + name_begin, arg.begin() + name_end, '-', '_');
    }
    for (std::string& arg : args_) pointers_.push_back(arg.data());
    pointers_.push_back(nullptr);  // argv[argc] == nullptr, as for main()
  }
  DashedFlags(const DashedFlags&) = delete;
  DashedFlags& operator=(const DashedFlags&) = delete;

  int argc() const { return static_cast<int>(args_.size()); }
  char** argv() { return pointers_.data(); }

 private:
  std::vector<std::string> args_;
  std::vector<char*> pointers_;
};

}  // namespace tandem::tools
