#include "match/ccm_launch.h"

#include <algorithm>
#include <cstring>

namespace tandem::match::ccm {
namespace {

constexpr uint64_t kMaxItemsPerThread = 16;
constexpr uint64_t kWaves = 4;
// A launch stops taking events past this many constraints, so its chunks stay far below 2^31
// blocks (one event selects distinct rows: at most every live constraint once).
constexpr uint64_t kMaxLaunchWork = uint64_t{1} << 32;

}  // namespace

size_t LaunchBuilder::Build(const CcmTables& tables, absl::Span<const Event> events,
                            const Limits& limits) {
  inputs_.clear();
  chunk_input_.clear();
  bytes_.clear();
  work_ = 0;
  size_t taken = 0;
  while (taken < events.size() && taken < limits.max_events) {
    if (taken > 0 && (inputs_.size() >= limits.max_inputs || work_ >= kMaxLaunchWork)) break;
    const Event& event = events[taken];
    const uint32_t slot = static_cast<uint32_t>(taken);
    // Section 4's constraint selection, on the host: the map Names, and the terms' rows.
    for (const Attribute& a : event.attributes) {
      AddInput(tables, tables.FindNameRow(a.name), &a.value, slot);
    }
    for (const std::string& term : event.terms) {
      AddInput(tables, tables.FindTermRow(term), nullptr, slot);
    }
    ++taken;
  }
  const uint64_t threads = std::max<uint64_t>(limits.resident_threads, 1) * kWaves;
  const uint64_t items =
      std::clamp<uint64_t>((work_ + threads - 1) / threads, 1, kMaxItemsPerThread);
  chunk_items_ = static_cast<uint32_t>(kThreads * items);
  for (size_t i = 0; i < inputs_.size(); ++i) {
    DeviceInput& input = inputs_[i];
    input.first_chunk = static_cast<uint32_t>(chunk_input_.size());
    const size_t chunks = (input.row_size + chunk_items_ - 1) / chunk_items_;
    chunk_input_.insert(chunk_input_.end(), chunks, static_cast<uint32_t>(i));
  }
  return taken;
}

void LaunchBuilder::AddInput(const CcmTables& tables, uint32_t r, const Value* value,
                             uint32_t event) {
  if (r == CcmTables::kNoRow) return;
  const Row& row = tables.row(r);  // a live row is never empty
  DeviceInput input{};
  input.event = event;
  input.row_begin = row.begin;
  input.row_size = row.size;
  if (value == nullptr) {
    input.meta = PackMeta(Op::kContains, ValueType::kInt, 0);  // a term: no value to read
  } else {
    switch (value->type) {
      case ValueType::kInt:
        input.value = static_cast<uint64_t>(value->i);
        input.meta = PackMeta(Op::kEq, ValueType::kInt, 0);
        break;
      case ValueType::kDouble:
        input.value = DoubleBits(value->d);
        input.meta = PackMeta(Op::kEq, ValueType::kDouble, 0);
        break;
      case ValueType::kString:
        input.value = bytes_.size();
        input.meta = PackMeta(Op::kEq, ValueType::kString, static_cast<uint32_t>(value->s.size()));
        bytes_.insert(bytes_.end(), value->s.begin(), value->s.end());
        break;
    }
  }
  inputs_.push_back(input);
  work_ += row.size;
}

void LaunchBuilder::WriteStaging(char* out) const {
  if (!inputs_.empty()) std::memcpy(out, inputs_.data(), chunks_offset());
  if (!chunk_input_.empty()) {
    std::memcpy(out + chunks_offset(), chunk_input_.data(), chunk_input_.size() * sizeof(uint32_t));
  }
  if (!bytes_.empty()) std::memcpy(out + bytes_offset(), bytes_.data(), bytes_.size());
}

size_t LaunchBuilder::host_bytes() const {
  return inputs_.capacity() * sizeof(DeviceInput) + chunk_input_.capacity() * sizeof(uint32_t) +
         bytes_.capacity();
}

}  // namespace tandem::match::ccm
