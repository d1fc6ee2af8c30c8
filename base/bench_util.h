// File: bench_util.h
//
// What every benchmark program records beside its figures, so runs can be compared: the commit, the
// machine (host, CPU model, cores), the GPU (or "none") and the time; plus latency percentiles.
#pragma once

#include <string>
#include <vector>

#include "nlohmann/json.hpp"

namespace tandem::base {

// {"commit", "host", "cpu", "cores", "gpu", "time"}; `gpu` names the device a GPU benchmark ran on.
nlohmann::json MachineInfo(const std::string& gpu = "none (CPU engine)");

struct LatencySummary {
  double mean = 0, p50 = 0, p95 = 0, p99 = 0, max = 0;  // seconds
};

// Nearest-rank percentiles of `seconds` (sorted in place).
LatencySummary Summarize(std::vector<double>& seconds);

}  // namespace tandem::base
