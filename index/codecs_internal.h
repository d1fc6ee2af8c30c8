// File: codecs_internal.h
//
// The singletons behind the codec registry (block_codec.cc). Code outside index/ looks codecs up by
// name with GetBlockCodec() instead of including this header.
#pragma once

#include "index/block_codec.h"

namespace tandem::index::internal {

// ParaPFor, PForDelta with exceptions patched independently (parapfor_codec.cc).
const BlockCodec* ParaPForBlockCodec();

// PForDelta with a bit width chosen per block (pfor_codec.cc).
const BlockCodec* PForBlockCodec();

// Rice coding with a parameter chosen per list (rice_codec.cc).
const BlockCodec* RiceBlockCodec();

// Linear Regression Compression per block, SegLRC (seglrc_codec.cc).
const BlockCodec* SegLrcBlockCodec();

// SIMD-BP128, one bit width per block of four interleaved lanes (simdbp_codec.cc).
const BlockCodec* SimdBpBlockCodec();

// The one instance of a codec, built at first use and never destroyed: the registry hands out
// plain pointers that stay valid until the process exits.
template <typename Codec>
const BlockCodec* CodecInstance() {
  static const BlockCodec* const kCodec = new Codec();
  return kCodec;
}

}  // namespace tandem::index::internal
