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

// Writes `out` to `path` (its --json flag), `indent` spaces a level and a closing newline; nothing
// where `path` is empty.
void WriteJson(const std::string& path, const nlohmann::json& out, int indent = 2);

// The end of a benchmark that checks every answer against the CPU engine: prints whether all were
// equal, writes `out` to `json_path` (WriteJson) and returns the exit status, 0 or
// `status_if_differ` where `mismatches` is not 0.
int FinishCheckedRun(int mismatches, const nlohmann::json& out, const std::string& json_path,
                     int status_if_differ = 2);

}  // namespace tandem::base
