// File: cuda_status.h
//
// CUDA errors as absl::Status, through one macro, and small RAII owners of device memory, streams
// and events. Compiles as C++17 (nvcc) and C++20 (g++); host code only.
//
//   TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(out, 0, bytes, stream));
//   TANDEM_ASSIGN_OR_RETURN(DeviceBuffer<uint32_t> buffer, DeviceBuffer<uint32_t>::Allocate(n));
//   TANDEM_RETURN_IF_ERROR(buffer.CopyFromHost(host.data(), n, stream));
//
// A failed allocation is RESOURCE_EXHAUSTED, so callers can tell "run this query on the CPU" from a
// broken device (INTERNAL) or no device at all (UNAVAILABLE).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace tandem::gpu {

inline absl::Status CudaErrorToStatus(cudaError_t error, const char* expression, const char* file,
                                      int line) {
  std::string message = absl::StrCat(expression, ": ", cudaGetErrorName(error), " (",
                                     cudaGetErrorString(error), ") at ", file, ":", line);
  switch (error) {
    case cudaErrorMemoryAllocation:
      return absl::ResourceExhaustedError(std::move(message));
    case cudaErrorNoDevice:
    case cudaErrorInsufficientDriver:
    case cudaErrorDevicesUnavailable:
      return absl::UnavailableError(std::move(message));
    case cudaErrorInvalidValue:
      return absl::InvalidArgumentError(std::move(message));
    default:
      return absl::InternalError(std::move(message));
  }
}

}  // namespace tandem::gpu

// Returns a Status from the enclosing function when the CUDA runtime call `expr` fails. After a
// kernel launch, TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError()) reports launch errors.
#define TANDEM_CUDA_RETURN_IF_ERROR(expr)                                                     \
  do {                                                                                        \
    const cudaError_t tandem_cuda_error_ = (expr);                                            \
    if (tandem_cuda_error_ != cudaSuccess) {                                                  \
      return ::tandem::gpu::CudaErrorToStatus(tandem_cuda_error_, #expr, __FILE__, __LINE__); \
    }                                                                                         \
  } while (false)

namespace tandem::gpu {

// Owns `size()` elements of device memory (cudaMalloc: 256-byte aligned). Move-only.
template <typename T>
class DeviceBuffer {
 public:
  static absl::StatusOr<DeviceBuffer> Allocate(size_t count) {
    DeviceBuffer buffer;
    if (count > 0) {
      TANDEM_CUDA_RETURN_IF_ERROR(
          cudaMalloc(reinterpret_cast<void**>(&buffer.data_), count * sizeof(T)));
    }
    buffer.size_ = count;
    return buffer;
  }

  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept {
    if (this != &other) {
      Reset();
      data_ = std::exchange(other.data_, nullptr);
      size_ = std::exchange(other.size_, 0);
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { Reset(); }

  T* data() { return data_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  size_t bytes() const { return size_ * sizeof(T); }

  // Stream-ordered copies of the first `count` elements. With pageable host memory the runtime
  // stages the copy, so `host` may be reused once the call returns for copies to the device; copies
  // to the host are complete after the stream synchronizes.
  absl::Status CopyFromHost(const T* host, size_t count, cudaStream_t stream) {
    if (count > size_) return absl::OutOfRangeError("copy larger than the device buffer");
    if (count == 0) return absl::OkStatus();
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(data_, host, count * sizeof(T), cudaMemcpyHostToDevice, stream));
    return absl::OkStatus();
  }
  absl::Status CopyToHost(T* host, size_t count, cudaStream_t stream) const {
    if (count > size_) return absl::OutOfRangeError("copy larger than the device buffer");
    if (count == 0) return absl::OkStatus();
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(host, data_, count * sizeof(T), cudaMemcpyDeviceToHost, stream));
    return absl::OkStatus();
  }

 private:
  void Reset() {
    if (data_ != nullptr) cudaFree(data_);  // a destructor cannot report; cudaFree fails only
    data_ = nullptr;                        // after a sticky error the next call reports anyway
    size_ = 0;
  }

  T* data_ = nullptr;
  size_t size_ = 0;
};

// Grows a device buffer to at least n elements, keeping nothing.
template <typename T>
absl::Status Reserve(DeviceBuffer<T>& buffer, size_t n) {
  if (buffer.size() >= n) return absl::OkStatus();
  buffer = DeviceBuffer<T>();
  TANDEM_ASSIGN_OR_RETURN(buffer, DeviceBuffer<T>::Allocate(n + n / 8));
  return absl::OkStatus();
}

// Pinned host memory (cudaMallocHost) that grows, keeping nothing. Move-less.
template <typename T>
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (data_ != nullptr) cudaFreeHost(data_);
  }
  absl::Status Reserve(size_t n) {
    if (n <= size_) return absl::OkStatus();
    if (data_ != nullptr) cudaFreeHost(data_);
    data_ = nullptr;
    size_ = 0;
    const size_t grown = n + n / 8;
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMallocHost(reinterpret_cast<void**>(&data_), grown * sizeof(T)));
    size_ = grown;
    return absl::OkStatus();
  }
  T* data() { return data_; }

 private:
  T* data_ = nullptr;
  size_t size_ = 0;
};

// Owns a non-blocking stream (never the legacy default stream).
class CudaStream {
 public:
  static absl::StatusOr<CudaStream> Create() {
    CudaStream stream;
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&stream.stream_, cudaStreamNonBlocking));
    return stream;
  }
  CudaStream() = default;
  CudaStream(CudaStream&& other) noexcept : stream_(std::exchange(other.stream_, nullptr)) {}
  CudaStream& operator=(CudaStream&& other) noexcept {
    if (this != &other) {
      if (stream_ != nullptr) cudaStreamDestroy(stream_);
      stream_ = std::exchange(other.stream_, nullptr);
    }
    return *this;
  }
  CudaStream(const CudaStream&) = delete;
  CudaStream& operator=(const CudaStream&) = delete;
  ~CudaStream() {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }

  cudaStream_t get() const { return stream_; }
  absl::Status Synchronize() const {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream_));
    return absl::OkStatus();
  }

 private:
  cudaStream_t stream_ = nullptr;
};

// Owns an event, for timing device work in stream order.
class CudaEvent {
 public:
  static absl::StatusOr<CudaEvent> Create() {
    CudaEvent event;
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventCreate(&event.event_));
    return event;
  }
  CudaEvent() = default;
  CudaEvent(CudaEvent&& other) noexcept : event_(std::exchange(other.event_, nullptr)) {}
  CudaEvent& operator=(CudaEvent&& other) noexcept {
    if (this != &other) {
      if (event_ != nullptr) cudaEventDestroy(event_);
      event_ = std::exchange(other.event_, nullptr);
    }
    return *this;
  }
  CudaEvent(const CudaEvent&) = delete;
  CudaEvent& operator=(const CudaEvent&) = delete;
  ~CudaEvent() {
    if (event_ != nullptr) cudaEventDestroy(event_);
  }

  cudaEvent_t get() const { return event_; }
  absl::Status Record(cudaStream_t stream) {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventRecord(event_, stream));
    return absl::OkStatus();
  }
  // Milliseconds from `start` to this event, both recorded and complete.
  absl::StatusOr<float> MillisecondsSince(const CudaEvent& start) const {
    float ms = 0;
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventSynchronize(event_));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, start.event_, event_));
    return ms;
  }

 private:
  cudaEvent_t event_ = nullptr;
};

}  // namespace tandem::gpu
