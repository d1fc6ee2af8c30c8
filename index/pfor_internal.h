// File: pfor_internal.h
//
// PForDelta's bit-width choice and its encoder with a forced width, exposed for tests and
// benchmarks (the public interface is BlockCodec, registered as "pfor"). See pfor_codec.cc for the
// byte layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::index::internal {

struct PForBitWidth {
  uint32_t bit_width = 0;    // b: every value's low b bits go to its slot
  size_t exceptions = 0;     // values >= 2^b, patched from the exception area
  size_t encoded_bytes = 0;  // size of the block encoded with this b
};

// The b in 0..32 that minimises the encoded size of values[0..n), 1 <= n <= kBlockSize; among equal
// sizes the one with fewer exceptions, then the smaller b.
PForBitWidth ChoosePForBitWidth(const uint32_t* values, size_t n);

// Appends values[0..n) encoded with bit width b (0..32) to *out, whatever b costs. Any b is valid:
// with b = 0 every nonzero value is an exception.
void EncodePForBlock(const uint32_t* values, size_t n, uint32_t b, std::string* out);

}  // namespace tandem::index::internal
