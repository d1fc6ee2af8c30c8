// The codec registry: codecs by name, as PISA's get_block_codec(name).
#include "index/block_codec.h"

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "index/codecs_internal.h"

namespace tandem::index {
namespace {

// Every registered codec, sorted by name. Codecs are stateless, so sharing one instance across
// threads is safe.
const std::array<const BlockCodec*, 5>& AllCodecs() {
  static const std::array<const BlockCodec*, 5> kCodecs = {
      internal::ParaPForBlockCodec(), internal::PForBlockCodec(), internal::RiceBlockCodec(),
      internal::SegLrcBlockCodec(), internal::SimdBpBlockCodec()};
  return kCodecs;
}

}  // namespace

const BlockCodec* GetBlockCodec(std::string_view name) {
  for (const BlockCodec* codec : AllCodecs()) {
    if (codec->name() == name) return codec;
  }
  return nullptr;
}

std::vector<std::string> BlockCodecNames() {
  std::vector<std::string> names;
  for (const BlockCodec* codec : AllCodecs()) names.emplace_back(codec->name());
  return names;
}

}  // namespace tandem::index
