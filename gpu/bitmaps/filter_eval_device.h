// File: filter_eval_device.h
//
// The device side of gpu/filter_eval.h, in C++17 for nvcc: no index types cross this line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gpu/bitmaps/bitmap_build_device.h"

namespace tandem::gpu {

// One instruction of filter::FilterProgram, with the same codes (filter::FilterOp::Code, checked in
// filter_eval.cc).
struct DeviceFilterOp {
  uint32_t code = 0;
  uint32_t column = 0;
};
enum DeviceFilterCode : uint32_t {
  kFilterColumn = 0,
  kFilterEmpty = 1,
  kFilterNot = 2,
  kFilterAnd = 3,
  kFilterOr = 4,
  kFilterAndNot = 5,
};
// The deepest stack a program may use: filter::kMaxFilterProgramStack.
inline constexpr uint32_t kMaxDeviceFilterStack = 66;

// Milliseconds of one evaluation, from events in stream order.
struct FilterEvalTimes {
  double upload_ms = 0;    // the program to the device
  double evaluate_ms = 0;  // the kernel: every chunk's rows from the compressed columns
  double encode_ms = 0;    // the chunks compressed on the device and copied out (wall time)
};

// Every column of an attribute index in device memory, with each word's first chunk: what the
// evaluation kernel searches. Evaluations are serialized on the object's own stream.
class DeviceFilterColumns {
 public:
  // words: every column's canonical words, column c at [offsets[c], offsets[c + 1]);
  // starts[i]: the first chunk of word i within its column.
  static absl::StatusOr<std::unique_ptr<DeviceFilterColumns>> Create(
      bool plwah, uint32_t num_rows, const uint32_t* words, const uint32_t* starts,
      size_t num_words, const uint64_t* offsets, size_t num_columns);
  virtual ~DeviceFilterColumns() = default;

  // Runs ops (a valid program: columns < num_columns, stack within max_stack <=
  // kMaxDeviceFilterStack) for every chunk of 31 rows and compresses the answer on the device:
  // `out` gets one column (key 0; none when no row is set) of canonical words in pinned memory,
  // valid until the next call. INVALID_ARGUMENT for an unknown code, a column out of range or a
  // stack that underflows, overflows or does not end with one word. `times` may be null.
  virtual absl::Status Evaluate(const DeviceFilterOp* ops, size_t num_ops, uint32_t max_stack,
                                PinnedBitmapColumns* out, FilterEvalTimes* times) = 0;
  virtual uint64_t device_bytes() const = 0;
};

}  // namespace tandem::gpu
