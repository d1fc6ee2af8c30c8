// File: codec_input.h
//
// What the fuzzers over block codecs share: an input's first byte picks one of the registered
// codecs (BlockCodecNames()), so one target reaches every codec and a new codec is fuzzed as soon
// as it is registered.
//
//   tandem::fuzz::Input input(data, size);
//   const tandem::index::BlockCodec& codec = tandem::fuzz::NextCodec(input);
#pragma once

#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "index/block_codec.h"

namespace tandem::fuzz {

// The codec that the next byte of `input` names, modulo the number of registered codecs.
inline const index::BlockCodec& NextCodec(Input& input) {
  static const auto* codecs = [] {
    auto* v = new std::vector<const index::BlockCodec*>;
    for (const std::string& name : index::BlockCodecNames()) {
      v->push_back(index::GetBlockCodec(name));
    }
    return v;
  }();
  return *(*codecs)[input.Byte() % codecs->size()];
}

}  // namespace tandem::fuzz
