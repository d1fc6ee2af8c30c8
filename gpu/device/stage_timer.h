// File: stage_timer.h
//
// Where a GPU query spends its time, by stage (the paper's Table 3): CUDA events recorded on the
// query's stream at each stage boundary, read back once the query has synchronized, so profiling
// never adds a synchronization of its own. Host-side stages (the device cache's transcoding and
// copies) are timed on the host and added directly. One timer per query context; not thread-safe.
//
//   timer.Begin(stream, tuning.profile_stages);
//   ... decode ...;     timer.Mark(GpuStage::kDecode);
//   ... intersect ...;  timer.Mark(GpuStage::kIntersect);
//   cudaStreamSynchronize(stream);
//   timer.Collect(totals);  // adds each interval to its stage
//
// Host code (C++20): includes the CUDA runtime API.
#pragma once

#include <cuda_runtime_api.h>

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "gpu/engine/gpu_engine.h"

namespace tandem::gpu {

class StageTimer {
 public:
  // Stage boundaries one query may record; a query with more (dozens of terms) is not profiled.
  static constexpr int kMaxMarks = 128;

  StageTimer() = default;
  ~StageTimer();
  StageTimer(const StageTimer&) = delete;
  StageTimer& operator=(const StageTimer&) = delete;

  absl::Status Init();  // creates the events on the current device

  // Starts a query on `stream`; with enabled false every call below does nothing.
  void Begin(cudaStream_t stream, bool enabled);
  // The device time since the previous mark (or Begin) belongs to `stage`.
  void Mark(GpuStage stage);
  void AddHostMs(GpuStage stage, double ms);
  // After the stream has synchronized: adds this query's times to `totals` (one more query).
  absl::Status Collect(GpuStageTimes& totals);

 private:
  std::array<cudaEvent_t, kMaxMarks + 1> events_{};
  std::array<GpuStage, kMaxMarks> stages_{};
  double host_ms_[kNumGpuStages] = {};
  cudaStream_t stream_ = nullptr;
  int marks_ = 0;
  bool enabled_ = false;
  bool overflow_ = false;
};

}  // namespace tandem::gpu
