// The CCM matching kernel: Algorithm 1 of Margara & Cugola (section 4.2) over a launch's work list
// (ccm_launch.h), resetting the idle copies of Count and Interfaces on the way (section 4.3).
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "gpu/device/cuda_status.h"
#include "match/ccm_kernels.h"

namespace tandem::match::ccm {
namespace {

// A grid launched only to reset gives each thread at least this many 16-byte stores.
constexpr uint64_t kResetVectorsPerThread = 8;

// The kernel's parameters: the inputs in device memory, or in the parameters themselves.
struct StagedArgs {
  LaunchParams params;
};
struct InlineArgs {
  LaunchParams params;
  InlineInputs in;
};
static_assert(sizeof(InlineArgs) <= 4000, "kernel parameters are limited to 4 KB");

__device__ __forceinline__ void LoadInput(const StagedArgs& args, DeviceInput* input) {
  *input = args.params.inputs[args.params.chunk_input[blockIdx.x]];
}
__device__ __forceinline__ void LoadInput(const InlineArgs& args, DeviceInput* input) {
  *input = args.in.inputs[FindInput(args.in.inputs, args.params.num_inputs, blockIdx.x)];
}
__device__ __forceinline__ const char* InputBytes(const StagedArgs& args) {
  return args.params.input_bytes;
}
__device__ __forceinline__ const char* InputBytes(const InlineArgs& args) { return args.in.bytes; }

// Section 4.3: the copies of Count and Interfaces that the previous launch used are reset by this
// one, contiguous threads writing contiguous 16-byte words, so no cudaMemset precedes a launch.
__device__ __forceinline__ void ResetIdleCopies(const LaunchParams& p) {
  const uint64_t thread = uint64_t{blockIdx.x} * kThreads + threadIdx.x;
  const uint64_t threads = uint64_t{gridDim.x} * kThreads;
  const uint4 zero = make_uint4(0, 0, 0, 0);
  uint4* const counters = reinterpret_cast<uint4*>(p.idle_counters);
  for (uint64_t i = thread; i < p.idle_counter_words / 4; i += threads) counters[i] = zero;
  uint4* const interfaces = reinterpret_cast<uint4*>(p.idle_interfaces);
  for (uint64_t i = thread; i < p.idle_interface_words / 4; i += threads) interfaces[i] = zero;
}

// Algorithm 1 for the block's chunk of its input's row.
template <typename Args>
__device__ __forceinline__ void EvaluateChunk(const Args& args) {
  const LaunchParams& p = args.params;
  // Lines 3-7: the block's input, read once into shared memory, with its string.
  __shared__ DeviceInput input;
  __shared__ char bytes[kSharedStringBytes];
  if (threadIdx.x == 0) LoadInput(args, &input);
  __syncthreads();
  ValueRef attribute = MakeValueRef(input.value, input.meta, InputBytes(args));
  if (attribute.type == ValueType::kString && attribute.len > 0 &&
      attribute.len <= kSharedStringBytes) {
    // The condition is the block's input's: every thread of the block reaches the barrier.
    for (uint32_t i = threadIdx.x; i < attribute.len; i += kThreads) bytes[i] = attribute.s[i];
    __syncthreads();
    attribute.s = bytes;
  }
  // Lines 8-23 for the chunk; threads past the row's end have nothing to do.
  const uint64_t first = uint64_t{blockIdx.x - input.first_chunk} * p.chunk_items;
  const uint64_t chunk_end = first + p.chunk_items;
  const uint64_t end = chunk_end < input.row_size ? chunk_end : input.row_size;
  for (uint64_t k = first + threadIdx.x; k < end; k += kThreads) {
    EvaluateConstraint(p, input, attribute, static_cast<uint32_t>(k));
  }
}

// The last block to finish copies the bitmaps to the host. The block's barrier, then its first
// thread's fence before counting the block done, order all the block's atomics before that count
// (the pattern of cooperative groups' grid barrier); the last block fences again before reading.
__device__ __forceinline__ void PublishInterfaces(const LaunchParams& p) {
  __shared__ bool last;
  __syncthreads();
  if (threadIdx.x == 0) {
    __threadfence();
    last = atomicAdd(p.done, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!last) return;
  __threadfence();
  const uint64_t words = uint64_t{p.num_events} * p.interface_stride;
  for (uint64_t i = threadIdx.x; i < words; i += kThreads) {
    p.host_interfaces[i] = __ldcg(p.interfaces + i);
  }
  if (threadIdx.x == 0) *p.done = 0;
}

template <typename Args>
__global__ void __launch_bounds__(kThreads) MatchKernel(const __grid_constant__ Args args) {
  const LaunchParams& p = args.params;
  ResetIdleCopies(p);
  // Blocks past the work list are here for the reset alone.
  if (blockIdx.x < p.num_chunks) EvaluateChunk(args);
  if (p.host_interfaces != nullptr) PublishInterfaces(p);
}

}  // namespace

absl::Status CheckKernelImage() {
  for (const void* kernel : {reinterpret_cast<const void*>(MatchKernel<StagedArgs>),
                             reinterpret_cast<const void*>(MatchKernel<InlineArgs>)}) {
    cudaFuncAttributes attributes;
    const cudaError_t error = cudaFuncGetAttributes(&attributes, kernel);
    if (error == cudaSuccess) continue;
    cudaGetLastError();  // not a sticky error: clear it
    if (error == cudaErrorNoKernelImageForDevice || error == cudaErrorInvalidDeviceFunction ||
        error == cudaErrorUnsupportedPtxVersion) {
      return absl::FailedPreconditionError(
          absl::StrCat("the CCM kernel cannot run on this device (built for sm_90): ",
                       cudaGetErrorString(error)));
    }
    return gpu::CudaErrorToStatus(error, "cudaFuncGetAttributes(MatchKernel)", __FILE__, __LINE__);
  }
  return absl::OkStatus();
}

absl::Status LaunchMatch(const LaunchParams& params, const InlineInputs* inline_inputs,
                         cudaStream_t stream) {
  if (params.idle_counter_words % 4 != 0 || params.idle_interface_words % 4 != 0 ||
      params.chunk_items == 0 || params.chunk_items % kThreads != 0 ||
      (params.host_interfaces != nullptr && params.done == nullptr) ||
      (inline_inputs != nullptr && params.num_inputs > kInlineInputs)) {
    return absl::InternalError("CCM launch: inconsistent parameters");
  }
  const uint64_t reset_vectors = (params.idle_counter_words + params.idle_interface_words) / 4;
  const uint64_t per_block = uint64_t{kThreads} * kResetVectorsPerThread;
  const uint64_t blocks =
      std::max<uint64_t>(params.num_chunks, (reset_vectors + per_block - 1) / per_block);
  if (blocks == 0) return absl::OkStatus();
  if (blocks > INT_MAX) {
    return absl::InternalError(absl::StrCat("CCM launch of ", blocks, " blocks"));
  }
  if (inline_inputs != nullptr) {
    InlineArgs args{params, *inline_inputs};
    MatchKernel<InlineArgs><<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args);
  } else {
    MatchKernel<StagedArgs>
        <<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(StagedArgs{params});
  }
  TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  return absl::OkStatus();
}

}  // namespace tandem::match::ccm
