// File: block_codec.h
//
// Block codecs compress one block of up to kBlockSize unsigned 32-bit integers (docID gaps or
// term frequencies minus one). Each block decodes on its own, so a cursor decodes only the blocks
// it lands in (Ding et al. 2009, section 2: "we split each list into chunks of, say, 128 docIDs").
//
// Codecs are chosen by name from a registry, as PISA's get_block_codec(name):
//
//   const BlockCodec* codec = GetBlockCodec("pfor");
//   uint32_t param = codec->ChooseParameter(gaps.data(), gaps.size());  // per list
//   codec->Encode(block, n, param, &bytes);
//   const uint8_t* next = codec->Decode(p, end, n, param, out);           // nullptr: corrupt
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::index {

// Postings per block. Every block but a list's last holds exactly this many.
inline constexpr size_t kBlockSize = 128;

class BlockCodec {
 public:
  virtual ~BlockCodec() = default;

  // The registry name ("parapfor", "pfor", "rice", "seglrc", "simdbp").
  virtual std::string_view name() const = 0;

  // Chooses the list-wide parameter from all values of one list (Rice's b, with 2^b close to the
  // mean value). Codecs whose blocks are self-describing return 0. The index stores it per list,
  // one for docID gaps and one for frequencies.
  virtual uint32_t ChooseParameter(const uint32_t* values, size_t n) const { return 0; }
  // Whether ChooseParameter can return anything but 0. A compact list stores the parameters only
  // for codecs that have them (FORMAT.md).
  virtual bool has_parameters() const { return false; }

  // Appends the encoding of values[0..n) to *out. 1 <= n <= kBlockSize. Any 32-bit value is
  // allowed.
  virtual void Encode(const uint32_t* values, size_t n, uint32_t param, std::string* out) const = 0;

  // Decodes n values from [in, end) into values[0..n). Returns the first byte after the block, or
  // nullptr when the bytes are not a valid encoding. Never reads at or past `end`. On failure
  // values[0..n) may have been overwritten with partial results.
  virtual const uint8_t* Decode(const uint8_t* in, const uint8_t* end, size_t n, uint32_t param,
                                uint32_t* values) const = 0;
};

// The codec registered under `name`, or nullptr. Codecs are stateless singletons.
const BlockCodec* GetBlockCodec(std::string_view name);

// Names of all registered codecs, sorted.
std::vector<std::string> BlockCodecNames();

}  // namespace tandem::index
