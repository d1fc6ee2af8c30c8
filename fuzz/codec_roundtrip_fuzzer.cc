// Encodes a block of fuzz-derived integers with every registered codec (BlockCodecNames()) and
// decodes it again. Input: codec (1 byte, modulo the number of codecs), count (1 byte: 1 + byte mod
// kBlockSize), shift (1 byte, mod 32), parameter (1 byte: 0..32 as given, larger bytes take the
// codec's ChooseParameter), then the values, 4 bytes each little-endian and shifted right by
// `shift` (so blocks of small gaps are as easy to reach as 32-bit ones); missing bytes read as 0.
//
// Checks: Decode(Encode(values)) gives the values back and consumes exactly the encoded bytes, from
// a buffer that ends where the encoding does; decoding with any byte cut off the end fails cleanly.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/codec_input.h"
#include "fuzz/fuzz_util.h"
#include "index/block_codec.h"

namespace {

using tandem::fuzz::Bytes;
using tandem::index::kBlockSize;

// Rice writes q = v >> b one-bits per value: with b = 0 and 32-bit values a block would take
// hundreds of megabytes. Larger blocks are valid but only slow the search down.
constexpr uint64_t kMaxUnaryBits = uint64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::Input input(data, size);
  const tandem::index::BlockCodec& codec = tandem::fuzz::NextCodec(input);
  const size_t n = 1 + input.Byte() % kBlockSize;
  const uint32_t shift = input.Byte() % 32;
  const uint8_t param_byte = input.Byte();
  std::vector<uint32_t> values(n);
  for (uint32_t& v : values) v = input.U32() >> shift;
  const uint32_t param =
      param_byte <= 32 ? param_byte : codec.ChooseParameter(values.data(), values.size());
  if (codec.name() == "rice") {
    uint64_t unary_bits = 0;
    for (uint32_t v : values) unary_bits += uint64_t{v} >> param;
    if (unary_bits > kMaxUnaryBits) return 0;
  }

  std::string encoded;
  codec.Encode(values.data(), n, param, &encoded);
  TANDEM_FUZZ_CHECK(!encoded.empty());
  const Bytes block(encoded);
  std::vector<uint32_t> decoded(n);
  TANDEM_FUZZ_CHECK(codec.Decode(block.begin(), block.end(), n, param, decoded.data()) ==
                    block.end());
  TANDEM_FUZZ_CHECK(decoded == values);

  // Every block needs all of its bytes.
  const Bytes cut(block.view().substr(0, block.size() - 1));
  TANDEM_FUZZ_CHECK(codec.Decode(cut.begin(), cut.end(), n, param, decoded.data()) == nullptr);
  return 0;
}
