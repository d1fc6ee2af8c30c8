// Device probe: the only CUDA runtime calls of this version of the GPU library.
#include <cuda_runtime.h>

#include "absl/strings/str_cat.h"
#include "gpu/device/device.h"

namespace tandem::gpu {

int DeviceCount() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}

absl::StatusOr<DeviceInfo> ProbeDevice(int device) {
  int count = 0;
  cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return absl::NotFoundError(absl::StrCat("no CUDA device: ", cudaGetErrorString(err)));
  }
  if (count == 0) return absl::NotFoundError("no CUDA device: none visible");
  if (device < 0 || device >= count) {
    return absl::NotFoundError(
        absl::StrCat("no CUDA device ", device, ": ", count, " visible (0 to ", count - 1, ")"));
  }
  cudaDeviceProp prop;
  err = cudaGetDeviceProperties(&prop, device);
  if (err != cudaSuccess) {
    return absl::NotFoundError(
        absl::StrCat("CUDA device ", device, " unusable: ", cudaGetErrorString(err)));
  }
  DeviceInfo info;
  info.device = device;
  info.name = prop.name;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(device) == cudaSuccess &&
      cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
    info.free_bytes = free_bytes;
    info.total_bytes = total_bytes;
  }
  return info;
}

}  // namespace tandem::gpu
