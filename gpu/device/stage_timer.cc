#include "gpu/device/stage_timer.h"

#include "base/enum_names.h"
#include "gpu/device/cuda_status.h"

namespace tandem::gpu {

namespace {

constexpr base::EnumName<GpuStage> kStageNames[] = {{GpuStage::kCache, "cache"},
                                                    {GpuStage::kDecode, "decode"},
                                                    {GpuStage::kIntersect, "intersect"},
                                                    {GpuStage::kScore, "score"},
                                                    {GpuStage::kTopK, "top_k"}};

}  // namespace

const char* GpuStageName(GpuStage stage) { return base::NameOf(kStageNames, stage); }

StageTimer::~StageTimer() {
  for (cudaEvent_t e : events_) {
    if (e != nullptr) cudaEventDestroy(e);
  }
}

absl::Status StageTimer::Init() {
  for (cudaEvent_t& e : events_) TANDEM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&e));
  return absl::OkStatus();
}

void StageTimer::Begin(cudaStream_t stream, bool enabled) {
  stream_ = stream;
  enabled_ = enabled && events_[0] != nullptr;
  marks_ = 0;
  overflow_ = false;
  for (double& ms : host_ms_) ms = 0;
  // A failed record only loses this query's profile (Collect then reports the error).
  if (enabled_) overflow_ = cudaEventRecord(events_[0], stream_) != cudaSuccess;
}

void StageTimer::Mark(GpuStage stage) {
  if (!enabled_ || overflow_) return;
  if (marks_ == kMaxMarks || cudaEventRecord(events_[marks_ + 1], stream_) != cudaSuccess) {
    overflow_ = true;
    return;
  }
  stages_[marks_++] = stage;
}

void StageTimer::AddHostMs(GpuStage stage, double ms) {
  if (enabled_) host_ms_[static_cast<int>(stage)] += ms;
}

absl::Status StageTimer::Collect(GpuStageTimes& totals) {
  if (!enabled_ || overflow_) return absl::OkStatus();
  double ms[kNumGpuStages] = {};
  for (int s = 0; s < kNumGpuStages; ++s) ms[s] = host_ms_[s];
  for (int i = 0; i < marks_; ++i) {
    float interval = 0;
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&interval, events_[i], events_[i + 1]));
    ms[static_cast<int>(stages_[i])] += interval;
  }
  for (int s = 0; s < kNumGpuStages; ++s) totals.ms[s] += ms[s];
  ++totals.queries;
  enabled_ = false;
  return absl::OkStatus();
}

}  // namespace tandem::gpu
