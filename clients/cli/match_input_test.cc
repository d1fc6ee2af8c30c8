#include "clients/cli/match_input.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::cli {
namespace {

using ::testing::HasSubstr;

TEST(MatchInputTest, NumbersKeepTheirWrittenForm) {
  absl::StatusOr<tandem::v1::Document> d = ParseDocumentLine(
      R"({"id": "m1", "text": "gas prices", "attributes": {"year": 2001, "score": 0.5,
          "big": 2e3, "domain": "enron.com", "neg": -7}})",
      1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->id(), "m1");
  EXPECT_EQ(d->text(), "gas prices");
  ASSERT_EQ(d->attributes_size(), 5);
  // Object keys come sorted: big, domain, neg, score, year.
  EXPECT_EQ(d->attributes(0).name(), "big");
  EXPECT_EQ(d->attributes(0).value().double_value(), 2000.0);
  EXPECT_EQ(d->attributes(1).value().string_value(), "enron.com");
  EXPECT_EQ(d->attributes(2).value().int_value(), -7);
  EXPECT_EQ(d->attributes(3).value().double_value(), 0.5);
  EXPECT_EQ(d->attributes(4).value().int_value(), 2001);
}

TEST(MatchInputTest, IdsDefaultToTheLineNumberAndMayBeIntegers) {
  absl::StatusOr<tandem::v1::Document> d = ParseDocumentLine(R"({"text": "x"})", 7);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->id(), "7");
  d = ParseDocumentLine(R"({"id": 42})", 1);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(d->id(), "42");
}

TEST(MatchInputTest, ErrorsNameTheLine) {
  EXPECT_EQ(ParseDocumentLine("{", 3).status().message(), "line 3: not valid JSON");
  EXPECT_THAT(ParseDocumentLine("[1]", 3).status().message(), HasSubstr("JSON object"));
  EXPECT_THAT(ParseDocumentLine(R"({"attributes": {"spam": true}})", 4).status().message(),
              HasSubstr("line 4: attribute \"spam\": must be a number or a string, not boolean"));
  EXPECT_THAT(
      ParseDocumentLine(R"({"attributes": {"n": 18446744073709551615}})", 1).status().message(),
      HasSubstr("int64"));
  EXPECT_THAT(ParseDocumentLine(R"({"body": "x"})", 1).status().message(),
              HasSubstr("unknown key \"body\""));
}

TEST(MatchInputTest, ReadsLinesSkippingBlankOnes) {
  std::istringstream in("{\"id\": \"a\"}\n\n  \n{\"id\": \"b\"}\r\n");
  absl::StatusOr<std::vector<tandem::v1::Document>> documents = ReadDocuments(in);
  ASSERT_TRUE(documents.ok()) << documents.status();
  ASSERT_EQ(documents->size(), 2u);
  EXPECT_EQ((*documents)[1].id(), "b");
}

}  // namespace
}  // namespace tandem::cli
