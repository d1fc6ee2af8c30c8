// File: process_metrics.h
//
// The process series every Prometheus exporter has (the names and meanings of the Go and Python
// clients' process collectors), read from /proc at each scrape:
// clang-format off
//   process_cpu_seconds_total        user and system CPU time
//   process_resident_memory_bytes    resident set size
//   process_virtual_memory_bytes     virtual memory size
//   process_open_fds                 open file descriptors
//   process_max_fds                  the soft limit on them
//   process_start_time_seconds       start time, seconds since the Unix epoch
// clang-format on
// A value /proc does not give (another kernel, a restricted /proc) is left out of the scrape,
// never exported as 0.
//
//   collectables.push_back(std::make_shared<ProcessMetrics>());
#pragma once

#include <string>
#include <vector>

#include "prometheus/collectable.h"
#include "prometheus/metric_family.h"

namespace tandem::rpc {

class ProcessMetrics final : public prometheus::Collectable {
 public:
  // `proc` is the process's /proc directory; `proc_root` holds the system-wide stat file (boot
  // time). Tests point them elsewhere.
  explicit ProcessMetrics(std::string proc = "/proc/self", std::string proc_root = "/proc")
      : proc_(std::move(proc)), proc_root_(std::move(proc_root)) {}

  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  std::string proc_;
  std::string proc_root_;
};

}  // namespace tandem::rpc
