#include "base/bench_util.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/version.h"

namespace tandem::base {

nlohmann::json MachineInfo(const std::string& gpu) {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string cpu = "unknown";
  std::ifstream info("/proc/cpuinfo");
  for (std::string line; std::getline(info, line);) {
    if (absl::StartsWith(line, "model name")) {
      cpu = std::string(absl::StripAsciiWhitespace(line.substr(line.find(':') + 1)));
      break;
    }
  }
  return {{"commit", tandem::base::Commit()},
          {"host", host},
          {"cpu", cpu},
          {"cores", std::thread::hardware_concurrency()},
          {"gpu", gpu},
          {"time", absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::Now(), absl::UTCTimeZone())}};
}

LatencySummary Summarize(std::vector<double>& s) {
  LatencySummary out;
  if (s.empty()) return out;
  std::sort(s.begin(), s.end());
  auto rank = [&](double p) {
    size_t i = static_cast<size_t>(std::ceil(p * s.size()));
    return s[std::min(s.size() - 1, i == 0 ? 0 : i - 1)];
  };
  out.mean = std::accumulate(s.begin(), s.end(), 0.0) / s.size();
  out.p50 = rank(0.50);
  out.p95 = rank(0.95);
  out.p99 = rank(0.99);
  out.max = s.back();
  return out;
}

void WriteJson(const std::string& path, const nlohmann::json& out, int indent) {
  if (!path.empty()) std::ofstream(path) << out.dump(indent) << "\n";
}

int FinishCheckedRun(int mismatches, const nlohmann::json& out, const std::string& json_path,
                     int status_if_differ) {
  std::printf("\nresults equal to the CPU engine's: %s\n", mismatches == 0 ? "yes" : "NO");
  WriteJson(json_path, out);
  return mismatches == 0 ? 0 : status_if_differ;
}

}  // namespace tandem::base
