// File: lexicon.cc
//
// The lexicon (FORMAT.md, "Lexicon"): front-coded entries in blocks of kLexiconBlock terms, one
// sampled term per block. Encoding for the writer; lookups by term (a binary search over the
// samples, then a scan of one block) and by ordinal for the engines.
#include <algorithm>
#include <cstring>

#include "index/index.h"
#include "index/lexicon_internal.h"
#include "index/varint.h"

namespace tandem::index {

using internal::DecodeEntry;
using internal::LexiconHeader;
using internal::LexiconKey;
using internal::ListStart;
using internal::MakeTermInfo;
using internal::PackedEntry;

std::string EncodeLexicon(const std::vector<LexiconEntry>& entries, absl::string_view term_pool) {
  std::string packed;
  std::vector<uint64_t> samples;
  for (size_t i = 0; i < entries.size(); ++i) {
    const LexiconEntry& e = entries[i];
    if (i % kLexiconBlock == 0) {
      samples.push_back(packed.size());
      samples.push_back(e.list_offset);
    }
    const absl::string_view term = term_pool.substr(e.term_offset, e.term_length);
    size_t shared = 0;
    if (i % kLexiconBlock != 0) {
      const LexiconEntry& before = entries[i - 1];
      const absl::string_view previous = term_pool.substr(before.term_offset, before.term_length);
      while (shared < previous.size() && shared < term.size() && previous[shared] == term[shared]) {
        ++shared;
      }
      PutVarint(shared, &packed);
    }
    PutVarint(term.size() - shared, &packed);
    packed.append(term.data() + shared, term.size() - shared);
    PutVarint(e.df, &packed);
    PutVarint(e.cf - e.df, &packed);
    packed.append(reinterpret_cast<const char*>(&e.max_score), 4);
    PutVarint(e.list_bytes, &packed);
  }
  const LexiconHeader header = {entries.size(), samples.size() / 2, packed.size()};
  std::string out(reinterpret_cast<const char*>(&header), sizeof(header));
  out.append(reinterpret_cast<const char*>(samples.data()), samples.size() * sizeof(uint64_t));
  out.append(packed);
  return out;
}

std::string EncodeCollectionDfs(const std::vector<uint32_t>& collection_dfs) {
  const uint64_t count = collection_dfs.size();
  std::string out(reinterpret_cast<const char*>(&count), sizeof(count));
  out.append(reinterpret_cast<const char*>(collection_dfs.data()), 4 * collection_dfs.size());
  return out;
}

TermInfo Index::ScanBlock(uint64_t block, uint64_t ordinal) const {
  const LexiconSample& sample = lexicon_samples_[block];
  const uint8_t* const end =
      reinterpret_cast<const uint8_t*>(lexicon_entries_.data()) + lexicon_entries_.size();
  const uint8_t* p =
      reinterpret_cast<const uint8_t*>(lexicon_entries_.data()) + sample.entry_offset;
  uint64_t list_offset = sample.list_offset;
  std::string term;
  PackedEntry e;
  for (uint64_t i = block * kLexiconBlock;; ++i) {
    p = DecodeEntry(p, end, i == block * kLexiconBlock, &term, &e);  // checked at Load
    if (i > block * kLexiconBlock) list_offset = ListStart(list_offset, e.df);
    if (i == ordinal) break;
    list_offset += e.list_bytes;
  }
  return MakeTermInfo(e, ordinal, list_offset);
}

TermInfo Index::term_at(uint64_t ordinal) const {
  return ScanBlock(ordinal / kLexiconBlock, ordinal);
}

std::optional<TermInfo> Index::Lookup(absl::string_view term) const {
  // The last block whose first term is <= term, then a scan of that block. Blocks whose key is
  // below the term's start below it, those whose key is above start above it; only blocks of an
  // equal key (first terms sharing the term's first 8 bytes) need their terms compared.
  const uint8_t* const begin = reinterpret_cast<const uint8_t*>(lexicon_entries_.data());
  const uint8_t* const end = begin + lexicon_entries_.size();
  const uint64_t key = LexiconKey(term);
  const auto keys_begin = lexicon_sample_keys_.begin();
  uint64_t lo = std::lower_bound(keys_begin, lexicon_sample_keys_.end(), key) - keys_begin;
  uint64_t hi = std::upper_bound(keys_begin + lo, lexicon_sample_keys_.end(), key) - keys_begin;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    const uint8_t* p = begin + lexicon_samples_[mid].entry_offset;
    uint64_t length = 0;
    p = GetVarint(p, end, &length);  // checked at Load
    if (absl::string_view(reinterpret_cast<const char*>(p), length) <= term) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  if (lo == 0) return std::nullopt;
  const uint64_t block = lo - 1;
  const uint8_t* p = begin + lexicon_samples_[block].entry_offset;
  const uint64_t last = std::min(num_terms_, (block + 1) * kLexiconBlock);
  uint64_t list_offset = lexicon_samples_[block].list_offset;
  // The block's terms are compared with `term` as they are front-coded, never rebuilt: `matched`
  // is how many leading bytes the entry before shares with `term`, which is below it. An entry
  // sharing more bytes with that entry than `matched` is below `term` too (it has that entry's
  // byte where `term` differs), one sharing fewer is above it (it rises past that entry where that
  // entry still agrees with `term`), and only one sharing exactly `matched` bytes is compared, from
  // there on. Load has checked that every entry shares the longest prefix it can, on which this
  // rests.
  uint64_t matched = 0;
  PackedEntry e;
  for (uint64_t i = block * kLexiconBlock; i < last; ++i) {
    uint64_t shared = 0, length = 0;
    if (i > block * kLexiconBlock) p = GetVarint(p, end, &shared);  // all checked at Load
    p = GetVarint(p, end, &length);
    const char* suffix = reinterpret_cast<const char*>(p);
    p = DecodeEntryStatistics(p + length, end, &e);
    if (i > block * kLexiconBlock) list_offset = ListStart(list_offset, e.df);
    if (shared < matched) break;  // above `term`
    if (shared == matched) {
      const uint64_t n = std::min<uint64_t>(length, term.size() - matched);
      uint64_t j = 0;
      while (j < n && suffix[j] == term[matched + j]) ++j;
      matched += j;
      if (j < n) {
        if (static_cast<uint8_t>(suffix[j]) > static_cast<uint8_t>(term[matched])) break;
      } else if (shared + length == term.size()) {
        e.term = term;
        return MakeTermInfo(e, i, list_offset);
      } else if (shared + length > term.size()) {
        break;  // `term` is a prefix of this entry's term
      }
    }
    list_offset += e.list_bytes;
  }
  return std::nullopt;
}

}  // namespace tandem::index
