// File: bitmap_build_device.h
//
// The device side of gpu/bitmap_build.h, in C++17 for nvcc: no index types cross this line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tandem::gpu {

// Milliseconds of each step of one build, measured with events in stream order (Fusco et al.,
// Figure 6). Zero when not measured.
struct BitmapBuildTimes {
  double upload_ms = 0;    // values (and rows) to the device
  double sort_ms = 0;      // step 2: record ids sorted by value (CUB radix sort)
  double literals_ms = 0;  // step 3: chunk ids and partial literals
  double merge_ms = 0;     // step 4: literals merged by (value, chunk): reduce-by-key with OR
  double fills_ms = 0;     // step 5: runs of full chunks, fills by adjacent difference, and (5.1)
                           // PLWAH's single-bit literals folded into the fill before them
  double fuse_ms = 0;      // step 6: fills and literals fused and compacted by a scan
  double offsets_ms = 0;   // step 7: column lengths (reduce-by-key) and offsets (a scan)
  double download_ms = 0;  // keys, offsets and words to the host
  double total_ms() const {
    return upload_ms + sort_ms + literals_ms + merge_ms + fills_ms + fuse_ms + offsets_ms +
           download_ms;
  }
};

// A build's result in the builder's pinned host memory, valid until its next Build: the paper's
// keys, offsets and index arrays (section 3.1).
struct PinnedBitmapColumns {
  const uint32_t* keys = nullptr;
  const uint64_t* offsets = nullptr;  // num_keys + 1
  const uint32_t* words = nullptr;
  size_t num_keys = 0;
  size_t num_words = 0;
};

// The most (row, value) pairs one build takes: a run writes at most 7 words (a literal and the
// fills of a gap of up to 2^32 rows), and positions are 32-bit.
inline constexpr size_t kMaxBuildValues = size_t{1} << 29;

// Device buffers kept between builds, so repeated builds allocate nothing once warm.
class DeviceBitmapBuilder {
 public:
  static absl::StatusOr<std::unique_ptr<DeviceBitmapBuilder>> Create();
  virtual ~DeviceBitmapBuilder() = default;

  // Builds the columns of values[0..n) (row i, or rows[i] when rows is not null); the caller has
  // checked the rows (< num_rows, non-decreasing). n <= kMaxBuildValues. Host memory that is pinned
  // (cudaHostRegister) is copied at full PCIe speed, other memory through the driver's staging.
  // `times` may be null: then no events are recorded.
  virtual absl::Status Build(bool plwah, uint32_t num_rows, const uint32_t* values,
                             const uint32_t* rows, size_t n, PinnedBitmapColumns* out,
                             BitmapBuildTimes* times) = 0;

  // Steps 5-7 alone, for a bitmap whose chunks were computed on the device (gpu/filter_eval.h):
  // payloads[c] holds the 31 row bits of chunk c (bit 31 clear, rows past the last clear), in
  // device memory, written by work that is complete. The result is one column (key 0; no column
  // when every chunk is zero) in pinned memory, valid until the next call.
  virtual absl::Status EncodeChunks(bool plwah, const uint32_t* payloads, uint64_t num_chunks,
                                    PinnedBitmapColumns* out) = 0;
};

}  // namespace tandem::gpu
