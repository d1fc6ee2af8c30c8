#include "rpc/process_metrics.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace tandem::rpc {
namespace {

std::optional<std::string> ReadAll(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void Add(std::vector<prometheus::MetricFamily>& families, std::string name, std::string help,
         prometheus::MetricType type, std::optional<double> value) {
  if (!value) return;
  prometheus::MetricFamily family;
  family.name = std::move(name);
  family.help = std::move(help);
  family.type = type;
  prometheus::ClientMetric metric;
  if (type == prometheus::MetricType::Counter) {
    metric.counter.value = *value;
  } else {
    metric.gauge.value = *value;
  }
  family.metric.push_back(std::move(metric));
  families.push_back(std::move(family));
}

// The fields of /proc/PID/stat after the command name, which may hold spaces and parentheses:
// fields[0] is the state (field 3 of proc(5)).
std::vector<absl::string_view> StatFields(absl::string_view stat) {
  const size_t close = stat.rfind(')');
  if (close == absl::string_view::npos) return {};
  return absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipEmpty());
}

std::optional<double> Field(const std::vector<absl::string_view>& fields, size_t proc5_number) {
  const size_t index = proc5_number - 3;
  double value = 0;
  if (index >= fields.size() ||
      !absl::SimpleAtod(absl::StripAsciiWhitespace(fields[index]), &value))
    return std::nullopt;
  return value;
}

// "Max open files  1024  4096  files" from /proc/PID/limits: the soft limit.
std::optional<double> MaxOpenFiles(const std::string& limits) {
  for (absl::string_view line : absl::StrSplit(limits, '\n')) {
    if (!absl::ConsumePrefix(&line, "Max open files")) continue;
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
    double value = 0;
    if (!words.empty() && absl::SimpleAtod(words[0], &value)) return value;
  }
  return std::nullopt;
}

std::optional<double> BootTime(const std::string& stat) {
  for (absl::string_view line : absl::StrSplit(stat, '\n')) {
    if (!absl::ConsumePrefix(&line, "btime ")) continue;
    double value = 0;
    if (absl::SimpleAtod(absl::StripAsciiWhitespace(line), &value)) return value;
  }
  return std::nullopt;
}

}  // namespace

std::vector<prometheus::MetricFamily> ProcessMetrics::Collect() const {
  std::vector<prometheus::MetricFamily> families;
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  const std::optional<std::string> stat = ReadAll(proc_ + "/stat");
  const std::vector<absl::string_view> fields =
      stat ? StatFields(*stat) : std::vector<absl::string_view>{};
  const std::optional<double> utime = Field(fields, 14), stime = Field(fields, 15);
  Add(families, "process_cpu_seconds_total", "Total user and system CPU time spent in seconds.",
      prometheus::MetricType::Counter,
      utime && stime && ticks > 0 ? std::optional<double>((*utime + *stime) / ticks)
                                  : std::nullopt);
  const std::optional<double> vsize = Field(fields, 23), rss = Field(fields, 24);
  Add(families, "process_virtual_memory_bytes", "Virtual memory size in bytes.",
      prometheus::MetricType::Gauge, vsize);
  Add(families, "process_resident_memory_bytes", "Resident memory size in bytes.",
      prometheus::MetricType::Gauge,
      rss && page > 0 ? std::optional<double>(*rss * page) : std::nullopt);

  std::optional<double> open_fds;
  std::error_code error;
  std::filesystem::directory_iterator it(proc_ + "/fd", error);
  if (!error) {
    double count = 0;
    for (; it != std::filesystem::directory_iterator(); it.increment(error)) {
      if (error) break;
      ++count;
    }
    // Listing this process's own descriptors opens one more: it is not counted.
    if (!error) open_fds = proc_ == "/proc/self" && count > 0 ? count - 1 : count;
  }
  Add(families, "process_open_fds", "Number of open file descriptors.",
      prometheus::MetricType::Gauge, open_fds);
  const std::optional<std::string> limits = ReadAll(proc_ + "/limits");
  Add(families, "process_max_fds", "Maximum number of open file descriptors.",
      prometheus::MetricType::Gauge, limits ? MaxOpenFiles(*limits) : std::nullopt);

  const std::optional<double> start_ticks = Field(fields, 22);
  const std::optional<std::string> system_stat = ReadAll(proc_root_ + "/stat");
  const std::optional<double> boot = system_stat ? BootTime(*system_stat) : std::nullopt;
  Add(families, "process_start_time_seconds",
      "Start time of the process since unix epoch in seconds.", prometheus::MetricType::Gauge,
      start_ticks && boot && ticks > 0 ? std::optional<double>(*boot + *start_ticks / ticks)
                                       : std::nullopt);
  return families;
}

}  // namespace tandem::rpc
