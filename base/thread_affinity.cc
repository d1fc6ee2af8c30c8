#include "base/thread_affinity.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace tandem::base {
namespace {

absl::StatusOr<int> ParseCpu(absl::string_view text, absl::string_view item) {
  int cpu = -1;
  if (!absl::SimpleAtoi(text, &cpu) || cpu < 0 || cpu >= CPU_SETSIZE) {
    return absl::InvalidArgumentError(absl::StrCat("'", item, "' in a CPU list: a CPU is 0 to ",
                                                   CPU_SETSIZE - 1, " (a list reads like 0-3,8)"));
  }
  return cpu;
}

}  // namespace

absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (text.empty()) return absl::InvalidArgumentError("empty CPU list (a list reads like 0-3,8)");
  std::vector<int> cpus;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("empty item in the CPU list '", text, "' (a list reads like 0-3,8)"));
    }
    const size_t dash = item.find('-');
    if (dash == absl::string_view::npos) {
      absl::StatusOr<int> cpu = ParseCpu(item, item);
      if (!cpu.ok()) return cpu.status();
      cpus.push_back(*cpu);
      continue;
    }
    absl::StatusOr<int> first = ParseCpu(item.substr(0, dash), item);
    if (!first.ok()) return first.status();
    absl::StatusOr<int> last = ParseCpu(item.substr(dash + 1), item);
    if (!last.ok()) return last.status();
    if (*last < *first) {
      return absl::InvalidArgumentError(
          absl::StrCat("'", item, "' in a CPU list runs backwards (write it low-high)"));
    }
    for (int cpu = *first; cpu <= *last; ++cpu) cpus.push_back(cpu);
  }
  std::sort(cpus.begin(), cpus.end());
  cpus.erase(std::unique(cpus.begin(), cpus.end()), cpus.end());
  return cpus;
}

std::string FormatCpuList(const std::vector<int>& cpus) {
  std::string out;
  for (size_t i = 0; i < cpus.size();) {
    size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ",", cpus[i]);
    if (j > i) absl::StrAppend(&out, "-", cpus[j]);
    i = j + 1;
  }
  return out;
}

absl::StatusOr<std::vector<int>> ThreadCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) {
    return absl::InternalError(absl::StrCat("sched_getaffinity: ", std::strerror(errno)));
  }
  std::vector<int> cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

absl::Status CheckCpusAllowed(const std::vector<int>& cpus) {
  if (cpus.empty()) return absl::InvalidArgumentError("empty CPU list");
  absl::StatusOr<std::vector<int>> allowed = ThreadCpus();
  if (!allowed.ok()) return allowed.status();
  for (int cpu : cpus) {
    if (!std::binary_search(allowed->begin(), allowed->end(), cpu)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "CPU ", cpu, " is not one this process may run on (", FormatCpuList(*allowed), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status PinThreadToCpus(const std::vector<int>& cpus) {
  if (cpus.empty()) return absl::InvalidArgumentError("empty CPU list");
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : cpus) {
    if (cpu < 0 || cpu >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("CPU ", cpu, " is out of range"));
    }
    CPU_SET(cpu, &set);
  }
  // pid 0: the calling thread only (sched_setaffinity(2) acts on one thread).
  if (sched_setaffinity(0, sizeof(set), &set) != 0) {
    return absl::InternalError(
        absl::StrCat("sched_setaffinity(", FormatCpuList(cpus), "): ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

bool AbslParseFlag(absl::string_view text, CpuList* list, std::string* error) {
  if (text.empty()) {
    list->cpus.clear();
    return true;
  }
  absl::StatusOr<std::vector<int>> cpus = ParseCpuList(text);
  if (!cpus.ok()) {
    *error = std::string(cpus.status().message());
    return false;
  }
  list->cpus = *std::move(cpus);
  return true;
}

std::string AbslUnparseFlag(const CpuList& list) { return FormatCpuList(list.cpus); }

}  // namespace tandem::base
