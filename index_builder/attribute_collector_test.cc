// Attributes through a build: --attributes parsing per format, the collector's dictionaries,
// buckets, integers that do not parse and renumbering, and whole builds (several threads, spilled
// runs, keep-last duplicates) whose stored bitmaps hold exactly each document's values.
#include "index_builder/attribute_collector.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "index/index.h"
#include "index_builder/inverter.h"
#include "tests/test_collection.h"

namespace tandem::index_builder {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(SelectAttributesTest, FieldsOfEachFormat) {
  auto all = SelectAttributes("email", "all");
  ASSERT_TRUE(all.ok()) << all.status();
  std::vector<std::string> names;
  for (const auto& s : *all) names.push_back(s.name);
  EXPECT_THAT(names, ::testing::Contains("domain"));
  EXPECT_THAT(names, ::testing::Contains("year"));
  EXPECT_THAT(names, ::testing::Contains("length"));
  auto year = SelectAttributes("email", "year, label,year");
  ASSERT_TRUE(year.ok());
  ASSERT_EQ(year->size(), 2u);
  EXPECT_EQ((*year)[0].type, AttributeType::kInteger);
  EXPECT_EQ((*year)[1].type, AttributeType::kKeyword);
  EXPECT_THAT(SelectAttributes("reuters", "topic").status().message(),
              HasSubstr("no field \"topic\" (they have: "));
  EXPECT_THAT(SelectAttributes("email", "year:keyword").status().message(),
              HasSubstr("an integer field"));
  EXPECT_THAT(SelectAttributes("email", "year:float").status().message(),
              HasSubstr("keyword or integer"));
  EXPECT_THAT(SelectAttributes("lines", "anything").status().message(), HasSubstr("no field"));
  auto lines = SelectAttributes("lines", "length");
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ((*lines)[0].type, AttributeType::kInteger);
  // Formats whose fields come from the data take any name.
  auto beir = SelectAttributes("beir", "metadata.year:integer,source");
  ASSERT_TRUE(beir.ok()) << beir.status();
  EXPECT_EQ((*beir)[0].type, AttributeType::kInteger);
  EXPECT_EQ((*beir)[1].type, AttributeType::kKeyword);
}

TEST(AttributeCollectorTest, DictionariesBucketsAndRenumbering) {
  AttributeCollector c({{"label", AttributeType::kKeyword},
                        {"year", AttributeType::kInteger},
                        {"length", AttributeType::kInteger}});
  c.Add(0, {{{"label", "spam"}, {"year", "2002"}, {"other", "x"}}}, 10);
  c.Add(1, {{{"label", "ham"}, {"label", "spam"}, {"year", "two thousand"}}}, 20);
  c.Add(2, {}, 30);
  c.Add(3, {{{"label", "ham"}, {"year", "2001"}}}, 10);
  c.Renumber(std::vector<uint32_t>{0, UINT32_MAX, 1, 2});  // document 1 goes
  auto index = c.Finish(3, filter::BitmapCodec::kPlwah, nullptr);
  ASSERT_TRUE(index.ok()) << index.status();
  const filter::AttributeField* label = (*index)->Find("label");
  ASSERT_NE(label, nullptr);
  EXPECT_THAT(label->values, ElementsAre("ham", "spam"));
  EXPECT_THAT((*index)->Column(*label, 0).Rows(), ElementsAre(2));
  EXPECT_THAT((*index)->Column(*label, 1).Rows(), ElementsAre(0));
  const filter::AttributeField* year = (*index)->Find("year");
  EXPECT_THAT(year->buckets,
              ElementsAre(filter::IntegerBucket{2001, 2001}, filter::IntegerBucket{2002, 2002}));
  EXPECT_THAT((*index)->Column(*year, 0).Rows(), ElementsAre(2));
  const filter::AttributeField* length = (*index)->Find("length");
  EXPECT_THAT((*index)->Column(*length, *length->BucketOf(30)).Rows(), ElementsAre(1));
  EXPECT_THAT((*index)->Column(*length, *length->BucketOf(10)).Rows(), ElementsAre(0, 2));
  ASSERT_EQ(c.stats().size(), 3u);
  EXPECT_EQ(c.stats()[1].not_integers, 1u);
  EXPECT_EQ(c.stats()[0].values, 2u);
}

// Documents whose attributes are a function of their number, with repeated ids under keep-last.
class AttributeReader : public DocumentReader {
 public:
  explicit AttributeReader(uint32_t n) : n_(n) {}
  absl::StatusOr<bool> Next(Document* doc) override {
    if (next_ == n_) return false;
    doc->Clear();
    const uint32_t i = next_++;
    doc->external_id = absl::StrCat("doc", i % 3 == 2 ? i - 1 : i);  // every third repeats
    doc->text = absl::StrCat("word", i % 7, " common");
    doc->attributes.emplace_back("label", i % 5 == 0 ? "spam" : "ham");
    if (i % 4 == 0) doc->attributes.emplace_back("label", "flagged");
    if (i % 11 != 0) doc->attributes.emplace_back("year", absl::StrCat(1990 + i % 30));
    return true;
  }

 private:
  uint32_t n_;
  uint32_t next_ = 0;
};

TEST(AttributeBuildTest, StoredBitmapsHoldEachDocumentsValues) {
  for (int threads : {1, 3}) {
    testing::TempDir tmp;
    const std::string out = tmp.path() + "/out";
    AttributeReader reader(20000);
    InverterOptions options;
    options.threads = threads;
    options.memory_budget_bytes = 1 << 16;  // spill
    options.duplicate_ids = DuplicateIds::kKeepLast;
    options.attributes = {{"label", AttributeType::kKeyword}, {"year", AttributeType::kInteger}};
    options.bitmap_codec = filter::BitmapCodec::kWah;
    auto summary = BuildIndex(reader, out, {}, options);
    ASSERT_TRUE(summary.ok()) << summary.status();
    EXPECT_THAT(summary->Describe(), HasSubstr("attributes label (3 values"));
    auto idx = index::Index::Open(out);
    ASSERT_TRUE(idx.ok()) << idx.status();
    const filter::AttributeIndex* attributes = (*idx)->attributes();
    ASSERT_NE(attributes, nullptr);
    EXPECT_EQ(attributes->codec(), filter::BitmapCodec::kWah);
    // The expected rows, from each kept document's number (its external id, after keep-last).
    std::map<std::string, std::vector<uint32_t>> label_rows, year_rows;
    for (uint32_t d = 0; d < (*idx)->num_docs(); ++d) {
      std::string id(absl::string_view((*idx)->external_id(d)));
      uint32_t i = std::stoul(id.substr(3));
      if (i % 3 == 1 && i + 1 < 20000) i += 1;  // doc<i> was replaced by document i + 1
      label_rows[i % 5 == 0 ? "spam" : "ham"].push_back(d);
      if (i % 4 == 0) label_rows["flagged"].push_back(d);
      if (i % 11 != 0) year_rows[absl::StrCat(1990 + i % 30)].push_back(d);
    }
    const filter::AttributeField* label = attributes->Find("label");
    ASSERT_NE(label, nullptr);
    for (const auto& [value, rows] : label_rows) {
      EXPECT_EQ(attributes->Column(*label, *label->ValueId(value)).Rows(), rows) << value;
    }
    const filter::AttributeField* year = attributes->Find("year");
    ASSERT_EQ(year->buckets.size(), year_rows.size());
    for (const auto& [value, rows] : year_rows) {
      EXPECT_EQ(attributes->Column(*year, *year->BucketOf(std::stoll(value))).Rows(), rows);
    }
  }
}

TEST(AttributeBuildTest, NoAttributesNoFile) {
  testing::TempDir tmp;
  AttributeReader reader(100);
  InverterOptions options;
  options.duplicate_ids = DuplicateIds::kKeepFirst;
  ASSERT_TRUE(BuildIndex(reader, tmp.path() + "/out", {}, options).ok());
  auto idx = index::Index::Open(tmp.path() + "/out");
  ASSERT_TRUE(idx.ok());
  EXPECT_EQ((*idx)->attributes(), nullptr);
}

}  // namespace
}  // namespace tandem::index_builder
