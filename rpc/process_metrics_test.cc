// Tests of ProcessMetrics: exact values from a made-up /proc, sane ones from this process's, and
// series left out when /proc lacks them.
#include "rpc/process_metrics.h"

#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::rpc {
namespace {

namespace fs = std::filesystem;

std::map<std::string, double> Values(const ProcessMetrics& metrics) {
  std::map<std::string, double> values;
  for (const prometheus::MetricFamily& family : metrics.Collect()) {
    EXPECT_EQ(family.metric.size(), 1u) << family.name;
    const prometheus::ClientMetric& m = family.metric.front();
    values[family.name] =
        family.type == prometheus::MetricType::Counter ? m.counter.value : m.gauge.value;
  }
  return values;
}

TEST(ProcessMetricsTest, ReadsEveryValueFromProc) {
  const fs::path root = fs::path(::testing::TempDir()) / "fake-proc";
  fs::remove_all(root);
  fs::create_directories(root / "self" / "fd");
  for (const char* fd : {"0", "1", "2", "7"}) std::ofstream(root / "self" / "fd" / fd);
  // pid (comm with ") " inside) state ppid ... : utime 14 = 250, stime 15 = 150, starttime 22 =
  // 1000, vsize 23 = 123456789, rss 24 = 300 pages.
  std::ofstream(root / "self" / "stat")
      << "4242 (tandem) server) S 1 2 3 4 5 6 7 8 9 10 250 150 0 0 20 0 12 0 1000 123456789 300 "
         "18446744073709551615\n";
  std::ofstream(root / "self" / "limits")
      << "Limit                     Soft Limit           Hard Limit           Units\n"
         "Max open files            65536                524288               files\n";
  std::ofstream(root / "stat") << "cpu  1 2 3\nbtime 1700000000\nprocesses 9\n";
  const ProcessMetrics metrics((root / "self").string(), root.string());
  const std::map<std::string, double> values = Values(metrics);
  const double ticks = static_cast<double>(::sysconf(_SC_CLK_TCK));
  const double page = static_cast<double>(::sysconf(_SC_PAGESIZE));
  EXPECT_DOUBLE_EQ(values.at("process_cpu_seconds_total"), 400 / ticks);
  EXPECT_DOUBLE_EQ(values.at("process_virtual_memory_bytes"), 123456789);
  EXPECT_DOUBLE_EQ(values.at("process_resident_memory_bytes"), 300 * page);
  EXPECT_DOUBLE_EQ(values.at("process_open_fds"), 4);
  EXPECT_DOUBLE_EQ(values.at("process_max_fds"), 65536);
  EXPECT_DOUBLE_EQ(values.at("process_start_time_seconds"), 1700000000 + 1000 / ticks);
  fs::remove_all(root);
}

TEST(ProcessMetricsTest, WhatProcLacksIsLeftOut) {
  const fs::path root = fs::path(::testing::TempDir()) / "bare-proc";
  fs::remove_all(root);
  fs::create_directories(root / "self");
  std::ofstream(root / "self" / "stat") << "garbage without fields\n";
  const std::map<std::string, double> values =
      Values(ProcessMetrics((root / "self").string(), root.string()));
  EXPECT_TRUE(values.empty()) << values.size();
  fs::remove_all(root);
}

TEST(ProcessMetricsTest, ThisProcessLooksRight) {
  const ProcessMetrics metrics;
  std::map<std::string, double> before = Values(metrics);
  ASSERT_EQ(before.size(), 6u);
  EXPECT_GT(before["process_resident_memory_bytes"], 1 << 20);
  EXPECT_GE(before["process_virtual_memory_bytes"], before["process_resident_memory_bytes"]);
  EXPECT_GE(before["process_max_fds"], before["process_open_fds"]);
  const double now = static_cast<double>(std::time(nullptr));
  EXPECT_LE(before["process_start_time_seconds"], now + 1);
  EXPECT_GT(before["process_start_time_seconds"], now - 3600);
  // One more open descriptor is seen.
  const int fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_EQ(Values(metrics)["process_open_fds"], before["process_open_fds"] + 1);
  ::close(fd);
  // CPU time only grows.
  volatile double x = 0;
  for (int i = 0; i < 20000000; ++i) x = x + std::sqrt(static_cast<double>(i));
  EXPECT_GE(Values(metrics)["process_cpu_seconds_total"], before["process_cpu_seconds_total"]);
}

}  // namespace
}  // namespace tandem::rpc
