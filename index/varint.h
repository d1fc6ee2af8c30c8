// File: varint.h
//
// LEB128 varints (7 bits a byte, low groups first, high bit set on every byte but the last), as
// Lucene's VInt and PISA's varint codes: the compact list form and the lexicon store small
// integers in them. Reading is bounds-checked and rejects redundant zero groups, so every value has
// exactly one encoding and a damaged file cannot make a reader step past its end.
//
//   std::string out;
//   PutVarint(300, &out);                        // 2 bytes
//   const uint8_t* p = GetVarint(in, end, &v);   // nullptr: truncated, overlong or too large
#pragma once

#include <cstdint>
#include <string>

namespace tandem::index {

inline void PutVarint(uint64_t v, std::string* out) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

inline int VarintBytes(uint64_t v) {
  int n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

// Reads one varint of at most `max` (UINT64_MAX: any) from [p, end). Returns the byte after it, or
// nullptr when it runs past `end`, has a redundant zero group or exceeds `max`.
inline const uint8_t* GetVarint(const uint8_t* p, const uint8_t* end, uint64_t* v,
                                uint64_t max = UINT64_MAX) {
  uint64_t value = 0;
  for (int shift = 0; shift < 64 && p < end; shift += 7) {
    const uint8_t byte = *p++;
    const uint64_t bits = byte & 0x7f;
    if (shift == 63 && bits > 1) return nullptr;
    value |= bits << shift;
    if ((byte & 0x80) == 0) {
      if (byte == 0 && shift > 0) return nullptr;  // redundant zero group
      if (value > max) return nullptr;
      *v = value;
      return p;
    }
  }
  return nullptr;
}

}  // namespace tandem::index
