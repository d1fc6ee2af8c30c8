// File: lexicon_internal.h
//
// The packed lexicon's layout (FORMAT.md, "Lexicon"), shared by its encoder and lookups
// (lexicon.cc) and by Index::Load, which checks every entry: the header, one entry decoded, and
// where a list starts. Internal to index/.
#pragma once

#include <cstdint>

#include "absl/strings/string_view.h"
#include "index/index.h"
#include "index/posting_list.h"
#include "index/varint.h"

namespace tandem::index::internal {

// Fixed part of the lexicon payload.
struct LexiconHeader {
  uint64_t num_terms;
  uint64_t num_samples;    // ceil(num_terms / kLexiconBlock)
  uint64_t entries_bytes;  // bytes of the packed entries
};

// One packed lexicon entry, decoded (FORMAT.md): the term, its statistics, its list's size.
struct PackedEntry {
  absl::string_view term;  // into the decoder's term buffer
  uint32_t df = 0;
  uint64_t cf = 0;
  float max_score = 0.0f;
  uint64_t list_bytes = 0;
  uint64_t shared = 0;  // bytes taken from the term before (0 for a block's first entry)
};

// Decodes what follows an entry's term: df, cf, the maximum score and the list's size.
inline const uint8_t* DecodeEntryStatistics(const uint8_t* p, const uint8_t* end, PackedEntry* e) {
  uint64_t df = 0, extra = 0;
  p = GetVarint(p, end, &df, UINT32_MAX);
  if (p == nullptr) return nullptr;
  p = GetVarint(p, end, &extra, UINT64_MAX - df);
  if (p == nullptr || end - p < 4) return nullptr;
  e->df = static_cast<uint32_t>(df);
  e->cf = df + extra;
  std::memcpy(&e->max_score, p, 4);
  p += 4;
  return GetVarint(p, end, &e->list_bytes);
}

// Decodes the entry at p. `term` holds the previous term of the block (ignored for a block's first
// entry, which stores its term whole) and is replaced by this entry's: entries after a block's
// first share a prefix with the term before them (front coding). Returns the byte after the
// entry, or nullptr when it runs past `end` or a field is malformed.
inline const uint8_t* DecodeEntry(const uint8_t* p, const uint8_t* end, bool first_in_block,
                                  std::string* term, PackedEntry* e) {
  uint64_t shared = 0, length = 0;
  if (!first_in_block) {
    p = GetVarint(p, end, &shared, term->size());
    if (p == nullptr) return nullptr;
  }
  p = GetVarint(p, end, &length);
  if (p == nullptr || length > static_cast<uint64_t>(end - p)) return nullptr;
  term->resize(shared);
  term->append(reinterpret_cast<const char*>(p), length);
  e->term = *term;
  e->shared = shared;
  return DecodeEntryStatistics(p + length, end, e);
}

// A term's first 8 bytes as a big-endian integer, zero-padded: a < b as strings (bytes compared
// unsigned, as std::string_view does) implies LexiconKey(a) <= LexiconKey(b).
inline uint64_t LexiconKey(absl::string_view term) {
  uint64_t key = 0;
  const size_t n = std::min<size_t>(term.size(), 8);
  for (size_t i = 0; i < n; ++i) key |= uint64_t{static_cast<uint8_t>(term[i])} << (56 - 8 * i);
  return key;
}

inline TermInfo MakeTermInfo(const PackedEntry& e, uint64_t ordinal, uint64_t list_offset) {
  TermInfo t;
  t.term.assign(e.term.data(), e.term.size());
  t.ordinal = ordinal;
  t.df = e.df;
  t.cf = e.cf;
  t.list_offset = list_offset;
  t.list_bytes = e.list_bytes;
  t.max_score = e.max_score;
  t.num_blocks = static_cast<uint32_t>((uint64_t{e.df} + kBlockSize - 1) / kBlockSize);
  return t;
}

// Where a list starts, given where the one before it ends: full-form lists are aligned.
inline uint64_t ListStart(uint64_t previous_end, uint32_t df) {
  return IsCompactList(df) ? previous_end
                           : (previous_end + kFullListAlignment - 1) & ~(kFullListAlignment - 1);
}

inline uint64_t Align8(uint64_t n) { return (n + 7) & ~uint64_t{7}; }

}  // namespace tandem::index::internal
