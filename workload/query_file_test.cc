#include "workload/query_file.h"

#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::workload {
namespace {

using ::testing::ElementsAre;
using ::testing::Field;

MATCHER_P2(Record, id, text, "") { return arg.id == id && arg.text == text; }

std::vector<QueryRecord> Parse(absl::string_view contents,
                               QueryFileFormat format = QueryFileFormat::kAuto) {
  absl::StatusOr<std::vector<QueryRecord>> records = ParseQueries(contents, format);
  EXPECT_TRUE(records.ok()) << records.status();
  return records.ok() ? *records : std::vector<QueryRecord>{};
}

TEST(QueryFileTest, DetectsColon) {
  EXPECT_THAT(Parse("301:international organized crime\n302: poliomyelitis and post-polio \n"),
              ElementsAre(Record("301", "international organized crime"),
                          Record("302", "poliomyelitis and post-polio")));
}

TEST(QueryFileTest, DetectsColonPriority) {
  EXPECT_THAT(Parse("20001:1:obama family tree\n20002:2:french lick resort and casino\n"),
              ElementsAre(Record("20001", "obama family tree"),
                          Record("20002", "french lick resort and casino")));
}

TEST(QueryFileTest, ColonPriorityKeepsColonsInQuery) {
  EXPECT_THAT(Parse("7:1:ratio 3:2\n"), ElementsAre(Record("7", "ratio 3:2")));
}

TEST(QueryFileTest, DetectsTsv) {
  EXPECT_THAT(
      Parse("1048585\twhat is paula deen's brother\r\n2\tlatin: lingua\r\n"),
      ElementsAre(Record("1048585", "what is paula deen's brother"), Record("2", "latin: lingua")));
}

TEST(QueryFileTest, TsvAllowsEmptyQuery) {
  EXPECT_THAT(Parse("1\tfoo\n2\t\n", QueryFileFormat::kTsv),
              ElementsAre(Record("1", "foo"), Record("2", "")));
}

TEST(QueryFileTest, PlainWhenAnyLineIsNotColon) {
  // One line without an id makes the whole file plain: ids are line numbers, colons stay in the
  // text.
  EXPECT_THAT(
      Parse("301:international crime\n\nwhat is 3:2 in percent\n"),
      ElementsAre(Record("1", "301:international crime"), Record("3", "what is 3:2 in percent")));
}

TEST(QueryFileTest, SkipsBlankLinesAndBom) {
  EXPECT_THAT(Parse("\xEF\xBB\xBF  \nfirst query\n\t\n  second query  \n"),
              ElementsAre(Record("2", "first query"), Record("4", "second query")));
}

TEST(QueryFileTest, Latin1BecomesUtf8) {
  // "café" and "naïve" in ISO-8859-1; the UTF-8 line stays as it is.
  EXPECT_THAT(Parse("1:caf\xE9\n2:na\xEFve\n3:caf\xC3\xA9\n"),
              ElementsAre(Record("1", "caf\xC3\xA9"), Record("2", "na\xC3\xAFve"),
                          Record("3", "caf\xC3\xA9")));
}

TEST(QueryFileTest, ToUtf8RejectsMalformedUtf8) {
  EXPECT_EQ(ToUtf8("abc"), "abc");
  EXPECT_EQ(ToUtf8("\xC3\xA9"), "\xC3\xA9");                      // é, valid
  EXPECT_EQ(ToUtf8("\xC0\xAF"), "\xC3\x80\xC2\xAF");              // overlong '/': Latin-1
  EXPECT_EQ(ToUtf8("\xED\xA0\x80"), "\xC3\xAD\xC2\xA0\xC2\x80");  // surrogate: Latin-1
  EXPECT_EQ(ToUtf8("\xE2\x82"), "\xC3\xA2\xC2\x82");              // truncated: Latin-1
  EXPECT_EQ(ToUtf8("\xF0\x9F\x94\x8D"), "\xF0\x9F\x94\x8D");      // 4-byte, valid
}

TEST(QueryFileTest, ExplicitFormatRejectsMisfit) {
  absl::StatusOr<std::vector<QueryRecord>> records =
      ParseQueries("1:a\nno id here\n", QueryFileFormat::kColon, "q.txt");
  ASSERT_FALSE(records.ok());
  EXPECT_EQ(records.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(records.status().message(), ::testing::HasSubstr("q.txt:2"));
}

TEST(QueryFileTest, EmptyInput) {
  EXPECT_TRUE(Parse("").empty());
  EXPECT_TRUE(Parse("\n \n").empty());
}

TEST(QueryFileTest, FormatNamesRoundTrip) {
  for (QueryFileFormat f :
       {QueryFileFormat::kAuto, QueryFileFormat::kColon, QueryFileFormat::kColonPriority,
        QueryFileFormat::kTsv, QueryFileFormat::kPlain}) {
    absl::StatusOr<QueryFileFormat> parsed = ParseQueryFileFormat(QueryFileFormatName(f));
    ASSERT_TRUE(parsed.ok());
    EXPECT_EQ(*parsed, f);
  }
  EXPECT_FALSE(ParseQueryFileFormat("csv").ok());
}

TEST(QueryFileTest, LoadsFileAndReportsMissing) {
  std::string path = ::testing::TempDir() + "/query_file_test_XXXXXX";
  const int fd = ::mkstemp(path.data());
  ASSERT_GE(fd, 0);
  ::close(fd);
  {
    std::ofstream out(path, std::ios::binary);
    out << "q1\tblack bear\nq2\tgrizzly\n";
  }
  absl::StatusOr<std::vector<QueryRecord>> records = LoadQueryFile(path);
  ::unlink(path.c_str());
  ASSERT_TRUE(records.ok()) << records.status();
  EXPECT_THAT(*records, ElementsAre(Field(&QueryRecord::id, "q1"), Field(&QueryRecord::id, "q2")));

  absl::StatusOr<std::vector<QueryRecord>> missing = LoadQueryFile(path);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace tandem::workload

namespace tandem::workload {
namespace {

TEST(QueryFileMixedTest, MillionQueryPrioritiesAreRemovedInAutoMode) {
  auto records = ParseQueries("1:obama family tree\n20001:1:cheap flights\n20002:4:solar panels\n",
                              QueryFileFormat::kAuto);
  ASSERT_TRUE(records.ok()) << records.status();
  ASSERT_EQ(records->size(), 3u);
  EXPECT_EQ((*records)[0].text, "obama family tree");
  EXPECT_EQ((*records)[1].id, "20001");
  EXPECT_EQ((*records)[1].text, "cheap flights");
  // An explicit kColon keeps the text as written.
  auto colon = ParseQueries("20001:1:cheap flights\n", QueryFileFormat::kColon);
  ASSERT_TRUE(colon.ok());
  EXPECT_EQ((*colon)[0].text, "1:cheap flights");
}

}  // namespace
}  // namespace tandem::workload
