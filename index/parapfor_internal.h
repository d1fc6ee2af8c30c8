// File: parapfor_internal.h
//
// ParaPFor's bit-width choice and its encoder with a forced width, exposed for tests and benchmarks
// (the public interface is BlockCodec, registered as "parapfor"). See parapfor_codec.cc for the
// byte layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::index::internal {

struct ParaPForBitWidth {
  uint32_t bit_width = 0;    // b: every value's low b bits go to its slot
  size_t exceptions = 0;     // en: values >= 2^b, patched from the index and overflow arrays
  size_t encoded_bytes = 0;  // size of the block encoded with this b
};

// The b in 0..32 that minimises the encoded size of values[0..n), 1 <= n <= kBlockSize; among equal
// sizes the one with fewer exceptions, then the smaller b.
ParaPForBitWidth ChooseParaPForBitWidth(const uint32_t* values, size_t n);

// Appends values[0..n) encoded with slot width b (0..32) to *out, whatever b costs. Any b is valid:
// with b = 0 every nonzero value is an exception.
void EncodeParaPForBlock(const uint32_t* values, size_t n, uint32_t b, std::string* out);

}  // namespace tandem::index::internal
