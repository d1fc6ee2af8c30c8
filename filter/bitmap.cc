// File: bitmap.cc
//
// WAH and PLWAH bitmaps on the CPU: the canonical writer, Lemire's incremental builder (Fusco et
// al. 2013, section 2), the operations in the compressed domain and validation.
#include "filter/bitmap.h"

#include <algorithm>
#include <bit>
#include <memory>

#include "absl/container/node_hash_map.h"
#include "absl/strings/str_format.h"

namespace tandem::filter {
namespace {

using bitmap_internal::RunReader;
namespace bw = bitmap_word;

uint64_t NumChunks(uint32_t num_rows) {
  return (uint64_t{num_rows} + bw::kRowsPerChunk - 1) / bw::kRowsPerChunk;
}

// The row bits of the last chunk that lie below num_rows.
uint32_t LastChunkMask(uint32_t num_rows) {
  const uint32_t tail = num_rows % bw::kRowsPerChunk;
  return tail == 0 ? bw::kPayloadMask : (1u << tail) - 1;
}

// Consumes n chunks of a reader, across runs.
void SkipChunks(RunReader& reader, uint64_t n) {
  while (n > 0 && !reader.done()) {
    const uint64_t take = std::min(n, reader.chunks());
    reader.Skip(take);
    n -= take;
  }
}

// Copies n chunks of a reader to the writer, across runs.
void CopyChunks(RunReader& reader, uint64_t n, BitmapWriter& writer) {
  while (n > 0 && !reader.done()) {
    const uint64_t take = std::min(n, reader.chunks());
    if (reader.is_fill()) {
      writer.AppendFill(reader.payload() != 0, take);
    } else {
      writer.AppendChunk(reader.payload());
    }
    reader.Skip(take);
    n -= take;
  }
  writer.AppendFill(false, n);  // past the reader's last word: zeros
}

enum class Op { kAnd, kOr, kAndNot };

absl::Status CheckCompatible(BitmapView a, BitmapView b) {
  if (a.codec() != b.codec()) {
    return absl::InvalidArgumentError(absl::StrFormat("bitmaps of different codecs (%s and %s)",
                                                      BitmapCodecName(a.codec()),
                                                      BitmapCodecName(b.codec())));
  }
  if (a.num_rows() != b.num_rows()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bitmaps of different lengths (%d and %d rows)", a.num_rows(), b.num_rows()));
  }
  return absl::OkStatus();
}

// The merge of two run streams (the standard WAH operation, Wu et al.): runs of fills are
// combined a whole run at a time, and a fill that decides the result (a 0-fill for AND, a 1-fill
// for OR) skips the other side's runs it covers.
absl::StatusOr<Bitmap> Combine(BitmapView a, BitmapView b, Op op) {
  if (auto status = CheckCompatible(a, b); !status.ok()) return status;
  std::vector<uint32_t> words;
  words.reserve(std::max(a.words().size(), b.words().size()));
  BitmapWriter writer(a.codec(), &words);
  RunReader ra(a), rb(b);
  const uint64_t num_chunks = NumChunks(a.num_rows());
  uint64_t chunk = 0;
  while (chunk < num_chunks) {
    if (op == Op::kAnd && (ra.done() || rb.done())) break;
    if (op == Op::kAndNot && ra.done()) break;
    if (op == Op::kOr && ra.done() && rb.done()) break;
    const uint64_t left = num_chunks - chunk;
    // A fill on one side that decides the result for its whole run.
    auto decides = [&](RunReader& x, RunReader& y, bool x_is_a) -> bool {
      if (!x.is_fill()) return false;
      const bool ones = x.payload() != 0;
      uint64_t n = std::min(x.chunks(), left);
      switch (op) {
        case Op::kAnd:
          if (ones) return false;
          writer.AppendFill(false, n);
          break;
        case Op::kOr:
          if (!ones) return false;
          writer.AppendFill(true, n);
          break;
        case Op::kAndNot:
          if (x_is_a ? ones : !ones) {
            // a's 1-fill copies NOT b; b's 0-fill copies a: not decided by one side alone.
            return false;
          }
          writer.AppendFill(false, n);  // a's 0-fill, or b's 1-fill
          break;
      }
      x.Skip(n);
      SkipChunks(y, n);
      chunk += n;
      return true;
    };
    if (decides(ra, rb, true) || decides(rb, ra, false)) continue;
    // A fill that passes the other side through (AND with ones, OR with zeros, b's 0-fill in
    // AND NOT).
    auto passes = [&](RunReader& x, RunReader& y) -> bool {
      if (!x.is_fill() || y.done()) return false;
      const uint64_t n = std::min(x.chunks(), left);
      x.Skip(n);
      CopyChunks(y, n, writer);
      chunk += n;
      return true;
    };
    if (op != Op::kAndNot) {
      if (passes(ra, rb) || passes(rb, ra)) continue;
    } else if (rb.is_fill() && rb.payload() == 0 && !rb.done()) {
      if (passes(rb, ra)) continue;
    }
    // Chunk by chunk: at least one side is a literal, or one side is past its end.
    const uint64_t n = std::min({ra.chunks(), rb.chunks(), left});
    const uint32_t pa = ra.payload(), pb = rb.payload();
    uint32_t r = 0;
    switch (op) {
      case Op::kAnd:
        r = pa & pb;
        break;
      case Op::kOr:
        r = pa | pb;
        break;
      case Op::kAndNot:
        r = pa & ~pb & bw::kPayloadMask;
        break;
    }
    if (ra.is_fill() && rb.is_fill()) {
      writer.AppendFill(r != 0, n);
    } else {
      writer.AppendChunk(r);
    }
    ra.Skip(n);
    rb.Skip(n);
    chunk += n;
  }
  writer.Finish();
  return Bitmap(a.codec(), a.num_rows(), std::move(words));
}

}  // namespace

std::string_view BitmapCodecName(BitmapCodec codec) {
  return codec == BitmapCodec::kWah ? "wah" : "plwah";
}

absl::StatusOr<BitmapCodec> ParseBitmapCodec(std::string_view name) {
  if (name == "wah") return BitmapCodec::kWah;
  if (name == "plwah") return BitmapCodec::kPlwah;
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown bitmap codec \"%s\" (known: plwah, wah)", name));
}

// --- BitmapWriter
// ---------------------------------------------------------------------------------

void BitmapWriter::AppendFill(bool bit, uint64_t chunks) {
  if (chunks == 0) return;
  if (fill_chunks_ > 0 && fill_bit_ != bit) FlushFill();
  fill_bit_ = bit;
  fill_chunks_ += chunks;
  chunks_ += chunks;
}

void BitmapWriter::AppendChunk(uint32_t payload) {
  payload &= bw::kPayloadMask;
  if (payload == 0 || payload == bw::kPayloadMask) {
    AppendFill(payload != 0, 1);
    return;
  }
  chunks_ += 1;
  if (fill_chunks_ > 0) {
    const uint32_t differs = payload ^ (fill_bit_ ? bw::kPayloadMask : 0);
    if (codec_ == BitmapCodec::kPlwah && std::popcount(differs) == 1) {
      FlushFill();  // full words first, the remainder last
      out_->back() |= uint32_t(std::countr_zero(differs) + 1) << bw::kPositionShift;
      return;
    }
    FlushFill();
  }
  out_->push_back(bw::kLiteralFlag | payload);
}

void BitmapWriter::FlushFill() {
  const uint32_t max = bw::MaxFillChunks(codec_);
  const uint32_t bit = fill_bit_ ? bw::kFillBitFlag : 0;
  while (fill_chunks_ > 0) {
    const uint32_t n = uint32_t(std::min<uint64_t>(fill_chunks_, max));
    out_->push_back(bit | n);
    fill_chunks_ -= n;
  }
}

void BitmapWriter::Finish() {
  if (fill_chunks_ > 0 && fill_bit_) FlushFill();
  fill_chunks_ = 0;
}

// --- BitmapView -------------------------------------------------------------------------------

uint64_t BitmapView::Count() const {
  RunReader reader(*this);
  const uint64_t num_chunks = NumChunks(num_rows_);
  uint64_t chunk = 0, count = 0;
  while (!reader.done() && chunk < num_chunks) {
    const uint64_t n = std::min(reader.chunks(), num_chunks - chunk);
    if (reader.is_fill()) {
      if (reader.payload() != 0) {
        count += std::min<uint64_t>((chunk + n) * bw::kRowsPerChunk, num_rows_) -
                 chunk * bw::kRowsPerChunk;
      }
    } else {
      count += std::popcount(reader.payload());
    }
    chunk += n;
    reader.Skip(n);
  }
  return count;
}

std::vector<uint32_t> BitmapView::Rows() const {
  std::vector<uint32_t> rows;
  ForEachRow([&](uint32_t r) { rows.push_back(r); });
  return rows;
}

DenseRows::DenseRows(BitmapView bitmap)
    : num_rows_(bitmap.num_rows()), bits_((uint64_t{bitmap.num_rows()} + 63) / 64) {
  bitmap.ToDense(bits_);
}

void BitmapView::ToDense(std::span<uint64_t> bits) const {
  // Straight over the words, without branches on the word's kind but for 1-fills (rare in a
  // sparse column): OrMany's dense path and every DenseRows come through here.
  if (bits.empty()) return;
  auto set_range = [&](uint64_t begin, uint64_t end) {  // rows [begin, end)
    while (begin < end) {
      const uint64_t word = begin / 64, bit = begin % 64;
      const uint64_t n = std::min<uint64_t>(64 - bit, end - begin);
      bits[word] |= (n == 64 ? ~uint64_t{0} : ((uint64_t{1} << n) - 1)) << bit;
      begin += n;
    }
  };
  const size_t last = bits.size() - 1;
  // A chunk's 31 rows or'ed in at their offset, into one or two 64-bit words (the second gets
  // zeros when the chunk does not cross; past the last word only zero bits would spill).
  auto or_chunk = [&](uint64_t chunk, uint32_t payload) {
    const uint64_t base = chunk * bw::kRowsPerChunk;
    const unsigned __int128 v = static_cast<unsigned __int128>(payload) << (base % 64);
    const size_t w = base / 64;
    bits[w] |= static_cast<uint64_t>(v);
    bits[std::min(w + 1, last)] |= static_cast<uint64_t>(v >> 64);
  };
  const bool plwah = codec_ == BitmapCodec::kPlwah;
  const uint32_t count_mask = bw::FillCountMask(codec_);
  const uint64_t num_chunks = NumChunks(num_rows_);
  uint64_t chunk = 0;
  for (const uint32_t w : words_) {
    if (chunk >= num_chunks) break;
    const bool literal = (w & bw::kLiteralFlag) != 0;
    const bool one = !literal && (w & bw::kFillBitFlag) != 0;
    const uint64_t fill = literal ? 0 : std::min<uint64_t>(w & count_mask, num_chunks - chunk);
    if (one) {
      set_range(chunk * bw::kRowsPerChunk,
                std::min<uint64_t>((chunk + fill) * bw::kRowsPerChunk, num_rows_));
    }
    chunk += fill;
    // A literal's rows, or the chunk after a PLWAH fill with one flipped bit.
    const uint32_t position = plwah && !literal ? (w & bw::kPositionMask) >> bw::kPositionShift : 0;
    const uint32_t flipped = ((one ? bw::kPayloadMask : 0u) ^ (1u << ((position - 1) & 31)));
    uint32_t payload = literal ? (w & bw::kPayloadMask) : position != 0 ? flipped : 0u;
    const bool has_chunk = (literal || position != 0) && chunk < num_chunks;
    payload = has_chunk ? payload : 0u;
    if (chunk + 1 == num_chunks) payload &= LastChunkMask(num_rows_);
    or_chunk(std::min(chunk, num_chunks - 1), payload);
    chunk += has_chunk ? 1 : 0;
  }
}

// --- BitmapColumns ----------------------------------------------------------------------------

BitmapView BitmapColumns::Column(size_t i) const {
  return BitmapView(
      codec, num_rows,
      std::span<const uint32_t>(words).subspan(offsets[i], offsets[i + 1] - offsets[i]));
}

ptrdiff_t BitmapColumns::Find(uint32_t key) const {
  auto it = std::lower_bound(keys.begin(), keys.end(), key);
  if (it == keys.end() || *it != key) return -1;
  return it - keys.begin();
}

// --- The CPU builder --------------------------------------------------------------------------

absl::Status CheckBitmapInput(uint32_t num_rows, std::span<const uint32_t> values,
                              std::span<const uint32_t> rows) {
  if (!rows.empty() && rows.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d rows for %d values: a row is needed for each value", rows.size(), values.size()));
  }
  if (rows.empty() && values.size() > num_rows) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%d values for %d rows", values.size(), num_rows));
  }
  uint32_t previous_row = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (rows[i] >= num_rows) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "row %d of value %d is past the last row (%d rows)", rows[i], i, num_rows));
    }
    if (rows[i] < previous_row) {
      return absl::InvalidArgumentError(
          absl::StrFormat("rows must be non-decreasing: row %d follows row %d at value %d", rows[i],
                          previous_row, i));
    }
    previous_row = rows[i];
  }
  return absl::OkStatus();
}

absl::StatusOr<BitmapColumns> BuildBitmaps(BitmapCodec codec, uint32_t num_rows,
                                           std::span<const uint32_t> values,
                                           std::span<const uint32_t> rows) {
  if (absl::Status input = CheckBitmapInput(num_rows, values, rows); !input.ok()) return input;
  // The columns, dense by value when the values are dictionary ids, hashed otherwise.
  uint32_t max_value = 0;
  for (uint32_t v : values) max_value = std::max(max_value, v);
  constexpr uint32_t kDenseLimit = 1u << 24;
  struct Column {
    int64_t open_chunk = -1;
    uint32_t payload = 0;
    std::vector<uint32_t> words;
    std::unique_ptr<BitmapWriter> writer;
  };
  std::vector<Column> dense;
  absl::node_hash_map<uint32_t, Column> hashed;  // stable: writers point at their words
  const bool use_dense = values.empty() || max_value < kDenseLimit;
  if (use_dense && !values.empty()) dense.resize(size_t{max_value} + 1);

  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t row = rows.empty() ? uint32_t(i) : rows[i];
    Column& c = use_dense ? dense[values[i]] : hashed[values[i]];
    const int64_t chunk = row / bw::kRowsPerChunk;
    if (c.open_chunk != chunk) {
      if (c.open_chunk < 0) {
        c.writer = std::make_unique<BitmapWriter>(codec, &c.words);
        c.writer->AppendFill(false, uint64_t(chunk));
      } else {
        c.writer->AppendChunk(c.payload);
        c.writer->AppendFill(false, uint64_t(chunk - c.open_chunk - 1));
      }
      c.open_chunk = chunk;
      c.payload = 0;
    }
    c.payload |= 1u << (row % bw::kRowsPerChunk);
  }

  BitmapColumns out;
  out.codec = codec;
  out.num_rows = num_rows;
  out.offsets.push_back(0);
  auto emit = [&](uint32_t key, Column& c) {
    c.writer->AppendChunk(c.payload);
    c.writer->Finish();
    out.keys.push_back(key);
    out.words.insert(out.words.end(), c.words.begin(), c.words.end());
    out.offsets.push_back(out.words.size());
  };
  if (use_dense) {
    for (size_t v = 0; v < dense.size(); ++v) {
      if (dense[v].open_chunk >= 0) emit(uint32_t(v), dense[v]);
    }
  } else {
    std::vector<uint32_t> keys;
    keys.reserve(hashed.size());
    for (const auto& [key, column] : hashed) keys.push_back(key);
    std::sort(keys.begin(), keys.end());
    for (uint32_t key : keys) emit(key, hashed[key]);
  }
  return out;
}

// --- Operations -------------------------------------------------------------------------------

absl::StatusOr<Bitmap> And(BitmapView a, BitmapView b) { return Combine(a, b, Op::kAnd); }
absl::StatusOr<Bitmap> Or(BitmapView a, BitmapView b) { return Combine(a, b, Op::kOr); }
absl::StatusOr<Bitmap> AndNot(BitmapView a, BitmapView b) { return Combine(a, b, Op::kAndNot); }

Bitmap Not(BitmapView a) {
  std::vector<uint32_t> words;
  BitmapWriter writer(a.codec(), &words);
  RunReader reader(a);
  const uint64_t num_chunks = NumChunks(a.num_rows());
  if (num_chunks > 0) {
    uint64_t chunk = 0;
    const uint64_t last = num_chunks - 1;  // masked to num_rows
    while (chunk < last) {
      const uint64_t n = std::min(reader.chunks(), last - chunk);
      if (reader.is_fill()) {
        writer.AppendFill(reader.payload() == 0, n);
      } else {
        writer.AppendChunk(~reader.payload());
      }
      reader.Skip(n);
      chunk += n;
    }
    writer.AppendChunk(~reader.payload() & LastChunkMask(a.num_rows()));
  }
  writer.Finish();
  return Bitmap(a.codec(), a.num_rows(), std::move(words));
}

Bitmap FromDense(BitmapCodec codec, uint32_t num_rows, std::span<const uint64_t> bits) {
  std::vector<uint32_t> words;
  BitmapWriter writer(codec, &words);
  const uint64_t num_chunks = NumChunks(num_rows);
  for (uint64_t c = 0; c < num_chunks; ++c) {
    const uint64_t pos = c * bw::kRowsPerChunk;
    const uint64_t w = pos / 64, o = pos % 64;
    // Whole zero 64-bit words: skip the chunks they hold at once.
    if (o == 0 && bits[w] == 0) {
      uint64_t end = w;
      while (end < bits.size() && bits[end] == 0) ++end;
      const uint64_t next = std::min(num_chunks, (end * 64) / bw::kRowsPerChunk);
      if (next > c + 1) {
        writer.AppendFill(false, next - c);
        c = next - 1;
        continue;
      }
    }
    uint64_t payload = bits[w] >> o;
    if (o > 64 - bw::kRowsPerChunk && w + 1 < bits.size()) payload |= bits[w + 1] << (64 - o);
    uint32_t chunk = uint32_t(payload) & bw::kPayloadMask;
    if (c == num_chunks - 1) chunk &= LastChunkMask(num_rows);
    writer.AppendChunk(chunk);
  }
  writer.Finish();
  return Bitmap(codec, num_rows, std::move(words));
}

namespace {

// The union as a balanced tree of pairwise ORs: each input is merged about log2(n) times.
absl::StatusOr<Bitmap> OrTree(std::span<const BitmapView> bitmaps) {
  if (bitmaps.size() == 1) {
    return Bitmap(bitmaps[0].codec(), bitmaps[0].num_rows(),
                  std::vector<uint32_t>(bitmaps[0].words().begin(), bitmaps[0].words().end()));
  }
  if (bitmaps.size() == 2) return Or(bitmaps[0], bitmaps[1]);
  const size_t half = bitmaps.size() / 2;
  absl::StatusOr<Bitmap> left = OrTree(bitmaps.first(half));
  if (!left.ok()) return left.status();
  absl::StatusOr<Bitmap> right = OrTree(bitmaps.subspan(half));
  if (!right.ok()) return right.status();
  return Or(*left, *right);
}

}  // namespace

absl::StatusOr<Bitmap> OrMany(std::span<const BitmapView> bitmaps) {
  if (bitmaps.empty()) return absl::InvalidArgumentError("OrMany of no bitmaps");
  uint64_t words = 0;
  for (const BitmapView& b : bitmaps) {
    if (auto status = CheckCompatible(bitmaps[0], b); !status.ok()) return status;
    words += b.words().size();
  }
  const BitmapCodec codec = bitmaps[0].codec();
  const uint32_t num_rows = bitmaps[0].num_rows();
  // Dense when the inputs hold more than a sixteenth of a word per chunk: the tree would pass
  // over its growing partial unions about log2(count) times.
  if (bitmaps.size() > 2 && words * 16 > NumChunks(num_rows)) {
    std::vector<uint64_t> bits((uint64_t{num_rows} + 63) / 64);
    for (const BitmapView& b : bitmaps) b.ToDense(bits);
    return FromDense(codec, num_rows, bits);
  }
  return OrTree(bitmaps);
}

Bitmap AllRows(BitmapCodec codec, uint32_t num_rows) {
  return Not(BitmapView(codec, num_rows, {}));
}

Bitmap NoRows(BitmapCodec codec, uint32_t num_rows) { return Bitmap(codec, num_rows, {}); }

absl::StatusOr<Bitmap> FromRows(BitmapCodec codec, uint32_t num_rows,
                                std::span<const uint32_t> rows) {
  std::vector<uint32_t> words;
  BitmapWriter writer(codec, &words);
  int64_t open_chunk = -1;
  uint32_t payload = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    const uint32_t row = rows[i];
    if (row >= num_rows) {
      return absl::InvalidArgumentError(
          absl::StrFormat("row %d is past the last row (%d rows)", row, num_rows));
    }
    if (i > 0 && row <= rows[i - 1]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("rows must ascend: row %d follows row %d", row, rows[i - 1]));
    }
    const int64_t chunk = row / bw::kRowsPerChunk;
    if (chunk != open_chunk) {
      if (open_chunk >= 0) writer.AppendChunk(payload);
      writer.AppendFill(false, uint64_t(chunk - open_chunk - 1));
      open_chunk = chunk;
      payload = 0;
    }
    payload |= 1u << (row % bw::kRowsPerChunk);
  }
  if (open_chunk >= 0) writer.AppendChunk(payload);
  writer.Finish();
  return Bitmap(codec, num_rows, std::move(words));
}

// --- Validation -------------------------------------------------------------------------------

absl::Status ValidateBitmap(BitmapCodec codec, uint32_t num_rows, std::span<const uint32_t> words) {
  const uint64_t num_chunks = NumChunks(num_rows);
  const uint32_t max = bw::MaxFillChunks(codec);
  uint64_t chunk = 0;
  // The previous word, when it was a fill without a position: its bit and count.
  bool after_open_fill = false;
  bool open_fill_bit = false;
  uint32_t open_fill_count = 0;
  auto error = [&](size_t i, std::string_view what) {
    return absl::DataLossError(absl::StrFormat("%s bitmap word %d (0x%08x): %s",
                                               BitmapCodecName(codec), i, words[i], what));
  };
  for (size_t i = 0; i < words.size(); ++i) {
    const uint32_t w = words[i];
    if (w & bw::kLiteralFlag) {
      const uint32_t payload = w & bw::kPayloadMask;
      if (payload == 0 || payload == bw::kPayloadMask) {
        return error(i, "a literal of all zeros or all ones, which must be a fill");
      }
      if (codec == BitmapCodec::kPlwah && after_open_fill &&
          std::popcount(payload ^ (open_fill_bit ? bw::kPayloadMask : 0)) == 1) {
        return error(i, "a literal one bit from the fill before it, which must be its position");
      }
      if (chunk >= num_chunks) return error(i, "past the bitmap's rows");
      if (chunk == num_chunks - 1 && (payload & ~LastChunkMask(num_rows)) != 0) {
        return error(i, "bits set past the bitmap's rows");
      }
      chunk += 1;
      after_open_fill = false;
      continue;
    }
    const bool bit = (w & bw::kFillBitFlag) != 0;
    const uint32_t count = w & bw::FillCountMask(codec);
    const uint32_t position =
        codec == BitmapCodec::kPlwah ? (w & bw::kPositionMask) >> bw::kPositionShift : 0;
    if (count == 0) return error(i, "a fill of no chunks");
    if (after_open_fill && open_fill_bit == bit && open_fill_count < max) {
      return error(i, "a fill that continues a fill that was not full");
    }
    chunk += count;
    if (bit && (chunk > num_chunks ||
                (chunk == num_chunks && LastChunkMask(num_rows) != bw::kPayloadMask))) {
      return error(i, "a fill of ones past the bitmap's rows");
    }
    if (chunk > num_chunks) return error(i, "past the bitmap's rows");
    if (position != 0) {
      if (chunk >= num_chunks) return error(i, "a position past the bitmap's rows");
      if (chunk == num_chunks - 1) {
        const uint32_t literal = (bit ? bw::kPayloadMask : 0) ^ (1u << (position - 1));
        if ((literal & ~LastChunkMask(num_rows)) != 0) {
          return error(i, "a position that sets bits past the bitmap's rows");
        }
      }
      chunk += 1;
      after_open_fill = false;
    } else {
      after_open_fill = true;
      open_fill_bit = bit;
      open_fill_count = count;
    }
  }
  if (after_open_fill && !open_fill_bit) {
    return error(words.size() - 1, "a trailing fill of zeros, which is not written");
  }
  return absl::OkStatus();
}

}  // namespace tandem::filter
