// Property tests of the WAH and PLWAH bitmaps against sorted row lists: the builder's columns,
// every operation and the dense and row conversions, on random bitmaps of every shape (empty, full,
// sparse, dense runs, rows at chunk edges, gaps longer than one fill word holds); canonical form
// checked by ValidateBitmap and by byte equality with the bitmap built from the expected rows; and
// every way a word can break the form.
#include "filter/bitmap.h"

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <random>
#include <set>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::filter {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
namespace bw = bitmap_word;

constexpr BitmapCodec kCodecs[] = {BitmapCodec::kWah, BitmapCodec::kPlwah};

// Random ascending rows below num_rows, in one of several shapes.
std::vector<uint32_t> RandomRows(std::mt19937_64& rng, uint32_t num_rows, int shape) {
  std::vector<uint32_t> rows;
  if (num_rows == 0) return rows;
  std::uniform_int_distribution<uint32_t> any(0, num_rows - 1);
  switch (shape % 6) {
    case 0:  // empty
      break;
    case 1:  // sparse: about one row in 200
      for (uint32_t i = 0; i < num_rows / 200 + 1; ++i) rows.push_back(any(rng));
      break;
    case 2:  // dense: about half
      for (uint32_t r = 0; r < num_rows; ++r) {
        if (rng() & 1) rows.push_back(r);
      }
      break;
    case 3:  // runs of ones and zeros, of random lengths (many whole chunks)
      for (uint32_t r = 0; r < num_rows;) {
        const uint32_t len = 1 + uint32_t(rng() % 200);
        const bool on = rng() & 1;
        for (uint32_t i = r; i < std::min<uint64_t>(uint64_t{r} + len, num_rows); ++i) {
          if (on) rows.push_back(i);
        }
        r = uint32_t(std::min<uint64_t>(uint64_t{r} + len, num_rows));
      }
      break;
    case 4:  // all rows but a few (single zero bits: PLWAH positions in 1-fills)
      for (uint32_t r = 0; r < num_rows; ++r) {
        if (rng() % 97 != 0) rows.push_back(r);
      }
      break;
    case 5:  // rows at chunk edges
      for (uint32_t c = 0; c * 31 < num_rows; c += 1 + uint32_t(rng() % 3)) {
        rows.push_back(c * 31);
        if (c * 31 + 30 < num_rows) rows.push_back(c * 31 + 30);
      }
      break;
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

Bitmap Make(BitmapCodec codec, uint32_t num_rows, const std::vector<uint32_t>& rows) {
  auto bitmap = FromRows(codec, num_rows, rows);
  EXPECT_TRUE(bitmap.ok()) << bitmap.status();
  return *std::move(bitmap);
}

// The bitmap holds exactly `rows`, is canonical, and is the same bytes as the one built from them.
void ExpectBitmap(const Bitmap& bitmap, const std::vector<uint32_t>& rows, const char* what) {
  SCOPED_TRACE(what);
  EXPECT_TRUE(ValidateBitmap(bitmap.codec(), bitmap.num_rows(), bitmap.words()).ok())
      << ValidateBitmap(bitmap.codec(), bitmap.num_rows(), bitmap.words());
  EXPECT_EQ(bitmap.Rows(), rows);
  EXPECT_EQ(bitmap.Count(), rows.size());
  EXPECT_EQ(bitmap.words(), Make(bitmap.codec(), bitmap.num_rows(), rows).words());
  std::vector<uint64_t> dense((bitmap.num_rows() + 63) / 64);
  bitmap.view().ToDense(dense);
  std::vector<uint32_t> from_dense;
  for (uint32_t r = 0; r < bitmap.num_rows(); ++r) {
    if (dense[r / 64] >> (r % 64) & 1) from_dense.push_back(r);
  }
  EXPECT_EQ(from_dense, rows);
  for (size_t w = bitmap.num_rows() / 64; w < dense.size(); ++w) {
    if (bitmap.num_rows() % 64 != 0) {  // no bit past the last row
      EXPECT_EQ(dense[w] >> (bitmap.num_rows() % 64), 0u);
    }
  }
  // DenseRows answers membership and the next row as a sorted set does.
  const DenseRows dense_rows(bitmap);
  EXPECT_EQ(dense_rows.num_rows(), bitmap.num_rows());
  for (uint32_t r = 0; r < bitmap.num_rows() + 3; ++r) {
    const auto next = std::lower_bound(rows.begin(), rows.end(), r);
    ASSERT_EQ(dense_rows.NextGeq(r), next == rows.end() ? DenseRows::kEnd : *next) << r;
    ASSERT_EQ(dense_rows.Contains(r), next != rows.end() && *next == r) << r;
  }
  EXPECT_EQ(dense_rows.NextGeq(0xFFFFFFFFu), DenseRows::kEnd);
}

TEST(BitmapTest, OperationsMatchSetsOnRandomBitmaps) {
  std::mt19937_64 rng(7);
  const uint32_t sizes[] = {0, 1, 30, 31, 32, 62, 63, 64, 100, 31 * 40, 31 * 40 + 7, 5000};
  for (BitmapCodec codec : kCodecs) {
    for (uint32_t num_rows : sizes) {
      for (int shape_a = 0; shape_a < 6; ++shape_a) {
        for (int shape_b = 0; shape_b < 6; ++shape_b) {
          SCOPED_TRACE(testing::Message() << BitmapCodecName(codec) << " rows " << num_rows
                                          << " shapes " << shape_a << "," << shape_b);
          const auto ra = RandomRows(rng, num_rows, shape_a);
          const auto rb = RandomRows(rng, num_rows, shape_b);
          const Bitmap a = Make(codec, num_rows, ra), b = Make(codec, num_rows, rb);
          ExpectBitmap(a, ra, "a");
          std::vector<uint32_t> expected;
          std::set_intersection(ra.begin(), ra.end(), rb.begin(), rb.end(),
                                std::back_inserter(expected));
          ExpectBitmap(*And(a, b), expected, "and");
          expected.clear();
          std::set_union(ra.begin(), ra.end(), rb.begin(), rb.end(), std::back_inserter(expected));
          ExpectBitmap(*Or(a, b), expected, "or");
          expected.clear();
          std::set_difference(ra.begin(), ra.end(), rb.begin(), rb.end(),
                              std::back_inserter(expected));
          ExpectBitmap(*AndNot(a, b), expected, "and not");
          std::vector<uint32_t> all(num_rows);
          for (uint32_t r = 0; r < num_rows; ++r) all[r] = r;
          expected.clear();
          std::set_difference(all.begin(), all.end(), ra.begin(), ra.end(),
                              std::back_inserter(expected));
          ExpectBitmap(Not(a), expected, "not");
          ExpectBitmap(AllRows(codec, num_rows), all, "all rows");
          ExpectBitmap(NoRows(codec, num_rows), {}, "no rows");
        }
      }
    }
  }
}

TEST(BitmapTest, BuilderColumnsAreTheBitmapsOfEachValue) {
  std::mt19937_64 rng(11);
  for (BitmapCodec codec : kCodecs) {
    for (uint32_t cardinality : {1u, 2u, 7u, 256u, 5000u}) {
      for (bool zipf : {false, true}) {
        const uint32_t num_rows = 20000 + uint32_t(rng() % 100);
        std::vector<uint32_t> values(num_rows);
        for (auto& v : values) {
          // Zipf-like: the square of a uniform draw favours small values.
          const double u = double(rng() % 1000000) / 1e6;
          v = uint32_t((zipf ? u * u : u) * cardinality);
        }
        auto columns = BuildBitmaps(codec, num_rows, values);
        ASSERT_TRUE(columns.ok()) << columns.status();
        std::set<uint32_t> present(values.begin(), values.end());
        ASSERT_THAT(columns->keys, ::testing::ElementsAreArray(present));
        for (size_t i = 0; i < columns->num_columns(); ++i) {
          std::vector<uint32_t> rows;
          for (uint32_t r = 0; r < num_rows; ++r) {
            if (values[r] == columns->keys[i]) rows.push_back(r);
          }
          const BitmapView column = columns->Column(i);
          EXPECT_EQ(column.Rows(), rows);
          EXPECT_EQ(std::vector<uint32_t>(column.words().begin(), column.words().end()),
                    Make(codec, num_rows, rows).words());
        }
        EXPECT_EQ(columns->Find(cardinality + 1), -1);
      }
    }
  }
}

TEST(BitmapTest, MultiValuedRowsAndRowsWithoutValues) {
  // Rows 0 and 40 have values 3 and 5, row 40 twice value 5, rows between have none.
  const std::vector<uint32_t> rows = {0, 0, 40, 40, 40, 99};
  const std::vector<uint32_t> values = {3, 5, 5, 3, 5, 1000000000};  // a hashed column too
  for (BitmapCodec codec : kCodecs) {
    auto columns = BuildBitmaps(codec, 100, values, rows);
    ASSERT_TRUE(columns.ok()) << columns.status();
    EXPECT_THAT(columns->keys, ElementsAre(3, 5, 1000000000));
    EXPECT_THAT(columns->Column(0).Rows(), ElementsAre(0, 40));
    EXPECT_THAT(columns->Column(1).Rows(), ElementsAre(0, 40));
    EXPECT_THAT(columns->Column(2).Rows(), ElementsAre(99));
  }
}

TEST(BitmapTest, GapsLongerThanOneFillWord) {
  // 2^32 - 1 rows: the gap between the two rows is ~138M chunks, more than PLWAH's 2^25 - 1 per
  // fill word, and the ones are more than one word too.
  const uint32_t num_rows = 0xFFFFFFFFu;
  for (BitmapCodec codec : kCodecs) {
    const Bitmap sparse = Make(codec, num_rows, {5, num_rows - 2});
    EXPECT_THAT(sparse.Rows(), ElementsAre(5, num_rows - 2));
    if (codec == BitmapCodec::kPlwah) {
      // a literal, then four full fill words and the remainder with the last row's position
      EXPECT_EQ(sparse.words().size(), 6u);
    } else {
      EXPECT_EQ(sparse.words().size(), 3u);
    }
    EXPECT_TRUE(ValidateBitmap(codec, num_rows, sparse.words()).ok());
    const Bitmap all = AllRows(codec, num_rows);
    EXPECT_EQ(all.Count(), num_rows);
    EXPECT_TRUE(ValidateBitmap(codec, num_rows, all.words()).ok());
    const Bitmap inverse = Not(sparse);
    EXPECT_EQ(inverse.Count(), uint64_t{num_rows} - 2);
    EXPECT_EQ(Not(inverse).words(), sparse.words());
    EXPECT_EQ(And(inverse, sparse)->Count(), 0u);
    EXPECT_EQ(Or(inverse, sparse)->words(), all.words());
  }
}

// Count() is remembered; copies, moves and assignments carry the bitmap and its count together.
TEST(BitmapTest, CountSurvivesCopiesAndMoves) {
  Bitmap a = Make(BitmapCodec::kPlwah, 1000, {1, 2, 500, 999});
  Bitmap b = Make(BitmapCodec::kWah, 100, {7});
  EXPECT_EQ(a.Count(), 4u);
  Bitmap copy = a;
  EXPECT_EQ(copy.Count(), 4u);
  EXPECT_EQ(copy.words(), a.words());
  copy = b;  // counted after the assignment: b's words, b's count
  EXPECT_EQ(copy.Count(), 1u);
  copy = a;  // a's remembered count comes along
  EXPECT_EQ(copy.Count(), 4u);
  Bitmap moved = std::move(copy);
  EXPECT_EQ(moved.Count(), 4u);
  EXPECT_EQ(moved.num_rows(), 1000u);
  EXPECT_EQ(copy.Count(), 0u);  // NOLINT: a moved-from bitmap is empty and counts again
  moved = Bitmap();
  EXPECT_EQ(moved.Count(), 0u);
}

TEST(BitmapTest, OrManyAndFromDense) {
  std::mt19937_64 rng(13);
  for (BitmapCodec codec : kCodecs) {
    for (uint32_t num_rows : {1u, 31u, 64u, 100u, 5000u, 70000u}) {
      for (size_t count : {1u, 2u, 3u, 9u, 40u}) {
        std::vector<Bitmap> bitmaps;
        std::set<uint32_t> all;
        for (size_t i = 0; i < count; ++i) {
          const auto rows = RandomRows(rng, num_rows, int(rng() % 6));
          all.insert(rows.begin(), rows.end());
          bitmaps.push_back(Make(codec, num_rows, rows));
        }
        std::vector<BitmapView> views(bitmaps.begin(), bitmaps.end());
        auto merged = OrMany(views);
        ASSERT_TRUE(merged.ok()) << merged.status();
        ExpectBitmap(*merged, std::vector<uint32_t>(all.begin(), all.end()), "or many");
      }
    }
  }
  EXPECT_FALSE(OrMany({}).ok());
  const Bitmap a = Make(BitmapCodec::kWah, 10, {1}), b = Make(BitmapCodec::kWah, 11, {1});
  std::vector<BitmapView> mixed = {a, b, a};
  EXPECT_THAT(OrMany(mixed).status().message(), HasSubstr("different lengths"));
}

TEST(BitmapTest, CursorFindsEachNextRow) {
  std::mt19937_64 rng(3);
  for (BitmapCodec codec : kCodecs) {
    for (uint32_t num_rows : {0u, 1u, 31u, 62u, 100u, 5000u}) {
      for (int shape = 0; shape < 6; ++shape) {
        const auto rows = RandomRows(rng, num_rows, shape);
        const Bitmap bitmap = Make(codec, num_rows, rows);
        // Ascending probes with random strides, each against std::lower_bound.
        BitmapCursor cursor(bitmap);
        for (uint32_t probe = 0; probe <= num_rows + 40; probe += 1 + uint32_t(rng() % 45)) {
          auto it = std::lower_bound(rows.begin(), rows.end(), probe);
          const uint32_t want = it == rows.end() ? BitmapCursor::kEnd : *it;
          ASSERT_EQ(cursor.NextGeq(probe), want) << BitmapCodecName(codec) << " rows " << num_rows
                                                 << " shape " << shape << " probe " << probe;
        }
        // Every row, one by one.
        BitmapCursor each(bitmap);
        std::vector<uint32_t> found;
        for (uint32_t r = 0; r < num_rows; ++r) {
          if (each.Contains(r)) found.push_back(r);
        }
        EXPECT_EQ(found, rows);
      }
    }
  }
}

TEST(BitmapTest, PlwahFoldsSingleBitLiteralsIntoFills) {
  // Rows 100 and 1000: each a one-bit chunk after a run of zero chunks.
  const Bitmap wah = Make(BitmapCodec::kWah, 2000, {100, 1000});
  const Bitmap plwah = Make(BitmapCodec::kPlwah, 2000, {100, 1000});
  EXPECT_EQ(wah.words().size(), 4u);
  EXPECT_EQ(plwah.words().size(), 2u);
  // chunk 3 (rows 93..123), bit 7: a 0-fill of 3 chunks with position 8
  EXPECT_EQ(plwah.words()[0], (8u << bw::kPositionShift) | 3u);
  // The first chunk has no fill before it, so stays a literal.
  EXPECT_THAT(Make(BitmapCodec::kPlwah, 2000, {1}).words(), ElementsAre(bw::kLiteralFlag | 2u));
}

TEST(BitmapTest, ValidateRejectsEveryBrokenForm) {
  const uint32_t kRows = 31 * 10 + 5;  // last chunk has 5 rows
  struct Case {
    BitmapCodec codec;
    std::vector<uint32_t> words;
    const char* message;
  };
  const uint32_t L = bw::kLiteralFlag, ONE = bw::kFillBitFlag;
  const Case cases[] = {
      {BitmapCodec::kWah, {L}, "all zeros or all ones"},
      {BitmapCodec::kWah, {L | bw::kPayloadMask}, "all zeros or all ones"},
      {BitmapCodec::kWah, {0u}, "no chunks"},
      {BitmapCodec::kWah, {2u, 3u, L | 6u}, "not full"},
      {BitmapCodec::kWah, {2u}, "trailing fill of zeros"},
      {BitmapCodec::kWah, {11u, L | 6u}, "past the bitmap's rows"},
      {BitmapCodec::kWah, {ONE | 11u}, "ones past"},
      {BitmapCodec::kWah, {10u, L | 0x20u}, "bits set past"},
      {BitmapCodec::kPlwah, {2u, L | 4u}, "must be its position"},
      {BitmapCodec::kPlwah, {ONE | 2u, L | (bw::kPayloadMask ^ 4u)}, "must be its position"},
      {BitmapCodec::kPlwah, {(1u << bw::kPositionShift) | 11u}, "position past"},
      {BitmapCodec::kPlwah, {(7u << bw::kPositionShift) | 10u}, "sets bits past"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.message);
    const absl::Status status = ValidateBitmap(c.codec, kRows, c.words);
    EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
    EXPECT_THAT(status.message(), HasSubstr(c.message));
  }
  // And the forms next to them are accepted.
  EXPECT_TRUE(ValidateBitmap(BitmapCodec::kWah, kRows, std::vector<uint32_t>{2u, L | 6u}).ok());
  EXPECT_TRUE(ValidateBitmap(BitmapCodec::kPlwah, kRows,
                             std::vector<uint32_t>{(3u << bw::kPositionShift) | 2u})
                  .ok());
  EXPECT_TRUE(
      ValidateBitmap(BitmapCodec::kWah, kRows, std::vector<uint32_t>{ONE | 10u, L | 0x1Fu}).ok());
  EXPECT_TRUE(ValidateBitmap(BitmapCodec::kWah, kRows, {}).ok());
}

TEST(BitmapTest, BadInputGetsClearErrors) {
  EXPECT_THAT(
      BuildBitmaps(BitmapCodec::kWah, 10, std::vector<uint32_t>{1, 2}, std::vector<uint32_t>{5, 3})
          .status()
          .message(),
      HasSubstr("non-decreasing"));
  EXPECT_THAT(
      BuildBitmaps(BitmapCodec::kWah, 10, std::vector<uint32_t>{1}, std::vector<uint32_t>{10})
          .status()
          .message(),
      HasSubstr("past the last row"));
  EXPECT_THAT(
      BuildBitmaps(BitmapCodec::kWah, 10, std::vector<uint32_t>{1}, std::vector<uint32_t>{1, 2})
          .status()
          .message(),
      HasSubstr("a row is needed"));
  EXPECT_THAT(BuildBitmaps(BitmapCodec::kWah, 1, std::vector<uint32_t>{1, 2}).status().message(),
              HasSubstr("2 values for 1 rows"));
  EXPECT_THAT(FromRows(BitmapCodec::kWah, 10, std::vector<uint32_t>{3, 3}).status().message(),
              HasSubstr("ascend"));
  const Bitmap a = Make(BitmapCodec::kWah, 10, {1}), b = Make(BitmapCodec::kPlwah, 10, {1});
  const Bitmap c = Make(BitmapCodec::kWah, 11, {1});
  EXPECT_THAT(And(a, b).status().message(), HasSubstr("different codecs"));
  EXPECT_THAT(Or(a, c).status().message(), HasSubstr("different lengths"));
  EXPECT_THAT(ParseBitmapCodec("ewah").status().message(), HasSubstr("known: plwah, wah"));
  EXPECT_EQ(*ParseBitmapCodec("plwah"), BitmapCodec::kPlwah);
}

}  // namespace
}  // namespace tandem::filter
