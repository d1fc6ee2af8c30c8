// File: stream_wait.h
//
// How a query's host thread waits for its stream: spin first, then sleep. CUDA's own waits are
// all-or-nothing per device (cudaSetDeviceFlags): spinning answers soonest but holds a core for the
// whole wait, and on the H100 machine 8 GPU workers spinning through millisecond-long OR queries
// held 7.3 of 16 cores that the hybrid scheduler's CPU workers needed
// (bench/results/hybrid_probe_h100_session13.txt); blocking sync frees the core but adds a wake-up
// to every wait, which halved the AND rate, whose waits are a fraction of a millisecond. Spin then
// block, as adaptive mutexes do, keeps short waits spinning and puts long ones to sleep. The sleep
// is cudaStreamSynchronize, which sleeps only when the device runs with
// cudaDeviceScheduleBlockingSync (GpuHostWait::kSpinThenBlock sets it). The polling is a driver
// call: on the H100 machine, AND waits that polled until done (no sleep) lost 41% of AND's rate to
// CUDA's own spin (bench/results/hybrid_probe_h100_session13.txt, call 6), and a 50-200 us spin
// before the sleep 12-16%; OR, whose waits are long, gained (4,470 against 3,980 q/s offered 4,500).
//
//   const StreamWait wait{.spin = std::chrono::microseconds(200)};
//   TANDEM_RETURN_IF_ERROR(SynchronizeStream(stream, wait));
//
// Compiles as C++17 (nvcc) and C++20 (g++).
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>

#include "absl/status/status.h"

namespace tandem::gpu {

struct StreamWait {
  // How long to poll the stream (cudaStreamQuery) before cudaStreamSynchronize; 0: synchronize at
  // once, which spins, yields or sleeps as the device flags say.
  std::chrono::microseconds spin{0};
};

// Returns once every operation queued on `stream` has completed, or the first error the stream
// reports (as CudaErrorToStatus maps it). `stream` must not be the legacy default stream
// (INVALID_ARGUMENT).
absl::Status SynchronizeStream(cudaStream_t stream, const StreamWait& wait = {});

}  // namespace tandem::gpu
