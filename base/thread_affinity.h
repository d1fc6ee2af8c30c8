// File: thread_affinity.h
//
// Which CPUs a thread may run on, for keeping the hybrid scheduler's two kinds of workers off each
// other's cores. A GPU worker holds the CUDA driver's per-context launch lock while it launches a
// query's kernels (perf on the H100 machine: 75% of the GPU workers' context switches were in
// cuLaunchKernel's mutex); when a CPU query worker takes its core in the middle of that, every
// other GPU worker waits behind the preempted one. Lowering the CPU workers' priority
// (thread_priority.h) makes that rarer; disjoint CPU sets remove it.
//
// CPU lists use the kernel's notation (cpuset(7), taskset -c): "0-3,8,10-11".
//
//   TANDEM_ASSIGN_OR_RETURN(std::vector<int> cpus, base::ParseCpuList("4-15"));
//   TANDEM_RETURN_IF_ERROR(base::CheckCpusAllowed(cpus));  // before starting threads
//   TANDEM_RETURN_IF_ERROR(base::PinThreadToCpus(cpus));   // on the thread itself
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace tandem::base {

// The CPUs of a list such as "0-3,8,10-11", sorted and without repeats. INVALID_ARGUMENT for an
// empty list, an empty item, a range that runs backwards, or a CPU that is not a number from 0 to
// CPU_SETSIZE - 1; the message quotes the offending item.
absl::StatusOr<std::vector<int>> ParseCpuList(absl::string_view text);

// The shortest list for `cpus` (sorted, unique): {0,1,2,3,8} -> "0-3,8"; {} -> "".
std::string FormatCpuList(const std::vector<int>& cpus);

// The CPUs the calling thread may run on (sched_getaffinity(2)); INTERNAL if the call fails.
absl::StatusOr<std::vector<int>> ThreadCpus();

// OK when `cpus` is non-empty and every CPU in it is one the calling thread may run on (a process
// started under taskset or a cgroup cpuset may use only some); INVALID_ARGUMENT naming the first
// that is not, and the ones that are.
absl::Status CheckCpusAllowed(const std::vector<int>& cpus);

// Restricts the calling thread to `cpus` (sched_setaffinity(2) on the thread alone).
// INVALID_ARGUMENT for an empty or out-of-range set; INTERNAL when the system refuses (the message
// names the errno).
absl::Status PinThreadToCpus(const std::vector<int>& cpus);

// A CPU list as a flag value (tandem-server's --tune-cpu-worker-cpus): ParseCpuList's notation,
// or empty for no list.
struct CpuList {
  std::vector<int> cpus;
};
bool AbslParseFlag(absl::string_view text, CpuList* list, std::string* error);
std::string AbslUnparseFlag(const CpuList& list);

}  // namespace tandem::base
