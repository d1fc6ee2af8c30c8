// File: filter_eval.h
//
// Filters evaluated on the GPU in the compressed domain: every column of the index's attributes is
// kept on the device as its WAH or PLWAH words, and a filter's program (filter::CompileFilter) runs
// with one thread per chunk of 31 documents, each reading just the word that covers it (a binary
// search over the words' first chunks), so no column is decompressed and a wide IN or range costs
// one pass however many columns it ORs. The answer is compressed on the device too (the bitmap
// builder's fills, PLWAH folding and placement, gpu/bitmap_build.h) and only its words come back:
// the same bitmap, byte for byte, as filter::EvaluateFilter's.
//
//   TANDEM_ASSIGN_OR_RETURN(auto evaluator, GpuFilterEvaluator::Create(*index.attributes()));
//   TANDEM_ASSIGN_OR_RETURN(filter::Bitmap docs, evaluator->Evaluate(filter));
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "filter/attribute_index.h"
#include "filter/bitmap.h"
#include "filter/filter.h"
#include "gpu/bitmaps/filter_eval_device.h"

namespace tandem::gpu {

class GpuFilterEvaluator {
 public:
  // Copies every column of `attributes` to the device; `attributes` must outlive the evaluator.
  // UNAVAILABLE or NOT_FOUND without a usable device, INVALID_ARGUMENT past 2^32 - 1 words.
  static absl::StatusOr<std::unique_ptr<GpuFilterEvaluator>> Create(
      const filter::AttributeIndex& attributes);

  // filter::EvaluateFilter's bitmap, with its errors. Thread-safe: evaluations take turns on the
  // evaluator's stream. `times` may be null.
  absl::StatusOr<filter::Bitmap> Evaluate(const filter::FilterNode& filter,
                                          FilterEvalTimes* times = nullptr) const;
  // A program compiled against this evaluator's attributes.
  absl::StatusOr<filter::Bitmap> Run(const filter::FilterProgram& program,
                                     FilterEvalTimes* times = nullptr) const;

  uint64_t device_bytes() const { return device_->device_bytes(); }

 private:
  GpuFilterEvaluator(const filter::AttributeIndex& attributes,
                     std::unique_ptr<DeviceFilterColumns> device)
      : attributes_(attributes), device_(std::move(device)) {}

  const filter::AttributeIndex& attributes_;
  mutable std::mutex mu_;
  std::unique_ptr<DeviceFilterColumns> device_;  // used under mu_
};

}  // namespace tandem::gpu
