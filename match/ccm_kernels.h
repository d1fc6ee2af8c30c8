// File: ccm_kernels.h
//
// The CCM matching kernel (Margara & Cugola, Algorithm 1, with the in-kernel reset of section 4.3)
// behind a plain launch function. Compiles as C++17 (nvcc) and C++20 (g++).
//
//   TANDEM_RETURN_IF_ERROR(CheckKernelImage());  // once, on the matcher's device
//   TANDEM_RETURN_IF_ERROR(LaunchMatch(params, stream));
#pragma once

#include <cuda_runtime_api.h>

#include "absl/status/status.h"
#include "match/ccm_format.h"

namespace tandem::match::ccm {

// FAILED_PRECONDITION when the current device cannot run the kernel (this build's code is for
// sm_90 and its PTX), the CUDA error otherwise.
absl::Status CheckKernelImage();

// One launch on `stream`: `params.num_chunks` blocks evaluate the work list, and every thread of
// the grid (extra blocks when the work is small) takes a share of resetting the idle copies of
// Count and Interfaces. With `inline_inputs`, the inputs travel in the kernel's parameters and
// `params.inputs`, `chunk_input` and `input_bytes` are unused. Nothing when there is no work.
absl::Status LaunchMatch(const LaunchParams& params, const InlineInputs* inline_inputs,
                         cudaStream_t stream);

}  // namespace tandem::match::ccm
