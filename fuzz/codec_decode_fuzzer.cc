// Feeds arbitrary bytes to every registered block codec's Decode (BlockCodecNames()), with an
// arbitrary claimed count (0..255, so also 0 and more than kBlockSize) and an arbitrary list
// parameter. Input: codec (1 byte, modulo the number of codecs), count (1 byte), parameter (4
// bytes, little-endian), then the block's bytes, copied to a buffer that ends exactly where they
// do.
//
// Checks, besides no crash and no read or write out of bounds (the output array holds exactly the
// claimed count):
//   - a decode that succeeds returns a pointer inside (in, end] and only for a count in
//     1..kBlockSize;
//   - it reads nothing past that pointer: the same bytes cut off there decode to the same values;
//   - the decoded values survive a round trip: Encode(values, count, param) decodes to them again,
//     consuming exactly the encoded bytes (Rice's parameter is taken as given, when it is valid).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz/codec_input.h"
#include "fuzz/fuzz_util.h"
#include "index/block_codec.h"

using tandem::fuzz::Bytes;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tandem::fuzz::Input input(data, size);
  const tandem::index::BlockCodec& codec = tandem::fuzz::NextCodec(input);
  const size_t n = input.Byte();
  const uint32_t param = input.U32();
  const Bytes block(input.rest());

  // Exactly n values: AddressSanitizer catches a write past the claimed count.
  std::vector<uint32_t> values(n);
  const uint8_t* next = codec.Decode(block.begin(), block.end(), n, param, values.data());
  if (next == nullptr) return 0;
  TANDEM_FUZZ_CHECK(n >= 1 && n <= tandem::index::kBlockSize);
  TANDEM_FUZZ_CHECK(next > block.begin() && next <= block.end());

  // Nothing past `next` was needed.
  const size_t used = static_cast<size_t>(next - block.begin());
  const Bytes exact(block.view().substr(0, used));
  std::vector<uint32_t> again(n);
  TANDEM_FUZZ_CHECK(codec.Decode(exact.begin(), exact.end(), n, param, again.data()) ==
                    exact.end());
  TANDEM_FUZZ_CHECK(again == values);

  // Round trip of what was decoded. Rice's blocks need the parameter they were decoded with; a
  // parameter Decode accepted is one Encode accepts.
  std::string encoded;
  codec.Encode(values.data(), n, param, &encoded);
  const Bytes reencoded(encoded);
  std::vector<uint32_t> decoded(n);
  TANDEM_FUZZ_CHECK(codec.Decode(reencoded.begin(), reencoded.end(), n, param, decoded.data()) ==
                    reencoded.end());
  TANDEM_FUZZ_CHECK(decoded == values);
  return 0;
}
