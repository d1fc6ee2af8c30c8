// Device probe: the only CUDA runtime calls of this version of the GPU library.
#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "gpu/device.h"

namespace tandem::gpu {

absl::StatusOr<DeviceInfo> ProbeDevice() {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return absl::NotFoundError(absl::StrCat("no CUDA device: ", cudaGetErrorString(err)));
  }
  if (count == 0) return absl::NotFoundError("no CUDA device: none visible");
  cudaDeviceProp prop;
  err = cudaGetDeviceProperties(&prop, 0);
  if (err != cudaSuccess) {
    return absl::NotFoundError(absl::StrCat("CUDA device 0 unusable: ", cudaGetErrorString(err)));
  }
  DeviceInfo info;
  info.device = 0;
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(0) == cudaSuccess && cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    info.free_bytes = free_bytes;
    info.total_bytes = total_bytes;
  }
  return info;
}

}  // namespace tandem::gpu
