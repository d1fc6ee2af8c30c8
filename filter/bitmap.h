// File: bitmap.h
//
// Compressed bitmap indexes of document attributes: one bitmap per (field, value), in WAH (Wu et
// al.) or PLWAH (Deliege & Pedersen), as built on the GPU by Fusco et al. 2013 ("Real-time
// creation of bitmap indexes on streaming network data"). This file is the word format, the CPU
// builder (Lemire's incremental algorithm, the paper's section 2), the boolean operations in the
// compressed domain and the checks a bitmap read from disk must pass. `gpu/bitmap_build.h` builds
// the same bytes on the GPU.
//
//   TANDEM_ASSIGN_OR_RETURN(BitmapColumns columns,
//                           BuildBitmaps(BitmapCodec::kPlwah, num_docs, value_of_doc));
//   Bitmap spam = columns.Column(columns.Find(spam_id));
//   Bitmap year = columns.Column(columns.Find(year_id));
//   Bitmap both = And(spam, year);              // still compressed
//   both.ForEachRow([](uint32_t doc) { ... });  // ascending docIDs
//
// Word format (32 bits; rows are docIDs, grouped in chunks of 31: row r is bit r % 31 of chunk
// r / 31):
//   literal  1 PPPPPPP PPPPPPPP PPPPPPPP PPPPPPPP   the chunk's 31 bits (the paper's "header 1")
//   WAH fill 0 B CCCCCC CCCCCCCC CCCCCCCC CCCCCCCC  C >= 1 chunks of bit B
//   PLWAH    0 B XXXXX CCCCC... (25 bits of C)      as WAH's, then, when X > 0, one more chunk of
//                                                   bit B with bit X - 1 flipped
// Every builder and operation writes the one canonical form of a bitmap, so equal bitmaps are equal
// bytes: no literal is all zeros or all ones; runs of equal chunks are one fill, split only where
// the count field is full (full words first); in PLWAH a literal that differs from the fill just
// before it in exactly one bit is folded into that fill's position (the last word of a split
// fill); the zero chunks after a bitmap's last one are not written. Bits at or past num_rows are 0.
#pragma once

#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace tandem::filter {

enum class BitmapCodec : uint8_t { kWah = 0, kPlwah = 1 };

// "wah" or "plwah".
std::string_view BitmapCodecName(BitmapCodec codec);
// INVALID_ARGUMENT naming the accepted names.
absl::StatusOr<BitmapCodec> ParseBitmapCodec(std::string_view name);

namespace bitmap_word {
inline constexpr uint32_t kRowsPerChunk = 31;
inline constexpr uint32_t kLiteralFlag = 0x80000000u;
inline constexpr uint32_t kFillBitFlag = 0x40000000u;
inline constexpr uint32_t kPayloadMask = 0x7FFFFFFFu;  // a literal's 31 row bits
inline constexpr uint32_t kPositionShift = 25;         // PLWAH
inline constexpr uint32_t kPositionMask = 0x1Fu << kPositionShift;

// The largest count one fill word holds.
constexpr uint32_t MaxFillChunks(BitmapCodec codec) {
  return codec == BitmapCodec::kWah ? 0x3FFFFFFFu : 0x01FFFFFFu;
}
constexpr uint32_t FillCountMask(BitmapCodec codec) { return MaxFillChunks(codec); }
// The most rows a bitmap may have: its chunks must fit in a 32-bit index and in a few fill words.
inline constexpr uint64_t kMaxRows = 0xFFFFFFFFull;
}  // namespace bitmap_word

// A bitmap's words and its length in rows. A view: the words live in a BitmapColumns or a Bitmap
// owner (the result of an operation).
class BitmapView {
 public:
  BitmapView() = default;
  BitmapView(BitmapCodec codec, uint32_t num_rows, std::span<const uint32_t> words)
      : codec_(codec), num_rows_(num_rows), words_(words) {}

  BitmapCodec codec() const { return codec_; }
  uint32_t num_rows() const { return num_rows_; }
  std::span<const uint32_t> words() const { return words_; }
  size_t size_bytes() const { return words_.size() * sizeof(uint32_t); }

  // Set rows.
  uint64_t Count() const;
  // Calls fn(row) for each set row, ascending.
  template <typename Fn>
  void ForEachRow(Fn&& fn) const;
  std::vector<uint32_t> Rows() const;
  // Sets bit r of `bits` (ceil(num_rows / 64) words, zeroed by the caller) for each set row r.
  void ToDense(std::span<uint64_t> bits) const;

 private:
  BitmapCodec codec_ = BitmapCodec::kWah;
  uint32_t num_rows_ = 0;
  std::span<const uint32_t> words_;
};

// A bitmap that owns its words: what operations return. Its words never change after
// construction, so Count() is computed once and remembered (a query's filter is counted by every
// cost estimate that routes it).
class Bitmap {
 public:
  Bitmap() = default;
  Bitmap(BitmapCodec codec, uint32_t num_rows, std::vector<uint32_t> words)
      : codec_(codec), num_rows_(num_rows), words_(std::move(words)) {}
  Bitmap(const Bitmap& other)
      : codec_(other.codec_),
        num_rows_(other.num_rows_),
        words_(other.words_),
        count_(other.count_.load(std::memory_order_relaxed)) {}
  Bitmap(Bitmap&& other) noexcept
      : codec_(other.codec_),
        num_rows_(other.num_rows_),
        words_(std::move(other.words_)),
        count_(other.count_.load(std::memory_order_relaxed)) {
    other.num_rows_ = 0;
    other.count_.store(kNotCounted, std::memory_order_relaxed);
  }
  Bitmap& operator=(Bitmap other) noexcept {
    codec_ = other.codec_;
    num_rows_ = other.num_rows_;
    words_.swap(other.words_);
    count_.store(other.count_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    return *this;
  }

  BitmapView view() const { return BitmapView(codec_, num_rows_, words_); }
  operator BitmapView() const { return view(); }  // NOLINT: a Bitmap is usable wherever a view is
  const std::vector<uint32_t>& words() const { return words_; }
  uint32_t num_rows() const { return num_rows_; }
  BitmapCodec codec() const { return codec_; }
  // Set rows; counted on the first call (safe from several threads at once).
  uint64_t Count() const {
    uint64_t n = count_.load(std::memory_order_relaxed);
    if (n == kNotCounted) {
      n = view().Count();
      count_.store(n, std::memory_order_relaxed);
    }
    return n;
  }
  std::vector<uint32_t> Rows() const { return view().Rows(); }

 private:
  static constexpr uint64_t kNotCounted = ~uint64_t{0};
  BitmapCodec codec_ = BitmapCodec::kWah;
  uint32_t num_rows_ = 0;
  std::vector<uint32_t> words_;
  mutable std::atomic<uint64_t> count_{kNotCounted};
};

// Appends chunks in order and writes the canonical words. What the CPU builder and the operations
// share.
class BitmapWriter {
 public:
  explicit BitmapWriter(BitmapCodec codec, std::vector<uint32_t>* out) : codec_(codec), out_(out) {}

  // `chunks` chunks of all `bit`; chunks >= 0.
  void AppendFill(bool bit, uint64_t chunks);
  // One chunk of 31 row bits (bit 31 ignored).
  void AppendChunk(uint32_t payload);
  // Writes what is pending (trailing zero chunks are dropped). The writer is done after.
  void Finish();
  // Chunks appended so far.
  uint64_t chunks() const { return chunks_; }

 private:
  void FlushFill();

  BitmapCodec codec_;
  std::vector<uint32_t>* out_;
  bool fill_bit_ = false;
  uint64_t fill_chunks_ = 0;  // pending fill, not yet written
  uint64_t chunks_ = 0;
};

// Bitmaps of one attribute field: a column per value present, as the paper's keys, offsets and
// index arrays (section 3.1). Column i is value keys[i], words [offsets[i], offsets[i + 1]).
struct BitmapColumns {
  BitmapCodec codec = BitmapCodec::kWah;
  uint32_t num_rows = 0;
  std::vector<uint32_t> keys;     // ascending
  std::vector<uint64_t> offsets;  // keys.size() + 1 entries
  std::vector<uint32_t> words;

  size_t num_columns() const { return keys.size(); }
  BitmapView Column(size_t i) const;
  // The column of `key`, or -1.
  ptrdiff_t Find(uint32_t key) const;
};

// The CPU builder: Lemire's incremental algorithm (section 2), one pass in row order keeping each
// column's open chunk. Row i has value values[i] (rows.empty()), or pair i is (rows[i],
// values[i]) with rows non-decreasing, so a row may have several values (a multi-valued field) or
// none. Errors: INVALID_ARGUMENT when the spans differ in size, a row is >= num_rows or rows
// decrease.
absl::StatusOr<BitmapColumns> BuildBitmaps(BitmapCodec codec, uint32_t num_rows,
                                           std::span<const uint32_t> values,
                                           std::span<const uint32_t> rows = {});
// What every builder (this one, gpu::GpuBitmapBuilder) checks of its input first, with the errors
// above.
absl::Status CheckBitmapInput(uint32_t num_rows, std::span<const uint32_t> values,
                              std::span<const uint32_t> rows);

// Boolean operations in the compressed domain (no dense bitmap is made): both operands must have
// the same codec and num_rows (checked: INVALID_ARGUMENT).
absl::StatusOr<Bitmap> And(BitmapView a, BitmapView b);
absl::StatusOr<Bitmap> Or(BitmapView a, BitmapView b);
absl::StatusOr<Bitmap> AndNot(BitmapView a, BitmapView b);  // a AND NOT b
// The union of many bitmaps (at least one; same codec and num_rows, checked). When they are
// large next to the rows they cover, they are ORed into one dense bit array and compressed back
// (linear in their words and the rows); otherwise ORed pairwise as a balanced tree.
absl::StatusOr<Bitmap> OrMany(std::span<const BitmapView> bitmaps);
// The canonical bitmap of dense bits (bit r of bits[r / 64] for r < num_rows; bits past num_rows
// are ignored).
Bitmap FromDense(BitmapCodec codec, uint32_t num_rows, std::span<const uint64_t> bits);
// The rows [0, num_rows) not in a.
Bitmap Not(BitmapView a);
// All rows, and none.
Bitmap AllRows(BitmapCodec codec, uint32_t num_rows);
Bitmap NoRows(BitmapCodec codec, uint32_t num_rows);
// A bitmap of the given rows (ascending, < num_rows; checked).
absl::StatusOr<Bitmap> FromRows(BitmapCodec codec, uint32_t num_rows,
                                std::span<const uint32_t> rows);

// Whether `words` is one canonical bitmap of num_rows rows in `codec`: what a bitmap read from a
// file must pass before any operation touches it. DATA_LOSS saying which word is wrong.
absl::Status ValidateBitmap(BitmapCodec codec, uint32_t num_rows, std::span<const uint32_t> words);

// ---------------------------------------------------------------------------------------------
// Implementation.

namespace bitmap_internal {
// Walks a bitmap as runs of chunks: a fill (all chunks equal `payload`, 0 or kPayloadMask) or one
// literal chunk. PLWAH's positioned fill is a fill run then a literal run.
class RunReader {
 public:
  explicit RunReader(BitmapView bitmap) : codec_(bitmap.codec()), words_(bitmap.words()) {
    Advance();
  }
  bool done() const { return done_; }
  bool is_fill() const { return is_fill_; }
  uint32_t payload() const { return payload_; }  // the chunk's bits (a fill: 0 or all ones)
  uint64_t chunks() const { return chunks_; }    // left in this run
  // Consumes n <= chunks() chunks of the run.
  void Skip(uint64_t n) {
    chunks_ -= n;
    if (chunks_ == 0) Advance();
  }

 private:
  void Advance() {
    if (pending_literal_) {
      pending_literal_ = false;
      is_fill_ = false;
      payload_ = pending_payload_;
      chunks_ = 1;
      return;
    }
    if (next_ == words_.size()) {
      done_ = true;
      is_fill_ = true;
      payload_ = 0;
      chunks_ = ~uint64_t{0};  // implicit zero chunks to the end
      return;
    }
    const uint32_t w = words_[next_++];
    if (w & bitmap_word::kLiteralFlag) {
      is_fill_ = false;
      payload_ = w & bitmap_word::kPayloadMask;
      chunks_ = 1;
      return;
    }
    is_fill_ = true;
    payload_ = (w & bitmap_word::kFillBitFlag) ? bitmap_word::kPayloadMask : 0;
    chunks_ = w & bitmap_word::FillCountMask(codec_);
    if (codec_ == BitmapCodec::kPlwah) {
      const uint32_t position = (w & bitmap_word::kPositionMask) >> bitmap_word::kPositionShift;
      if (position != 0) {
        pending_literal_ = true;
        pending_payload_ = payload_ ^ (1u << (position - 1));
      }
    }
  }

  BitmapCodec codec_;
  std::span<const uint32_t> words_;
  size_t next_ = 0;
  bool done_ = false;
  bool is_fill_ = true;
  uint32_t payload_ = 0;
  uint64_t chunks_ = 0;
  bool pending_literal_ = false;
  uint32_t pending_payload_ = 0;
};
}  // namespace bitmap_internal

// The set rows of a bitmap, found in ascending order without decompressing it: what an engine
// walking docIDs upwards asks of a filter. A view: the bitmap's words must outlive it.
// A bitmap's rows as plain bits, one per row: constant-time membership and a next-set-row search
// over 64-bit words, for an engine that tests a filter at every candidate (cpu::DaatEngine keeps
// one per recent filter). num_rows / 8 bytes, whatever the bitmap's compressed size.
class DenseRows {
 public:
  static constexpr uint32_t kEnd = 0xFFFFFFFFu;
  explicit DenseRows(BitmapView bitmap);

  uint32_t num_rows() const { return num_rows_; }
  size_t bytes() const { return bits_.size() * sizeof(uint64_t); }
  bool Contains(uint32_t row) const {
    return row < num_rows_ && ((bits_[row / 64] >> (row % 64)) & 1) != 0;
  }
  // The first set row >= row, or kEnd. Any order of calls.
  uint32_t NextGeq(uint32_t row) const {
    if (row >= num_rows_) return kEnd;
    size_t w = row / 64;
    uint64_t x = bits_[w] & (~uint64_t{0} << (row % 64));
    while (x == 0) {
      if (++w == bits_.size()) return kEnd;
      x = bits_[w];
    }
    return uint32_t(w * 64 + uint64_t(std::countr_zero(x)));  // no bit is set past num_rows
  }

 private:
  uint32_t num_rows_;
  std::vector<uint64_t> bits_;
};

class BitmapCursor {
 public:
  static constexpr uint32_t kEnd = 0xFFFFFFFFu;
  explicit BitmapCursor(BitmapView bitmap) : num_rows_(bitmap.num_rows()), reader_(bitmap) {}
  // The first set row >= row, or kEnd. The rows asked must not decrease.
  uint32_t NextGeq(uint32_t row) {
    while (row < num_rows_) {
      const uint64_t chunk = row / bitmap_word::kRowsPerChunk;
      // Runs that end before the row's chunk.
      while (!reader_.done() && run_chunk_ + reader_.chunks() <= chunk) {
        run_chunk_ += reader_.chunks();
        reader_.Skip(reader_.chunks());
      }
      if (reader_.done()) return kEnd;  // zeros to the end
      if (chunk < run_chunk_) {
        // An earlier call moved past this row's chunk: everything before the run is zeros.
        if (run_chunk_ * bitmap_word::kRowsPerChunk >= num_rows_) return kEnd;
        row = uint32_t(run_chunk_ * bitmap_word::kRowsPerChunk);
        continue;
      }
      const uint64_t run_end = run_chunk_ + reader_.chunks();
      if (reader_.is_fill()) {
        if (reader_.payload() != 0) return row;
        // A 0-fill: the row moves to its end.
        if (run_end * bitmap_word::kRowsPerChunk >= num_rows_) return kEnd;
        row = uint32_t(run_end * bitmap_word::kRowsPerChunk);
        continue;
      }
      const uint32_t bits = reader_.payload() & ~((1u << (row % bitmap_word::kRowsPerChunk)) - 1);
      if (bits != 0) return uint32_t(chunk * bitmap_word::kRowsPerChunk + __builtin_ctz(bits));
      if ((chunk + 1) * bitmap_word::kRowsPerChunk >= num_rows_) return kEnd;
      row = uint32_t((chunk + 1) * bitmap_word::kRowsPerChunk);
    }
    return kEnd;
  }
  bool Contains(uint32_t row) { return NextGeq(row) == row; }

 private:
  uint32_t num_rows_;
  bitmap_internal::RunReader reader_;
  uint64_t run_chunk_ = 0;  // the chunk where the reader's remaining run starts
};

template <typename Fn>
void BitmapView::ForEachRow(Fn&& fn) const {
  bitmap_internal::RunReader reader(*this);
  uint64_t chunk = 0;
  const uint64_t num_chunks =
      (uint64_t{num_rows_} + bitmap_word::kRowsPerChunk - 1) / bitmap_word::kRowsPerChunk;
  while (!reader.done() && chunk < num_chunks) {
    const uint64_t n = reader.chunks();
    if (reader.payload() == 0) {
      chunk += n;
    } else if (reader.is_fill()) {
      const uint64_t end = std::min<uint64_t>((chunk + n) * bitmap_word::kRowsPerChunk, num_rows_);
      for (uint64_t r = chunk * bitmap_word::kRowsPerChunk; r < end; ++r) fn(uint32_t(r));
      chunk += n;
    } else {
      uint32_t bits = reader.payload();
      const uint64_t base = chunk * bitmap_word::kRowsPerChunk;
      while (bits != 0) {
        fn(uint32_t(base + __builtin_ctz(bits)));
        bits &= bits - 1;
      }
      chunk += 1;
    }
    reader.Skip(n);
  }
}

}  // namespace tandem::filter
