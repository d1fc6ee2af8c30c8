// File: filter_eval.cc
//
// The columns laid out for the device (concatenated in filter::FilterColumn order, each word's
// first chunk within its column), and programs handed to filter_eval.cu, which answers with the
// compressed words.
#include "gpu/bitmaps/filter_eval.h"

#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "gpu/device/device.h"

namespace tandem::gpu {
namespace {

using Code = filter::FilterOp::Code;
static_assert(static_cast<uint32_t>(Code::kColumn) == kFilterColumn);
static_assert(static_cast<uint32_t>(Code::kEmpty) == kFilterEmpty);
static_assert(static_cast<uint32_t>(Code::kNot) == kFilterNot);
static_assert(static_cast<uint32_t>(Code::kAnd) == kFilterAnd);
static_assert(static_cast<uint32_t>(Code::kOr) == kFilterOr);
static_assert(static_cast<uint32_t>(Code::kAndNot) == kFilterAndNot);
static_assert(filter::kMaxFilterProgramStack == kMaxDeviceFilterStack);

// Chunks word w stands for (index/bitmap.h's word forms).
uint32_t ChunksOf(uint32_t w, bool plwah) {
  if (w & 0x80000000u) return 1;
  if (plwah) return (w & 0x01FFFFFFu) + (((w >> 25) & 0x1Fu) != 0 ? 1u : 0u);
  return w & 0x3FFFFFFFu;
}

}  // namespace

absl::StatusOr<std::unique_ptr<GpuFilterEvaluator>> GpuFilterEvaluator::Create(
    const filter::AttributeIndex& attributes) {
  TANDEM_RETURN_IF_ERROR(ProbeDevice().status());
  const bool plwah = attributes.codec() == filter::BitmapCodec::kPlwah;
  std::vector<uint32_t> words, starts;
  std::vector<uint64_t> offsets = {0};
  for (const filter::AttributeField& field : attributes.fields()) {
    for (size_t c = 0; c < field.columns.num_columns(); ++c) {
      const filter::BitmapView column = field.columns.Column(c);
      uint32_t chunk = 0;
      for (const uint32_t w : column.words()) {
        words.push_back(w);
        starts.push_back(chunk);
        chunk += ChunksOf(w, plwah);  // a canonical column covers at most 2^32 / 31 chunks
      }
      offsets.push_back(words.size());
    }
  }
  if (words.size() > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the attributes hold ", words.size(), " bitmap words; the GPU evaluator takes 2^32 - 1"));
  }
  TANDEM_ASSIGN_OR_RETURN(
      std::unique_ptr<DeviceFilterColumns> device,
      DeviceFilterColumns::Create(plwah, attributes.num_docs(), words.data(), starts.data(),
                                  words.size(), offsets.data(), offsets.size() - 1));
  return std::unique_ptr<GpuFilterEvaluator>(new GpuFilterEvaluator(attributes, std::move(device)));
}

absl::StatusOr<filter::Bitmap> GpuFilterEvaluator::Evaluate(const filter::FilterNode& filter,
                                                            FilterEvalTimes* times) const {
  TANDEM_ASSIGN_OR_RETURN(filter::FilterProgram program,
                          filter::CompileFilter(filter, attributes_));
  return Run(program, times);
}

absl::StatusOr<filter::Bitmap> GpuFilterEvaluator::Run(const filter::FilterProgram& program,
                                                       FilterEvalTimes* times) const {
  std::vector<DeviceFilterOp> ops;
  ops.reserve(program.ops.size());
  for (const filter::FilterOp& op : program.ops) {
    ops.push_back({static_cast<uint32_t>(op.code), op.column});
  }
  std::lock_guard<std::mutex> lock(mu_);
  PinnedBitmapColumns out;
  TANDEM_RETURN_IF_ERROR(device_->Evaluate(ops.data(), ops.size(), program.max_stack, &out, times));
  return filter::Bitmap(attributes_.codec(), attributes_.num_docs(),
                        std::vector<uint32_t>(out.words, out.words + out.num_words));
}

}  // namespace tandem::gpu
