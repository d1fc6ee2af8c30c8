// Tests of AppendParagraph and CollapseWhitespace, empty parts and all-blank text included.
#include "index_builder/whitespace.h"

#include <string>

#include "gtest/gtest.h"

namespace tandem::index_builder {
namespace {

TEST(WhitespaceTest, AppendParagraphJoinsNonEmptyPartsWithANewline) {
  std::string text;
  AppendParagraph("", &text);
  EXPECT_EQ(text, "");
  AppendParagraph("title", &text);
  EXPECT_EQ(text, "title");
  AppendParagraph("", &text);
  EXPECT_EQ(text, "title");
  AppendParagraph("body", &text);
  EXPECT_EQ(text, "title\nbody");
  AppendParagraph(" ", &text);  // only empty parts are skipped
  EXPECT_EQ(text, "title\nbody\n ");
}

TEST(WhitespaceTest, CollapseWhitespace) {
  EXPECT_EQ(CollapseWhitespace("  a \t b\n"), "a b");
  EXPECT_EQ(CollapseWhitespace(""), "");
  EXPECT_EQ(CollapseWhitespace(" \t\r\n\v\f "), "");
  EXPECT_EQ(CollapseWhitespace("one"), "one");
  EXPECT_EQ(CollapseWhitespace("a\r\nb\n\nc"), "a b c");
  EXPECT_EQ(CollapseWhitespace("caf\u00e9\u00a0menu"), "caf\u00e9\u00a0menu");  // ASCII space only
}

}  // namespace
}  // namespace tandem::index_builder
