// PForDelta ("patched frame of reference"; Zukowski et al. 2006, "Super-Scalar RAM-CPU Cache
// Compression", ICDE) with a bit width chosen per block, the CPU baseline of Ding et al. 2009
// (sections 2 and 6, which compare against "the version in [23], which can select a different b for
// each block").
//
// Every value's low b bits go to a fixed b-bit slot, so the bulk of a block decodes with one
// unrolled, branch-free unpack; the few values >= 2^b ("exceptions") are patched afterwards. As in
// Ding et al. section 6, and unlike the linked list of exceptions threaded through the slots in
// Zukowski et al., an exception keeps its low b bits in its slot and its position and high bits go
// to two separate arrays, so b = 0 and b = 32 need no special cases and exceptions may be
// arbitrarily close together. Unlike the paper's GPU version, which uses one b per list and
// compresses those two arrays recursively, b is chosen per block and the arrays are stored plainly:
// a byte per position and the high parts packed at the width of the largest.
//
// Block layout (all multi-bit fields packed little-endian, see bit_packing.h):
//
//   byte 0      b: slot width, 0..32
//   byte 1      e: number of exceptions, 0..n
//   byte 2      h: bit width of the high parts, 1..32-b (the encoder writes the largest part's
//               width); present only when e > 0
//   slots       PackedBytes(n, b) bytes: values[i] mod 2^b for i = 0..n-1
//   positions   e bytes: the exceptions' indexes, strictly increasing, each < n
//   highs       PackedBytes(e, h) bytes: values[position] >> b for each exception (nonzero), in the
//               order of `positions`
//
// n is not stored: the caller knows it from the list length. The block parameter is unused (0).
#include <bit>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "index/bit_packing.h"
#include "index/block_codec.h"
#include "index/codecs_internal.h"
#include "index/pfor_internal.h"

namespace tandem::index {
namespace internal {
namespace {

// Size of a block of n values encoded with slot width b, e exceptions and high parts of h bits.
size_t PForBlockBytes(size_t n, uint32_t b, size_t e, uint32_t h) {
  return e == 0 ? 2 + PackedBytes(n, b) : 3 + PackedBytes(n, b) + e + PackedBytes(e, h);
}

}  // namespace

// Zukowski et al. pick b so that a target share of the values (say 90%, as Ding et al. section 2
// puts it) fits. Following the OPT-PFD variant of Yan, Ding and Suel 2009 (the paper's [23]), we
// instead take the b that makes the block smallest. That lands near the 90% rule on its own:
// lowering b by one saves n/8 bytes and costs at least a byte per new exception, so it only pays
// while fewer than about one value in nine becomes an exception.
PForBitWidth ChoosePForBitWidth(const uint32_t* values, size_t n) {
  // count[w]: values whose bit width is w. A value is an exception under b iff its width exceeds b.
  // Blocks often repeat a width many times in a row (runs of zeros among frequencies), and
  // incrementing one counter back to back waits on the previous store each time, so four striped
  // histograms are counted and then summed.
  uint32_t striped[4][33] = {};
  size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    ++striped[0][BitWidth(values[i])];
    ++striped[1][BitWidth(values[i + 1])];
    ++striped[2][BitWidth(values[i + 2])];
    ++striped[3][BitWidth(values[i + 3])];
  }
  for (; i < n; ++i) ++striped[0][BitWidth(values[i])];
  size_t count[33];
  for (int w = 0; w <= 32; ++w) {
    count[w] = striped[0][w] + striped[1][w] + striped[2][w] + striped[3][w];
  }
  uint32_t max_width = 32;
  while (max_width > 0 && count[max_width] == 0) --max_width;

  // Widths above max_width only grow the slots, so b runs from max_width (no exceptions) down to 0.
  PForBitWidth best{max_width, 0, PForBlockBytes(n, max_width, 0, 0)};
  size_t exceptions = 0;
  for (uint32_t b = max_width; b-- > 0;) {
    exceptions += count[b + 1];
    const size_t bytes = PForBlockBytes(n, b, exceptions, max_width - b);
    // Going down, exceptions never decrease. On equal sizes keep the larger b, whose fewer
    // exceptions patch faster, unless this b has no more of them (no value has width b + 1).
    if (bytes < best.encoded_bytes ||
        (bytes == best.encoded_bytes && exceptions == best.exceptions)) {
      best = {b, exceptions, bytes};
    }
  }
  return best;
}

void EncodePForBlock(const uint32_t* values, size_t n, uint32_t b, std::string* out) {
  assert(n >= 1 && n <= kBlockSize && b <= 32);
  uint8_t positions[kBlockSize];
  uint32_t highs[kBlockSize];
  uint32_t all_highs = 0;
  const size_t e = CollectExceptions(values, n, b, positions, highs, &all_highs);
  const uint32_t h = std::bit_width(all_highs);  // the widest high part
  out->push_back(static_cast<char>(b));
  out->push_back(static_cast<char>(e));
  if (e > 0) out->push_back(static_cast<char>(h));
  AppendPackedBits(values, n, b, out);
  if (e > 0) {
    out->append(reinterpret_cast<const char*>(positions), e);
    AppendPackedBits(highs, e, h, out);
  }
}

namespace {

class PForCodec final : public BlockCodec {
 public:
  std::string_view name() const override { return "pfor"; }

  void Encode(const uint32_t* values, size_t n, uint32_t param, std::string* out) const override {
    EncodePForBlock(values, n, ChoosePForBitWidth(values, n).bit_width, out);
  }

  const uint8_t* Decode(const uint8_t* in, const uint8_t* end, size_t n, uint32_t param,
                        uint32_t* values) const override {
    if (n == 0 || n > kBlockSize || end - in < 2) return nullptr;
    const size_t avail = static_cast<size_t>(end - in);
    const uint32_t b = in[0];
    const size_t e = in[1];
    if (b > 32 || e > n) return nullptr;
    uint32_t h = 0;
    if (e > 0) {
      if (avail < 3) return nullptr;
      h = in[2];
      if (h == 0 || h > 32 - b) return nullptr;  // also rejects exceptions when b = 32
    }
    // Check the whole block fits before touching its body, so the unpacking below needs no checks.
    const size_t size = PForBlockBytes(n, b, e, h);
    if (avail < size) return nullptr;

    const size_t header = e == 0 ? 2 : 3;
    UnpackBits(in + header, avail - header, n, b, values);
    if (e == 0) return in + size;

    const uint8_t* positions = in + header + PackedBytes(n, b);
    const uint8_t* highs_in = positions + e;
    uint32_t highs[kBlockSize];
    UnpackBits(highs_in, static_cast<size_t>(end - highs_in), e, h, highs);
    // Patch. Rejecting unordered positions and zero high parts keeps the encoding canonical, so
    // corrupted bytes are more often caught here rather than producing wrong postings.
    size_t next_allowed = 0;
    for (size_t i = 0; i < e; ++i) {
      const size_t pos = positions[i];
      if (pos < next_allowed || pos >= n || highs[i] == 0) return nullptr;
      next_allowed = pos + 1;
      values[pos] |= highs[i] << b;  // b + h <= 32, so nothing is shifted out
    }
    return in + size;
  }
};

}  // namespace

const BlockCodec* PForBlockCodec() { return CodecInstance<PForCodec>(); }

}  // namespace internal
}  // namespace tandem::index
