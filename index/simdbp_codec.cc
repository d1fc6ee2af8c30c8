// SIMD-BP128 (Lemire and Boytsov 2015, "Decoding billions of integers per second through
// vectorization", Software: Practice and Experience 45(1), section 4): a block of 128 values is
// bit-packed at one width b, the width of its largest value, with the values spread over four
// 32-bit lanes so that a 128-bit SIMD instruction unpacks four of them at once. Unlike PForDelta
// there are no exceptions: one large gap widens the whole block, and in exchange decoding is a
// straight run of shifts and masks with no patching. Kernels and the path choice:
// simdbp_codec_kernels.cc.
//
// Block layout (index/FORMAT.md):
//
//   byte 0     b: the bit width of the block's largest value, 0..32
//   n = 128    16 * b bytes: the vertical layout (PackVertical128 in simdbp_codec_internal.h)
//   n < 128    PackedBytes(n, b) bytes: the values packed one after another (bit_packing.h), as
//              every other codec packs them. Only a list's last block is partial; padding it to
//              128 values would cost up to 16 * b bytes for the many lists shorter than a block.
//
// n is not stored: the caller knows it from the list length. The block parameter is unused (0).
// A decoder rejects b > 32, a b that is not the largest value's width and nonzero padding bits.
#include "index/simdbp_codec.h"

#include <atomic>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/enum_names.h"
#include "index/bit_packing.h"
#include "index/block_codec.h"
#include "index/codecs_internal.h"
#include "index/simdbp_codec_internal.h"

namespace tandem::index {
namespace {

using internal::SimdBpKernels;

const SimdBpKernels* KernelsOf(SimdPath path) {
  switch (path) {
    case SimdPath::kScalar:
      return &internal::ScalarSimdBpKernels();
    case SimdPath::kSse41:
      return internal::Sse41SimdBpKernels();
    case SimdPath::kAvx2:
      return internal::Avx2SimdBpKernels();
  }
  return nullptr;
}

bool CpuHas(SimdPath path) {
#if defined(__x86_64__) || defined(__i386__)
  switch (path) {
    case SimdPath::kScalar:
      return true;
    case SimdPath::kSse41:
      return __builtin_cpu_supports("sse4.1");
    case SimdPath::kAvx2:
      return __builtin_cpu_supports("avx2");  // also checks that the OS saves the AVX registers
  }
  return false;
#else
  return path == SimdPath::kScalar;
#endif
}

SimdPath BestPath() {
  if (SimdPathAvailable(SimdPath::kAvx2)) return SimdPath::kAvx2;
  if (SimdPathAvailable(SimdPath::kSse41)) return SimdPath::kSse41;
  return SimdPath::kScalar;
}

// The best path, or the one TANDEM_SIMD names.
SimdPath InitialPath() {
  const char* env = std::getenv("TANDEM_SIMD");
  if (env == nullptr || *env == '\0') return BestPath();
  SimdPath path;
  if (!ParseSimdPath(env, &path)) {
    std::fprintf(stderr, "TANDEM_SIMD=%s is not scalar, sse41 or avx2; using %s\n", env,
                 SimdPathName(BestPath()).data());
    return BestPath();
  }
  if (!SimdPathAvailable(path)) {
    std::fprintf(stderr, "TANDEM_SIMD=%s: this CPU or build lacks it; using %s\n", env,
                 SimdPathName(BestPath()).data());
    return BestPath();
  }
  return path;
}

// The active path, decided at first use. Relaxed ordering suffices: every path computes the same
// results, so a decode that sees the old path after SetSimdPath is still correct.
std::atomic<SimdPath>& ActivePath() {
  static std::atomic<SimdPath> path{InitialPath()};
  return path;
}

const SimdBpKernels& ActiveKernels() {
  return *KernelsOf(ActivePath().load(std::memory_order_relaxed));
}

size_t BlockBytes(size_t n, uint32_t b) {
  return 1 + (n == kBlockSize ? internal::kSimdBpWordsPerBit * b * 4 : PackedBytes(n, b));
}

class SimdBpCodec final : public BlockCodec {
 public:
  std::string_view name() const override { return "simdbp"; }

  void Encode(const uint32_t* values, size_t n, uint32_t param, std::string* out) const override {
    assert(n >= 1 && n <= kBlockSize);
    uint32_t all = 0;
    for (size_t i = 0; i < n; ++i) all |= values[i];
    const uint32_t b = BitWidth(all);
    out->push_back(static_cast<char>(b));
    if (n < kBlockSize) {
      AppendPackedBits(values, n, b, out);
      return;
    }
    const size_t old_size = out->size();
    out->resize(old_size + BlockBytes(n, b) - 1);
    internal::PackVertical128(values, b, reinterpret_cast<uint8_t*>(out->data()) + old_size);
  }

  const uint8_t* Decode(const uint8_t* in, const uint8_t* end, size_t n, uint32_t param,
                        uint32_t* values) const override {
    if (n == 0 || n > kBlockSize || end <= in) return nullptr;
    const size_t avail = static_cast<size_t>(end - in);
    const uint32_t b = in[0];
    if (b > 32) return nullptr;
    const size_t size = BlockBytes(n, b);
    if (avail < size) return nullptr;  // the whole block first, so unpacking needs no checks
    uint32_t all = 0;
    if (n == kBlockSize) {
      all = ActiveKernels().unpack[b](in + 1, values);
    } else {
      UnpackBits(in + 1, avail - 1, n, b, values);
      for (size_t i = 0; i < n; ++i) all |= values[i];
      const uint32_t used_bits = static_cast<uint32_t>(n * b % 8);
      if (used_bits != 0 && (in[size - 1] >> used_bits) != 0) return nullptr;  // padding
    }
    if (BitWidth(all) != b) return nullptr;
    return in + size;
  }
};

}  // namespace

constexpr base::EnumName<SimdPath> kSimdPathNames[] = {
    {SimdPath::kScalar, "scalar"}, {SimdPath::kSse41, "sse41"}, {SimdPath::kAvx2, "avx2"}};

std::string_view SimdPathName(SimdPath path) { return base::NameOf(kSimdPathNames, path); }

bool ParseSimdPath(std::string_view name, SimdPath* path) {
  return base::ParseName(kSimdPathNames, name, path);
}

bool SimdPathAvailable(SimdPath path) { return KernelsOf(path) != nullptr && CpuHas(path); }

std::vector<SimdPath> AvailableSimdPaths() {
  std::vector<SimdPath> paths;
  for (SimdPath p : {SimdPath::kScalar, SimdPath::kSse41, SimdPath::kAvx2}) {
    if (SimdPathAvailable(p)) paths.push_back(p);
  }
  return paths;
}

SimdPath ActiveSimdPath() { return ActivePath().load(std::memory_order_relaxed); }

bool SetSimdPath(SimdPath path) {
  if (!SimdPathAvailable(path)) return false;
  ActivePath().store(path, std::memory_order_relaxed);
  return true;
}

bool GapsToDocids(uint32_t base, const uint32_t* gaps, size_t n, uint32_t* docids) {
  return ActiveKernels().gaps_to_docids(base, gaps, n, docids);
}

namespace internal {

const BlockCodec* SimdBpBlockCodec() { return CodecInstance<SimdBpCodec>(); }

}  // namespace internal
}  // namespace tandem::index
