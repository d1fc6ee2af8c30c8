// Builds a list's search form on the device (gpu/search_form.h): decode, least-squares line and
// its deviations, hash bucket starts.
#include <algorithm>
#include <cmath>
#include <cub/block/block_reduce.cuh>
#include <cuda/functional>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/device/cuda_status.h"
#include "gpu/kernels/search_range.cuh"
#include "gpu/layouts/list_format.h"
#include "gpu/layouts/search_form.h"

namespace tandem::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kReduceBlocks = 256;  // fixed, so the sums are the same on every build

struct LineSums {
  double x = 0;   // sum of docids[i]
  double ix = 0;  // sum of i * docids[i]
};
struct Deviations {
  double left = 0;   // max(e(x_i) - i)
  double right = 0;  // max(i - e(x_i))
};

__global__ void LineSumsKernel(const uint32_t* __restrict__ docids, uint32_t n,
                               LineSums* __restrict__ partial) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  double x = 0, ix = 0;
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    const double d = docids[i];
    x += d;
    ix += static_cast<double>(i) * d;
  }
  x = Reduce(temp).Sum(x);
  __syncthreads();
  ix = Reduce(temp).Sum(ix);
  if (threadIdx.x == 0) partial[blockIdx.x] = {x, ix};
}

__global__ void DeviationsKernel(const uint32_t* __restrict__ docids, uint32_t n, double alpha,
                                 double beta, Deviations* __restrict__ partial) {
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage temp;
  double left = 0, right = 0;
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    const double dev = kernels::LineEstimate(alpha, beta, docids[i]) - static_cast<double>(i);
    left = fmax(left, dev);
    right = fmax(right, -dev);
  }
  left = Reduce(temp).Reduce(left, ::cuda::maximum<>{});
  __syncthreads();
  right = Reduce(temp).Reduce(right, ::cuda::maximum<>{});
  if (threadIdx.x == 0) partial[blockIdx.x] = {left, right};
}

// starts[h] = the first position whose docID's bucket is >= h, for h in [0, num_buckets].
__global__ void BucketStartsKernel(const uint32_t* __restrict__ docids, uint32_t n, uint32_t shift,
                                   uint32_t num_buckets, uint32_t* __restrict__ starts) {
  for (uint32_t h = blockIdx.x * kThreads + threadIdx.x; h <= num_buckets;
       h += gridDim.x * kThreads) {
    const uint64_t first = uint64_t{h} << shift;
    starts[h] = first > 0xffffffffull
                    ? n
                    : kernels::LowerBound(docids, {0, n}, static_cast<uint32_t>(first));
  }
}

// violations[0] counts the docIDs at or above num_docs or not above the one before.
__global__ void DocidViolationsKernel(const uint32_t* __restrict__ docids, uint32_t n,
                                      uint32_t num_docs, uint32_t* __restrict__ violations) {
  uint32_t bad = 0;
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    const uint32_t d = docids[i];
    bad += d >= num_docs || (i > 0 && d <= docids[i - 1]);
  }
  if (bad > 0) atomicAdd(violations, bad);
}

dim3 GridFor(uint64_t n) {
  return dim3(static_cast<unsigned>(std::clamp<uint64_t>((n + kThreads - 1) / kThreads, 1, 4096)));
}

}  // namespace

absl::Status CheckDeviceDocids(const DevicePForList* pfor, const DeviceRiceList* rice,
                               uint32_t num_postings, uint32_t num_docs, cudaMemPool_t pool,
                               cudaStream_t stream) {
  if ((pfor == nullptr) == (rice == nullptr)) {
    return absl::InvalidArgumentError("a list is checked from one image");
  }
  if (num_postings == 0) return absl::OkStatus();
  void* memory = nullptr;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMallocFromPoolAsync(
      &memory, (AlignedWords(num_postings) + 4) * sizeof(uint32_t), pool, stream));
  uint32_t* docids = static_cast<uint32_t*>(memory);
  uint32_t* violations = docids + AlignedWords(num_postings);
  absl::Status status = [&]() -> absl::Status {
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(violations, 0, sizeof(uint32_t), stream));
    TANDEM_RETURN_IF_ERROR(pfor != nullptr
                               ? DecodePForList(*pfor, DecodeOutput::kDocids, docids, stream)
                               : DecodeRiceList(*rice, DecodeOutput::kDocids, docids, stream));
    DocidViolationsKernel<<<GridFor(num_postings), kThreads, 0, stream>>>(docids, num_postings,
                                                                          num_docs, violations);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    uint32_t bad = 0;
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(&bad, violations, sizeof(bad), cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    if (bad > 0) {
      return absl::DataLossError(absl::StrCat(bad, " of the list's ", num_postings,
                                              " docIDs are out of order or not below the "
                                              "collection size ",
                                              num_docs));
    }
    return absl::OkStatus();
  }();
  const cudaError_t freed = cudaFreeAsync(memory, stream);
  if (status.ok() && freed != cudaSuccess) {
    return absl::InternalError(absl::StrCat("cudaFreeAsync: ", cudaGetErrorString(freed)));
  }
  return status;
}

absl::StatusOr<SearchForm> BuildSearchForm(const DevicePForList* pfor, const DeviceRiceList* rice,
                                           uint32_t num_postings, uint32_t num_docs,
                                           const LrcDesc* seglrc, const uint32_t* seglrc_words,
                                           cudaMemPool_t pool, cudaStream_t stream,
                                           void** allocation) {
  if ((pfor == nullptr) == (rice == nullptr)) {
    return absl::InvalidArgumentError("a search form is built from one list image");
  }
  if (num_postings == 0 || num_docs == 0) {
    return absl::InvalidArgumentError("a search form needs postings and documents");
  }
  if (seglrc != nullptr) {
    if (const char* error = CheckDesc(*seglrc)) {
      return absl::InvalidArgumentError(absl::StrCat("bad SegLRC descriptor: ", error));
    }
    if (seglrc->num_postings != num_postings || seglrc_words == nullptr) {
      return absl::InvalidArgumentError("the SegLRC image is not the list's");
    }
  }
  SearchForm form;
  form.num_postings = num_postings;
  // One allocation: the docIDs (plain or SegLRC), then the three bucket arrays, each 16-byte
  // aligned.
  uint64_t words = AlignedWords(seglrc != nullptr ? seglrc->image_words : num_postings);
  uint64_t bucket_offset[3];
  for (int t = 0; t < 3; ++t) {
    HashBuckets& b = form.hash[t];
    b.shift = HashShift(num_postings, num_docs, kHashBucketPostings[t]);
    b.num_buckets = static_cast<uint32_t>(((uint64_t{num_docs} - 1) >> b.shift) + 1);
    bucket_offset[t] = words;
    words += AlignedWords(uint64_t{b.num_buckets} + 1);
  }
  form.bytes = words * sizeof(uint32_t);
  void* memory = nullptr;
  TANDEM_CUDA_RETURN_IF_ERROR(cudaMallocFromPoolAsync(&memory, form.bytes, pool, stream));
  *allocation = memory;
  uint32_t* base = static_cast<uint32_t*>(memory);
  uint32_t* docids = base;
  void* plain = nullptr;  // the decoded docIDs of a compressed form, until the ranges are built
  if (seglrc != nullptr) {
    form.lrc = *seglrc;
    form.lrc_image = base;
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(base, seglrc_words,
                                                seglrc->image_words * sizeof(uint32_t),
                                                cudaMemcpyHostToDevice, stream));
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMallocFromPoolAsync(&plain, uint64_t{num_postings} * sizeof(uint32_t), pool, stream));
    docids = static_cast<uint32_t*>(plain);
  } else {
    form.docids = docids;
  }
  TANDEM_RETURN_IF_ERROR(pfor != nullptr
                             ? DecodePForList(*pfor, DecodeOutput::kDocids, docids, stream)
                             : DecodeRiceList(*rice, DecodeOutput::kDocids, docids, stream));
  for (int t = 0; t < 3; ++t) {
    HashBuckets& b = form.hash[t];
    uint32_t* starts = base + bucket_offset[t];
    b.starts = starts;
    BucketStartsKernel<<<GridFor(uint64_t{b.num_buckets} + 1), kThreads, 0, stream>>>(
        docids, num_postings, b.shift, b.num_buckets, starts);
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
  }

  // The least-squares line docid ~ alpha * i + beta over i = 0..n-1.
  const double n = num_postings;
  if (num_postings >= 2) {
    void* scratch = nullptr;
    const size_t scratch_bytes = kReduceBlocks * std::max(sizeof(LineSums), sizeof(Deviations));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaMallocFromPoolAsync(&scratch, scratch_bytes, pool, stream));
    LineSums sums[kReduceBlocks];
    LineSumsKernel<<<kReduceBlocks, kThreads, 0, stream>>>(docids, num_postings,
                                                           static_cast<LineSums*>(scratch));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
    TANDEM_CUDA_RETURN_IF_ERROR(
        cudaMemcpyAsync(sums, scratch, sizeof(sums), cudaMemcpyDeviceToHost, stream));
    TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    double sum_x = 0, sum_ix = 0;
    for (const LineSums& s : sums) {
      sum_x += s.x;
      sum_ix += s.ix;
    }
    const double sum_i = n * (n - 1) / 2;
    const double sum_ii = (n - 1) * n * (2 * n - 1) / 6;
    const double denominator = n * sum_ii - sum_i * sum_i;
    const double alpha = denominator > 0 ? (n * sum_ix - sum_i * sum_x) / denominator : 0.0;
    if (std::isfinite(alpha) && alpha > 0) {
      form.lr_alpha = alpha;
      form.lr_beta = (sum_x - alpha * sum_i) / n;
      Deviations devs[kReduceBlocks];
      DeviationsKernel<<<kReduceBlocks, kThreads, 0, stream>>>(
          docids, num_postings, form.lr_alpha, form.lr_beta, static_cast<Deviations*>(scratch));
      TANDEM_CUDA_RETURN_IF_ERROR(cudaGetLastError());
      TANDEM_CUDA_RETURN_IF_ERROR(
          cudaMemcpyAsync(devs, scratch, sizeof(devs), cudaMemcpyDeviceToHost, stream));
      TANDEM_CUDA_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
      for (const Deviations& d : devs) {
        form.lr_left = std::max(form.lr_left, d.left);
        form.lr_right = std::max(form.lr_right, d.right);
      }
      if (!std::isfinite(form.lr_left) || !std::isfinite(form.lr_right)) form.lr_alpha = 0;
    }
    TANDEM_CUDA_RETURN_IF_ERROR(cudaFreeAsync(scratch, stream));
  }
  if (plain != nullptr) TANDEM_CUDA_RETURN_IF_ERROR(cudaFreeAsync(plain, stream));
  return form;
}

}  // namespace tandem::gpu
