// File: ccm_format.h
//
// The layout of the CCM matcher's device tables (Margara & Cugola, DEBS 2011, section 4.1) and
// the evaluation of one constraint by Algorithm 1 (section 4.2), shared by the kernel
// (ccm_kernels.cu), the host tables that mirror the device (ccm_tables.h) and the host evaluator
// of the tests. Plain structs and inline functions, no CUDA includes: compiles as C++17 (nvcc)
// and C++20 (g++).
//
// Table Constraints is one pool of `DeviceConstraint`s in which every row (one per attribute name,
// one per distinct term of `terms contains` constraints) has a contiguous range; SizeC stays on the
// host, which hands each launch's inputs their row's range. Table Filters is one packed word per
// filter id: SizeF (the count of its constraints, 0 for a free id) and InterfaceId. Count holds one
// 8-bit counter per filter and event, four to a 32-bit word; Interfaces one bitmap per event.
#pragma once

#include <cstdint>
#include <cstring>

#include "match/satisfies.h"

namespace tandem::match::ccm {

// Threads per block of the matching kernel.
inline constexpr uint32_t kThreads = 256;
// Attribute strings up to this long are copied into the block's shared memory.
inline constexpr uint32_t kSharedStringBytes = 512;
// The longest string a constraint or attribute may hold (24 bits of `meta`).
inline constexpr uint32_t kMaxStringBytes = (1u << 24) - 1;
// Interface ids fit in the 24 high bits of a filter's word.
inline constexpr uint32_t kMaxInterfaces = 1u << 24;

// `meta` of a constraint or an input: the operator in bits 0-3, the value type in bits 4-7, the
// length of a string in bits 8-31.
TANDEM_MATCH_HD uint32_t PackMeta(Op op, ValueType type, uint32_t length) {
  return static_cast<uint32_t>(op) | (static_cast<uint32_t>(type) << 4) | (length << 8);
}
TANDEM_MATCH_HD Op MetaOp(uint32_t meta) { return static_cast<Op>(meta & 0xf); }
TANDEM_MATCH_HD ValueType MetaType(uint32_t meta) {
  return static_cast<ValueType>((meta >> 4) & 0xf);
}
TANDEM_MATCH_HD uint32_t MetaLength(uint32_t meta) { return meta >> 8; }

// One element of table Constraints: Op, Type, Val and FilterId in 16 bytes, so the threads of a
// warp read their 32 consecutive elements with four 128-byte transactions.
struct alignas(16) DeviceConstraint {
  uint64_t value;   // the int64's bits, the double's bits, or the string's offset in the pool
  uint32_t filter;  // FilterId
  uint32_t meta;    // PackMeta; a `contains` constraint (term row) carries no value
};
static_assert(sizeof(DeviceConstraint) == 16, "four words per constraint");

// Table Filters: SizeF in bits 0-7 (at most kMaxConstraintsPerFilter), InterfaceId above.
TANDEM_MATCH_HD uint32_t PackFilter(uint32_t interface, uint32_t size) {
  return (interface << 8) | size;
}
TANDEM_MATCH_HD uint32_t FilterSize(uint32_t word) { return word & 0xff; }
TANDEM_MATCH_HD uint32_t FilterInterface(uint32_t word) { return word >> 8; }

// One entry of table Input: an event's attribute or term that selects a non-empty row.
struct alignas(8) DeviceInput {
  uint64_t value;        // as DeviceConstraint::value; strings: offset in the launch's bytes
  uint32_t meta;         // PackMeta with the attribute's type and length (op unused)
  uint32_t event;        // the event's slot in the launch: its counters and bitmap
  uint32_t row_begin;    // the row's first element in the pool
  uint32_t row_size;     // SizeC of the row
  uint32_t first_chunk;  // the input's first block in the launch's work list
  uint32_t unused;
};
static_assert(sizeof(DeviceInput) == 32, "eight words per input");

// Everything one launch reads and writes, in device memory.
struct LaunchParams {
  const DeviceConstraint* constraints;  // table Constraints
  const char* strings;                  // the constraints' string values
  const uint32_t* filters;              // table Filters
  // Table Input, the work list and the inputs' strings, copied to the device; null when the
  // launch carries them in its parameters (InlineInputs).
  const DeviceInput* inputs;
  const uint32_t* chunk_input;  // per block: its input (the flattened work list)
  const char* input_bytes;      // the inputs' string values
  uint32_t num_inputs;
  uint32_t num_chunks;        // blocks with constraints to evaluate
  uint32_t chunk_items;       // constraints per block: a multiple of kThreads
  uint32_t num_events;        // launch slots in use
  uint32_t counter_stride;    // Count words per event, a multiple of 4
  uint32_t interface_stride;  // Interfaces words per event, a multiple of 4
  uint32_t* counters;         // the active copy of Count (section 4.3)
  uint32_t* interfaces;       // the active copy of Interfaces
  uint32_t* idle_counters;    // the idle copies, reset by this launch
  uint32_t* idle_interfaces;
  uint64_t idle_counter_words;  // words of the idle copies to reset: multiples of 4
  uint64_t idle_interface_words;
  // When not null, the last block to finish copies the launch's bitmaps here (pinned host memory
  // mapped into the device), in place of a copy after the kernel; `done` counts finished blocks
  // and is left at 0.
  uint32_t* host_interfaces;
  uint32_t* done;
};

// A small launch's inputs and their strings, in the kernel's parameters: no copy precedes the
// kernel, and a block finds its input by a binary search in constant memory (FindInput) instead
// of two dependent reads of device memory. The whole stays below the 4 KB of kernel parameters.
inline constexpr uint32_t kInlineInputs = 64;
inline constexpr uint32_t kInlineBytes = 1024;
struct InlineInputs {
  DeviceInput inputs[kInlineInputs];
  char bytes[kInlineBytes];
};

// The input whose chunks hold block `chunk`: the last of `inputs` (in work-list order, each with
// at least one chunk) whose first chunk is not after it.
TANDEM_MATCH_HD uint32_t FindInput(const DeviceInput* inputs, uint32_t num_inputs, uint32_t chunk) {
  uint32_t low = 0, high = num_inputs;  // inputs[low].first_chunk <= chunk < inputs[high]'s
  while (high - low > 1) {
    const uint32_t mid = low + (high - low) / 2;
    if (inputs[mid].first_chunk <= chunk) {
      low = mid;
    } else {
      high = mid;
    }
  }
  return low;
}

// The value of a constraint or an input as `Satisfies` reads it; `strings` is the pool its
// string offset points into.
TANDEM_MATCH_HD ValueRef MakeValueRef(uint64_t value, uint32_t meta, const char* strings) {
  ValueRef ref;
  ref.type = MetaType(meta);
  if (ref.type == ValueType::kInt) {
    ref.i = static_cast<int64_t>(value);
  } else if (ref.type == ValueType::kDouble) {
    memcpy(&ref.d, &value, sizeof(double));
  } else {
    ref.s = strings + value;
    ref.len = MetaLength(meta);
  }
  return ref;
}

TANDEM_MATCH_HD uint64_t DoubleBits(double d) {
  uint64_t bits;
  memcpy(&bits, &d, sizeof(bits));
  return bits;
}

// The device's atomics; the host evaluator of the tests runs one thread and needs none.
TANDEM_MATCH_HD uint32_t FetchAdd(uint32_t* word, uint32_t add) {
#if defined(__CUDA_ARCH__)
  return atomicAdd(word, add);
#else
  const uint32_t old = *word;
  *word = old + add;
  return old;
#endif
}

TANDEM_MATCH_HD void SetBit(uint32_t* bitmap, uint32_t bit) {
  uint32_t* word = bitmap + bit / 32;
  const uint32_t mask = 1u << (bit % 32);
#if defined(__CUDA_ARCH__)
  // Many filters of one interface may complete in one event (few names, broad filters): the
  // read from L2 spares most of them an atomic on the same word.
  if ((__ldcg(word) & mask) == 0) atomicOr(word, mask);
#else
  *word |= mask;
#endif
}

TANDEM_MATCH_HD DeviceConstraint LoadConstraint(const DeviceConstraint* at) {
#if defined(__CUDA_ARCH__)
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(at));  // one 128-bit read-only load
  DeviceConstraint c;
  c.value = (static_cast<uint64_t>(v.y) << 32) | v.x;
  c.filter = v.z;
  c.meta = v.w;
  return c;
#else
  return *at;
#endif
}

TANDEM_MATCH_HD uint32_t LoadFilter(const uint32_t* at) {
#if defined(__CUDA_ARCH__)
  return __ldg(at);
#else
  return *at;
#endif
}

// Algorithm 1, lines 12-23, for element `k` of the row that `input` selects: evaluate the
// constraint, count it for its filter in the event's slice of Count (atomicAdd of 1 << 8 * (f % 4):
// a filter's counter never passes its SizeF <= 255, so it never carries into its neighbour), and
// let the thread that completes the filter set its interface. Term rows hold only `contains`
// constraints, which hold because the row was selected: the "always true" operator.
TANDEM_MATCH_HD void EvaluateConstraint(const LaunchParams& p, const DeviceInput& input,
                                        const ValueRef& attribute, uint32_t k) {
  const DeviceConstraint c = LoadConstraint(p.constraints + input.row_begin + k);
  const Op op = MetaOp(c.meta);
  if (op != Op::kContains && !Satisfies(op, MakeValueRef(c.value, c.meta, p.strings), attribute)) {
    return;
  }
  const uint32_t filter = LoadFilter(p.filters + c.filter);
  const uint32_t shift = 8 * (c.filter % 4);
  uint32_t* word =
      p.counters + static_cast<uint64_t>(input.event) * p.counter_stride + c.filter / 4;
  const uint32_t before = (FetchAdd(word, 1u << shift) >> shift) & 0xff;
  if (before + 1 != FilterSize(filter)) return;
  SetBit(p.interfaces + static_cast<uint64_t>(input.event) * p.interface_stride,
         FilterInterface(filter));
}

}  // namespace tandem::match::ccm
