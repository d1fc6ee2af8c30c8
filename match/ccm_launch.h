// File: ccm_launch.h
//
// One launch of the CCM kernel, laid out on the host: table Input (Margara & Cugola, section 4.2:
// one entry per attribute or term of an event that selects a non-empty row), the work list of the
// launch's blocks, and the attributes' string bytes, in one buffer that the matcher copies to the
// device at once (or, for a small launch, passes in the kernel's parameters: InlineInputs in
// ccm_format.h). Plain C++, no CUDA.
//
// The work list. The paper's grid covers the longest selected row for every input (blockIdx.y an
// input, blockIdx.x a piece of the row), so with rows of very different lengths, as under a Zipf
// distribution of names, most of its threads stop at once (section 5, "Distribution of Names").
// Here each input's row is cut into chunks of `chunk_items` constraints and the chunks of every
// input of every event of the launch are numbered one after the other (a prefix sum over the
// rows' sizes): block b evaluates chunk b, so only the last chunk of each input leaves threads
// idle, and one launch serves a whole batch. A block still reads its one input into shared memory
// once, as Algorithm 1 does. `chunk_items` grows with the work (up to 16 constraints a thread) so
// that a large batch spends its blocks' start-up on more constraints.
//
//   LaunchBuilder builder;
//   const size_t taken = builder.Build(tables, events, {.max_events = 1024});
//   builder.WriteStaging(pinned);  // builder.staging_bytes() bytes
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/types/span.h"
#include "match/ccm_format.h"
#include "match/ccm_tables.h"
#include "match/model.h"

namespace tandem::match::ccm {

class LaunchBuilder {
 public:
  struct Limits {
    size_t max_events = 1;
    // Inputs of one launch, beyond the first event (whose inputs always go in whole).
    size_t max_inputs = size_t{1} << 20;
    // Threads the device holds at once; chunks are sized for about four waves of blocks.
    uint64_t resident_threads = uint64_t{1} << 18;
  };

  // Lays out the longest prefix of `events` within `limits`, at least one event when there is
  // one; returns how many events it took (event slot e of the launch is events[e]). The events are
  // normalized: each attribute name and term at most once, so an event selects a row at most once
  // and no counter passes its filter's size.
  size_t Build(const CcmTables& tables, absl::Span<const Event> events, const Limits& limits);

  size_t num_inputs() const { return inputs_.size(); }
  size_t num_chunks() const { return chunk_input_.size(); }
  uint32_t chunk_items() const { return chunk_items_; }
  uint64_t work() const { return work_; }  // constraints the launch evaluates

  // The staging buffer: the inputs, then each chunk's input, then the strings' bytes.
  size_t chunks_offset() const { return inputs_.size() * sizeof(DeviceInput); }
  size_t bytes_offset() const { return chunks_offset() + chunk_input_.size() * sizeof(uint32_t); }
  size_t staging_bytes() const { return bytes_offset() + bytes_.size(); }
  void WriteStaging(char* out) const;

  const std::vector<DeviceInput>& inputs() const { return inputs_; }
  const std::vector<uint32_t>& chunk_input() const { return chunk_input_; }
  const std::vector<char>& bytes() const { return bytes_; }
  size_t host_bytes() const;

 private:
  void AddInput(const CcmTables& tables, uint32_t row, const Value* value, uint32_t event);

  std::vector<DeviceInput> inputs_;
  std::vector<uint32_t> chunk_input_;
  std::vector<char> bytes_;
  uint32_t chunk_items_ = kThreads;
  uint64_t work_ = 0;
};

}  // namespace tandem::match::ccm
