#include "scheduler/worker_placement.h"

#include <cstdio>
#include <mutex>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/thread_affinity.h"
#include "base/thread_priority.h"

namespace tandem::scheduler {
namespace {

void ReportRefusedOnce(std::once_flag& reported, const char* consequence,
                       const absl::Status& status) {
  if (status.ok()) return;
  std::call_once(reported, [&] {
    std::fprintf(stderr, "tandem-server: %s: %s\n", consequence,
                 std::string(status.message()).c_str());
  });
}

}  // namespace

absl::Status CheckPlacement(const ExecutorOptions& options) {
  for (const auto& [name, cpus] : {std::pair{"cpu_worker_cpus", &options.cpu_worker_cpus},
                                   std::pair{"gpu_worker_cpus", &options.gpu_worker_cpus}}) {
    if (cpus->empty()) continue;
    if (absl::Status allowed = base::CheckCpusAllowed(*cpus); !allowed.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(name, ": ", allowed.message()));
    }
  }
  return absl::OkStatus();
}

void PlaceWorker(Processor p, const ExecutorOptions& options) {
  const std::vector<int>& cpus =
      p == Processor::kCpu ? options.cpu_worker_cpus : options.gpu_worker_cpus;
  if (!cpus.empty()) {
    // Checked against the process's CPUs in Create; a cpuset changed since is reported once.
    static std::once_flag reported;
    ReportRefusedOnce(reported, "workers run on any CPU", base::PinThreadToCpus(cpus));
  }
  if (p == Processor::kCpu) {
    // A thread starts at its creator's priority, so this is relative to the server's.
    static std::once_flag reported;
    ReportRefusedOnce(reported, "CPU workers keep the server's priority",
                      base::LowerThreadPriority(kCpuWorkerNice));
  }
}

}  // namespace tandem::scheduler
