// File: bitmap_build.cc
//
// filter::CheckBitmapInput, then the device build of bitmap_build.cu.
#include "gpu/bitmaps/bitmap_build.h"

#include "base/status_macros.h"
#include "gpu/device/device.h"

namespace tandem::gpu {

absl::StatusOr<std::unique_ptr<GpuBitmapBuilder>> GpuBitmapBuilder::Create() {
  TANDEM_RETURN_IF_ERROR(ProbeDevice().status());
  TANDEM_ASSIGN_OR_RETURN(auto device, DeviceBitmapBuilder::Create());
  return std::unique_ptr<GpuBitmapBuilder>(new GpuBitmapBuilder(std::move(device)));
}

absl::StatusOr<PinnedBitmapColumns> GpuBitmapBuilder::BuildPinned(filter::BitmapCodec codec,
                                                                  uint32_t num_rows,
                                                                  std::span<const uint32_t> values,
                                                                  std::span<const uint32_t> rows,
                                                                  BitmapBuildTimes* times) {
  TANDEM_RETURN_IF_ERROR(filter::CheckBitmapInput(num_rows, values, rows));
  PinnedBitmapColumns out;
  TANDEM_RETURN_IF_ERROR(device_->Build(codec == filter::BitmapCodec::kPlwah, num_rows,
                                        values.data(), rows.empty() ? nullptr : rows.data(),
                                        values.size(), &out, times));
  return out;
}

absl::StatusOr<filter::BitmapColumns> GpuBitmapBuilder::Build(filter::BitmapCodec codec,
                                                              uint32_t num_rows,
                                                              std::span<const uint32_t> values,
                                                              std::span<const uint32_t> rows,
                                                              BitmapBuildTimes* times) {
  TANDEM_ASSIGN_OR_RETURN(PinnedBitmapColumns pinned,
                          BuildPinned(codec, num_rows, values, rows, times));
  filter::BitmapColumns columns;
  columns.codec = codec;
  columns.num_rows = num_rows;
  columns.keys.assign(pinned.keys, pinned.keys + pinned.num_keys);
  columns.offsets.assign(pinned.offsets, pinned.offsets + pinned.num_keys + 1);
  columns.words.assign(pinned.words, pinned.words + pinned.num_words);
  return columns;
}

}  // namespace tandem::gpu
