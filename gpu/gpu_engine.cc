#include "gpu/gpu_engine.h"

namespace tandem::gpu {

absl::StatusOr<std::unique_ptr<index::Engine>> CreateGpuEngine(const index::Index& index,
                                                               const GpuEngineOptions& options) {
  return absl::UnimplementedError(
      "the GPU query pipeline is not part of this build yet; queries run on the CPU engine");
}

}  // namespace tandem::gpu
