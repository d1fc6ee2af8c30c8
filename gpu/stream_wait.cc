#include "gpu/stream_wait.h"

#include "gpu/cuda_status.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace tandem::gpu {
namespace {

// Between two polls: a few hundred cycles off the driver, without giving up the core.
void PauseBetweenPolls() {
  for (int i = 0; i < 32; ++i) {
#if defined(__x86_64__)
    _mm_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
}

}  // namespace

absl::Status SynchronizeStream(cudaStream_t stream, const StreamWait& wait) {
  if (stream == nullptr) {
    return absl::InvalidArgumentError("the legacy default stream is not used; pass a stream");
  }
  if (wait.spin > std::chrono::microseconds::zero()) {
    const auto until = std::chrono::steady_clock::now() + wait.spin;
    while (true) {
      const cudaError_t state = cudaStreamQuery(stream);
      if (state == cudaSuccess) return absl::OkStatus();
      if (state != cudaErrorNotReady) {
        return CudaErrorToStatus(state, "cudaStreamQuery(stream)", __FILE__, __LINE__);
      }
      if (std::chrono::steady_clock::now() >= until) break;
      PauseBetweenPolls();
    }
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
  return absl::OkStatus();
}

}  // namespace tandem::gpu
