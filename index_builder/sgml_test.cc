// Tests of ElementContents, FirstElementContent and AttributeValue, including the unhappy paths:
// unclosed and cut-short elements, longer names sharing a prefix, and attributes that are missing,
// unterminated or only a suffix of another name.
#include "index_builder/sgml.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tandem::index_builder {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

TEST(SgmlTest, ElementsAndAttributes) {
  EXPECT_THAT(ElementContents("<DOCNO>1</DOCNO><DOC>a</DOC><DOC x=1>b</DOC><DOC>open", "DOC"),
              ElementsAre("a", "b"));
  EXPECT_EQ(FirstElementContent("<A>1</A>", "B"), "");
  EXPECT_EQ(AttributeValue("<REUTERS OLDID=\"5\" NEWID=\"7\"", "NEWID"), "7");
  EXPECT_EQ(AttributeValue("<doc id='3' url=x>", "url"), "x");
  EXPECT_EQ(AttributeValue("<REUTERS OLDID=\"5\"", "ID"), "");
}

TEST(SgmlTest, ElementsCutShortOrMismatchedAreNotFound) {
  EXPECT_THAT(ElementContents("", "DOC"), IsEmpty());
  EXPECT_THAT(ElementContents("<DOC", "DOC"), IsEmpty());          // ends after the name
  EXPECT_THAT(ElementContents("<DOC x=1", "DOC"), IsEmpty());      // open tag never closed
  EXPECT_THAT(ElementContents("<DOC>a</DOC", "DOC"), IsEmpty());   // close tag cut short
  EXPECT_THAT(ElementContents("<doc>a</doc>", "DOC"), IsEmpty());  // names are case-sensitive
  EXPECT_THAT(ElementContents("<DOC>a</DOCNO>b</DOC>", "DOC"), ElementsAre("a</DOCNO>b"));
  EXPECT_THAT(ElementContents("<DOC>a<DOC>b</DOC>c</DOC>", "DOC"),
              ElementsAre("a<DOC>b"));  // no nesting
  EXPECT_THAT(ElementContents("<D></D><D>\n</D>", "D"), ElementsAre("", "\n"));
  EXPECT_EQ(FirstElementContent("<T>1</T><T>2</T>", "T"), "1");
}

TEST(SgmlTest, AttributesMissingOrMalformedAreEmpty) {
  EXPECT_EQ(AttributeValue("", "id"), "");
  EXPECT_EQ(AttributeValue("<doc xid=1 id=2>", "id"), "2");  // a suffix of another name is skipped
  EXPECT_EQ(AttributeValue("<doc xid=1>", "id"), "");
  EXPECT_EQ(AttributeValue("id=1", "id"), "");  // a name follows white space
  EXPECT_EQ(AttributeValue("<doc id>", "id"), "");
  EXPECT_EQ(AttributeValue("<doc id title=t>", "id"), "");
  EXPECT_EQ(AttributeValue("<doc id=\"3>", "id"), "");  // unterminated quote
  EXPECT_EQ(AttributeValue("<doc id=", "id"), "");
  EXPECT_EQ(AttributeValue("<doc id=>", "id"), "");
  EXPECT_EQ(AttributeValue("<doc id = \"4\" >", "id"), "4");
  EXPECT_EQ(AttributeValue("<doc id=\"a 'b'\">", "id"), "a 'b'");
  EXPECT_EQ(AttributeValue("<doc ID=1>", "id"), "");  // names are case-sensitive
  EXPECT_EQ(AttributeValue("<doc title=\"id=5\" id=6>", "id"), "6");
}

}  // namespace
}  // namespace tandem::index_builder
