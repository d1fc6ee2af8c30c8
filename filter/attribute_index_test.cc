// The attribute index: Create's checks, Encode/Decode round trips, every truncation and a damaged
// bitmap giving DATA_LOSS, dictionary lookups and the choice of integer buckets.
#include "filter/attribute_index.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::filter {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

AttributeField Keyword(BitmapCodec codec, uint32_t num_docs) {
  AttributeField f;
  f.name = "label";
  f.kind = AttributeKind::kKeyword;
  f.values = {"ham", "spam"};
  f.columns = *BuildBitmaps(codec, num_docs, std::vector<uint32_t>{0, 1, 1, 0},
                            std::vector<uint32_t>{0, 1, 5, 9});
  return f;
}

AttributeField Year(BitmapCodec codec, uint32_t num_docs) {
  AttributeField f;
  f.name = "year";
  f.kind = AttributeKind::kInteger;
  f.buckets = {{2001, 2001}, {2002, 2002}, {2003, 2010}};
  f.columns = *BuildBitmaps(codec, num_docs, std::vector<uint32_t>{2, 0, 2},
                            std::vector<uint32_t>{2, 3, 4});
  return f;
}

TEST(AttributeIndexTest, RoundTripsAndLooksUp) {
  for (BitmapCodec codec : {BitmapCodec::kWah, BitmapCodec::kPlwah}) {
    auto index = AttributeIndex::Create(10, codec, {Keyword(codec, 10), Year(codec, 10)});
    ASSERT_TRUE(index.ok()) << index.status();
    auto decoded = AttributeIndex::Decode((*index)->Encode(), 10);
    ASSERT_TRUE(decoded.ok()) << decoded.status();
    EXPECT_EQ((*decoded)->Encode(), (*index)->Encode());
    const AttributeField* label = (*decoded)->Find("label");
    ASSERT_NE(label, nullptr);
    EXPECT_THAT((*decoded)->Column(*label, *label->ValueId("spam")).Rows(), ElementsAre(1, 5));
    EXPECT_EQ(label->ValueId("eggs"), std::nullopt);
    const AttributeField* year = (*decoded)->Find("year");
    EXPECT_EQ(year->BucketOf(2005), 2u);
    EXPECT_EQ(year->BucketOf(2000), std::nullopt);
    EXPECT_EQ(year->BucketOf(2011), std::nullopt);
    EXPECT_EQ(year->BucketText(2), "[2003, 2010]");
    EXPECT_EQ(year->BucketText(0), "2001");
    EXPECT_THAT((*decoded)->Column(*year, 1).Rows(), ElementsAre());  // no document has 2002
    EXPECT_THAT((*decoded)->Column(*year, 2).Rows(), ElementsAre(2, 4));
    EXPECT_EQ((*decoded)->Find("month"), nullptr);
  }
}

TEST(AttributeIndexTest, AFieldWithoutDocumentsRoundTrips) {
  AttributeField empty;
  empty.name = "year";
  empty.kind = AttributeKind::kInteger;
  empty.columns = *BuildBitmaps(BitmapCodec::kWah, 10, std::vector<uint32_t>{});
  auto index = AttributeIndex::Create(10, BitmapCodec::kWah, {empty});
  ASSERT_TRUE(index.ok()) << index.status();
  auto decoded = AttributeIndex::Decode((*index)->Encode(), 10);
  ASSERT_TRUE(decoded.ok()) << decoded.status();
  EXPECT_EQ((*decoded)->Find("year")->cardinality(), 0u);
  EXPECT_EQ((*decoded)->Encode(), (*index)->Encode());
}

TEST(AttributeIndexTest, DamageIsDataLoss) {
  auto index = AttributeIndex::Create(
      10, BitmapCodec::kPlwah, {Keyword(BitmapCodec::kPlwah, 10), Year(BitmapCodec::kPlwah, 10)});
  ASSERT_TRUE(index.ok());
  const std::string bytes = (*index)->Encode();
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto truncated = AttributeIndex::Decode(std::string_view(bytes).substr(0, n), 10);
    EXPECT_EQ(truncated.status().code(), absl::StatusCode::kDataLoss) << n;
  }
  EXPECT_THAT(AttributeIndex::Decode(bytes + "x", 10).status().message(),
              HasSubstr("after the last"));
  EXPECT_THAT(AttributeIndex::Decode(bytes, 11).status().message(), HasSubstr("of 10 documents"));
  // The last word (a bitmap of "year") made a literal of all zeros.
  std::string damaged = bytes;
  const uint32_t zero_literal = bitmap_word::kLiteralFlag;
  damaged.replace(damaged.size() - 4, 4, reinterpret_cast<const char*>(&zero_literal), 4);
  auto bad = AttributeIndex::Decode(damaged, 10);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(bad.status().message(), HasSubstr("\"year\""));
}

TEST(AttributeIndexTest, CreateChecksFields) {
  const BitmapCodec c = BitmapCodec::kWah;
  AttributeField unsorted = Keyword(c, 10);
  unsorted.values = {"spam", "ham"};
  EXPECT_THAT(AttributeIndex::Create(10, c, {unsorted}).status().message(), HasSubstr("ascending"));
  AttributeField overlap = Year(c, 10);
  overlap.buckets[1] = {2001, 2002};
  EXPECT_THAT(AttributeIndex::Create(10, c, {overlap}).status().message(), HasSubstr("overlap"));
  EXPECT_THAT(AttributeIndex::Create(11, c, {Keyword(c, 10)}).status().message(),
              HasSubstr("10 rows in an index of 11"));
  EXPECT_THAT(AttributeIndex::Create(10, c, {Keyword(c, 10), Keyword(c, 10)}).status().message(),
              HasSubstr("twice"));
  AttributeField small = Keyword(c, 10);
  small.values = {"ham"};
  EXPECT_THAT(AttributeIndex::Create(10, c, {small}).status().message(), HasSubstr("entry 1 of 1"));
  EXPECT_THAT(AttributeIndex::Create(10, BitmapCodec::kPlwah, {Keyword(c, 10)}).status().message(),
              HasSubstr("another bitmap codec"));
  // A column's end past the words, with the last offset still equal to their count.
  AttributeField wild = Keyword(c, 10);
  wild.columns.offsets[1] = wild.columns.words.size() + 100;
  EXPECT_THAT(AttributeIndex::Create(10, c, {wild}).status().message(),
              HasSubstr("within the words"));
}

TEST(AttributeIndexTest, ChooseBuckets) {
  EXPECT_THAT(
      ChooseBuckets({2003, 2001, 2003, 2002}),
      ElementsAre(IntegerBucket{2001, 2001}, IntegerBucket{2002, 2002}, IntegerBucket{2003, 2003}));
  EXPECT_THAT(ChooseBuckets({}), ElementsAre());
  std::vector<int64_t> lengths;
  for (int i = 0; i < 10000; ++i) lengths.push_back(i % 1000);
  const auto buckets = ChooseBuckets(lengths, 10);
  ASSERT_EQ(buckets.size(), 10u);
  EXPECT_EQ(buckets.front().lo, 0);
  EXPECT_EQ(buckets.back().hi, 999);
  for (size_t i = 1; i < buckets.size(); ++i) EXPECT_EQ(buckets[i].lo, buckets[i - 1].hi + 1);
  // A value that fills more than a share stays whole.
  std::vector<int64_t> skewed(1000, 5);
  skewed.push_back(1);
  skewed.push_back(9);
  EXPECT_THAT(ChooseBuckets(skewed, 2), ElementsAre(IntegerBucket{1, 5}, IntegerBucket{9, 9}));
}

}  // namespace
}  // namespace tandem::filter
