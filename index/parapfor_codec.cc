// ParaPFor, the parallel PForDelta of Ao et al. 2011, "Efficient parallel lists intersection and
// index compression algorithms using GPUs" (VLDB), section 4.1 and Appendix G. A block of this
// index is the paper's segment (the paper sizes a segment to one GPU thread block; here it is
// kBlockSize).
//
// PForDelta stores the low b bits of every value in a b-bit slot and patches the few values >= 2^b
// ("exceptions") afterwards. Classic PForDelta threads the exceptions into a linked list through
// the slots, which a GPU must walk serially; ParaPFor instead stores each exception's index in the
// segment, so every exception is patched on its own, one thread each (Appendix G.2, Algorithm 2):
//
//   g[j] = l[j]                    for every j < n      (stage 1)
//   g[i[k]] |= h[k] << b           for every k < en     (stages 2 and 3)
//
// The "pfor" codec already keeps its exception positions apart from the slots (Ding et al. 2009,
// section 6). ParaPFor differs in the paper's header, which carries the widths of both exception
// arrays, and in packing the indices at the width of the largest one instead of a byte each, which
// lets b trade slot bits against exception bits more finely.
//
// Block layout (all multi-bit fields packed little-endian, see bit_packing.h):
//
//   byte 0      b: slot width, 0..32
//   byte 1      en: number of exceptions, 0..n
//   byte 2      ib: bit width of the exception indices, bit_width(largest index), 0..7; present
//               only when en > 0
//   byte 3      hb: bit width of the overflows, bit_width(largest overflow), 1..32-b; present only
//               when en > 0
//   slots       PackedBytes(n, b) bytes: l_j = values[j] mod 2^b for j = 0..n-1
//   indices     PackedBytes(en, ib) bytes: i_k, the exceptions' indexes, strictly increasing, < n
//   overflows   PackedBytes(en, hb) bytes: h_k = values[i_k] >> b (nonzero), in the order of i_k
//
// Appendix G.1 writes the widths as ceil(log(max)), which is one bit short for powers of two; the
// bit width is what the largest value needs. With exceptions the header is one 32-bit word, which a
// GPU thread reads in one load. n is not stored: the caller knows it from the list length. The
// block parameter is unused (0).
#include <algorithm>
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "index/bit_packing.h"
#include "index/block_codec.h"
#include "index/codecs_internal.h"
#include "index/parapfor_internal.h"

namespace tandem::index {
namespace internal {
namespace {

// Size of a block of n values with slot width b and en exceptions whose indices take ib bits and
// whose overflows take hb bits.
size_t ParaPForBlockBytes(size_t n, uint32_t b, size_t en, uint32_t ib, uint32_t hb) {
  if (en == 0) return 2 + PackedBytes(n, b);
  return 4 + PackedBytes(n, b) + PackedBytes(en, ib) + PackedBytes(en, hb);
}

}  // namespace

// The paper chooses b so that most values (say 90%) fit (section 4.1). As for "pfor", we take the b
// that makes the block smallest instead: lowering b by one saves n/8 bytes of slots and costs
// ib + hb bits per new exception, so it stops paying once about one value in (ib + hb) becomes an
// exception.
ParaPForBitWidth ChooseParaPForBitWidth(const uint32_t* values, size_t n) {
  assert(n >= 1 && n <= kBlockSize);
  // count[w]: values of bit width w; last[w]: 1 + the largest index of such a value (0: none). A
  // value is an exception under b iff its width exceeds b.
  size_t count[33] = {};
  size_t last[33] = {};
  for (size_t i = 0; i < n; ++i) {
    const uint32_t w = BitWidth(values[i]);
    ++count[w];
    last[w] = i + 1;
  }
  uint32_t max_width = 32;
  while (max_width > 0 && count[max_width] == 0) --max_width;

  // Widths above max_width only grow the slots, so b runs from max_width (no exceptions) down to 0.
  ParaPForBitWidth best{max_width, 0, ParaPForBlockBytes(n, max_width, 0, 0, 0)};
  size_t exceptions = 0;
  size_t last_exception = 0;  // 1 + the largest index of an exception
  for (uint32_t b = max_width; b-- > 0;) {
    exceptions += count[b + 1];
    last_exception = std::max(last_exception, last[b + 1]);
    const uint32_t ib = BitWidth(static_cast<uint32_t>(last_exception - 1));
    const size_t bytes = ParaPForBlockBytes(n, b, exceptions, ib, max_width - b);
    // Going down, exceptions never decrease. On equal sizes keep the larger b, whose fewer
    // exceptions patch faster, unless this b has no more of them (no value has width b + 1).
    if (bytes < best.encoded_bytes ||
        (bytes == best.encoded_bytes && exceptions == best.exceptions)) {
      best = {b, exceptions, bytes};
    }
  }
  return best;
}

void EncodeParaPForBlock(const uint32_t* values, size_t n, uint32_t b, std::string* out) {
  assert(n >= 1 && n <= kBlockSize && b <= 32);
  uint32_t indices[kBlockSize];
  uint32_t overflows[kBlockSize];
  uint32_t all_overflows = 0;
  const size_t en = CollectExceptions(values, n, b, indices, overflows, &all_overflows);
  out->push_back(static_cast<char>(b));
  out->push_back(static_cast<char>(en));
  if (en == 0) {
    AppendPackedBits(values, n, b, out);
    return;
  }
  const uint32_t ib = BitWidth(indices[en - 1]);  // indices increase: the last is the largest
  const uint32_t hb = BitWidth(all_overflows);    // the widest overflow
  out->push_back(static_cast<char>(ib));
  out->push_back(static_cast<char>(hb));
  AppendPackedBits(values, n, b, out);
  AppendPackedBits(indices, en, ib, out);
  AppendPackedBits(overflows, en, hb, out);
}

namespace {

class ParaPForCodec final : public BlockCodec {
 public:
  std::string_view name() const override { return "parapfor"; }

  void Encode(const uint32_t* values, size_t n, uint32_t param, std::string* out) const override {
    EncodeParaPForBlock(values, n, ChooseParaPForBitWidth(values, n).bit_width, out);
  }

  const uint8_t* Decode(const uint8_t* in, const uint8_t* end, size_t n, uint32_t param,
                        uint32_t* values) const override {
    if (n == 0 || n > kBlockSize || end - in < 2) return nullptr;
    const size_t avail = static_cast<size_t>(end - in);
    const uint32_t b = in[0];
    const size_t en = in[1];
    if (b > 32 || en > n) return nullptr;
    uint32_t ib = 0;
    uint32_t hb = 0;
    if (en > 0) {
      if (avail < 4) return nullptr;
      ib = in[2];
      hb = in[3];
      // Indices are below n, so they need at most bit_width(n - 1) bits. hb = 0 would make every
      // exception's overflow zero; b + hb > 32 would shift bits out (this also rejects exceptions
      // when b = 32).
      if (ib > BitWidth(static_cast<uint32_t>(n - 1)) || hb == 0 || hb > 32 - b) return nullptr;
    }
    // Check the whole block fits before touching its body, so the unpacking below needs no checks.
    const size_t size = ParaPForBlockBytes(n, b, en, ib, hb);
    if (avail < size) return nullptr;

    // Stage 1: the slots.
    const size_t header = en == 0 ? 2 : 4;
    UnpackBits(in + header, avail - header, n, b, values);
    if (en == 0) return in + size;

    // Stages 2 and 3: each exception's index and overflow, then the patch, which depends on no
    // other exception.
    const uint8_t* indices_in = in + header + PackedBytes(n, b);
    const uint8_t* overflows_in = indices_in + PackedBytes(en, ib);
    uint32_t indices[kBlockSize];
    uint32_t overflows[kBlockSize];
    UnpackBits(indices_in, static_cast<size_t>(end - indices_in), en, ib, indices);
    UnpackBits(overflows_in, static_cast<size_t>(end - overflows_in), en, hb, overflows);
    // Rejecting what Encode never writes (unordered indices, zero overflows, widths above the
    // largest index or overflow) keeps the encoding canonical, so corrupted bytes are more often
    // caught here rather than producing wrong postings.
    uint32_t all_overflows = 0;
    for (size_t k = 0; k < en; ++k) {
      const uint32_t i = indices[k];
      if ((k > 0 && i <= indices[k - 1]) || i >= n || overflows[k] == 0) return nullptr;
      values[i] |= overflows[k] << b;  // b + hb <= 32, so nothing is shifted out
      all_overflows |= overflows[k];
    }
    if (BitWidth(indices[en - 1]) != ib || BitWidth(all_overflows) != hb) return nullptr;
    return in + size;
  }
};

}  // namespace

const BlockCodec* ParaPForBlockCodec() { return CodecInstance<ParaPForCodec>(); }

}  // namespace internal
}  // namespace tandem::index
