// File: bitmap_build.h
//
// WAH and PLWAH bitmap indexes built on the GPU (Fusco et al. 2013, sections 3-4): the same
// columns, byte for byte, as filter::BuildBitmaps on the CPU. A builder keeps its device and
// pinned buffers between builds, as an indexer does between batches.
//
//   TANDEM_ASSIGN_OR_RETURN(auto builder, GpuBitmapBuilder::Create());
//   TANDEM_ASSIGN_OR_RETURN(filter::BitmapColumns columns,
//                           builder->Build(filter::BitmapCodec::kPlwah, num_docs, values));
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "absl/status/statusor.h"
#include "filter/bitmap.h"
#include "gpu/bitmaps/bitmap_build_device.h"

namespace tandem::gpu {

class GpuBitmapBuilder {
 public:
  // UNAVAILABLE or NOT_FOUND without a usable device.
  static absl::StatusOr<std::unique_ptr<GpuBitmapBuilder>> Create();

  // As filter::BuildBitmaps, with the same errors for bad rows; `times` (may be null) gets the
  // steps' device times.
  absl::StatusOr<filter::BitmapColumns> Build(filter::BitmapCodec codec, uint32_t num_rows,
                                              std::span<const uint32_t> values,
                                              std::span<const uint32_t> rows = {},
                                              BitmapBuildTimes* times = nullptr);

  // The build without the copy out of pinned memory: what the throughput benchmark times. The
  // result is valid until the next build.
  absl::StatusOr<PinnedBitmapColumns> BuildPinned(filter::BitmapCodec codec, uint32_t num_rows,
                                                  std::span<const uint32_t> values,
                                                  std::span<const uint32_t> rows = {},
                                                  BitmapBuildTimes* times = nullptr);

 private:
  explicit GpuBitmapBuilder(std::unique_ptr<DeviceBitmapBuilder> device)
      : device_(std::move(device)) {}
  std::unique_ptr<DeviceBitmapBuilder> device_;
};

}  // namespace tandem::gpu
