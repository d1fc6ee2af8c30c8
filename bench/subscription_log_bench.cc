// File: subscription_log_bench.cc
//
// tandem-bench-subscription-log: what keeping subscriptions durable costs. A registry is opened
// over a subscriptions file holding --subscriptions small predicates (`year >= Y AND domain = "D"`
// of ten interfaces), then --threads callers make --changes Subscribe calls between them, each
// acknowledged only once durable. Reported: the bytes the process wrote per Subscribe (from
// /proc/self/io's wchar, so the log's appends and every snapshot written in the background count,
// the last compaction included: the registry is closed before the count is read), Subscribes per
// second, and the subscriptions file's size.
//
//   tandem-bench-subscription-log --subscriptions 12000 --changes 2000 --threads 8 [--json FILE]
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "base/bench_util.h"
#include "base/temp_dir.h"
#include "bench/bench_main.h"
#include "match/cpu_matcher.h"
#include "match/predicate_parser.h"
#include "match/subscription_file.h"
#include "match/subscription_registry.h"
#include "nlohmann/json.hpp"

ABSL_FLAG(int, subscriptions, 12000, "subscriptions in the file before the run");
ABSL_FLAG(int, changes, 2000, "Subscribe calls measured");
ABSL_FLAG(int, threads, 1, "concurrent callers");
ABSL_FLAG(std::string, dir, "", "directory of the subscriptions file (default: a temporary one)");

namespace tandem {
namespace {

// Bytes this process has passed to write() and its kin so far; -1 where /proc is unavailable.
int64_t BytesWritten() {
  std::ifstream io("/proc/self/io");
  std::string key;
  int64_t value;
  while (io >> key >> value) {
    if (key == "wchar:") return value;
  }
  return -1;
}

match::Predicate Small(int i) {
  absl::StatusOr<match::Predicate> p = match::ParsePredicate(
      absl::StrCat("year >= ", 1990 + i % 30, " AND domain = \"d", i % 100, ".com\""));
  return *match::NormalizePredicate(*std::move(p), nullptr, match::Limits{});
}

int Run() {
  const int n = absl::GetFlag(FLAGS_subscriptions);
  const int changes = absl::GetFlag(FLAGS_changes);
  const int threads = absl::GetFlag(FLAGS_threads);
  if (n < 0 || changes < 1 || threads < 1) {
    return bench::Fail("--subscriptions must be at least 0, --changes and --threads at least 1");
  }
  base::TempDir temp;
  const std::string dir = absl::GetFlag(FLAGS_dir).empty() ? temp.path() : absl::GetFlag(FLAGS_dir);
  match::RegistryOptions options;
  options.path = dir + "/subscriptions.bin";
  match::SubscriptionSnapshot snapshot;
  for (int i = 0; i < n; ++i) {
    snapshot.records.push_back(
        match::SubscriptionRecord{snapshot.next_id++, absl::StrCat("if", i % 10), Small(i)});
  }
  if (absl::Status s = match::WriteSubscriptionFile(options.path, snapshot); !s.ok()) {
    return bench::Fail(s.ToString());
  }
  const int64_t file_bytes =
      static_cast<int64_t>(std::ifstream(options.path, std::ios::ate | std::ios::binary).tellg());
  auto cpu = match::CpuMatcher::Create();
  if (!cpu.ok()) return bench::Fail(cpu.status().ToString());
  absl::StatusOr<std::unique_ptr<match::SubscriptionRegistry>> registry =
      match::SubscriptionRegistry::Open(options, *std::move(cpu), nullptr);
  if (!registry.ok()) return bench::Fail(registry.status().ToString());

  const int64_t before = BytesWritten();
  const auto start = std::chrono::steady_clock::now();
  std::atomic<int> next{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < threads; ++t) {
    callers.emplace_back([&] {
      for (int i = next++; i < changes; i = next++) {
        if (!(*registry)->Subscribe(absl::StrCat("if", i % 10), Small(n + i)).ok()) ++failed;
      }
    });
  }
  for (std::thread& t : callers) t.join();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  registry->reset();  // finishes what runs in the background
  const int64_t written = BytesWritten() - before;
  if (failed > 0) return bench::Fail(absl::StrCat(failed.load(), " Subscribe calls failed"));
  if (before < 0) return bench::Fail("/proc/self/io is unavailable");

  const double per_call = static_cast<double>(written) / changes;
  std::printf("%-14s %-8s %-8s %-14s %-16s %-12s\n", "subscriptions", "changes", "threads",
              "file bytes", "bytes/Subscribe", "Subscribe/s");
  std::printf("%-14d %-8d %-8d %-14lld %-16.1f %-12.0f\n", n, changes, threads,
              static_cast<long long>(file_bytes), per_call, changes / seconds);
  base::WriteJson(absl::GetFlag(FLAGS_json), {{"benchmark", "subscription_log"},
                                              {"machine", base::MachineInfo()},
                                              {"subscriptions", n},
                                              {"changes", changes},
                                              {"threads", threads},
                                              {"file_bytes", file_bytes},
                                              {"bytes_per_subscribe", per_call},
                                              {"subscribes_per_second", changes / seconds}});
  return 0;
}

}  // namespace
}  // namespace tandem

TANDEM_BENCH_MAIN(tandem::Run, "tandem-bench-subscription-log",
                  "[--subscriptions N] [--changes N] [--threads N] [--dir DIR] [--json FILE]",
                  "bytes written and time per durable Subscribe over a node holding N "
                  "subscriptions.");
