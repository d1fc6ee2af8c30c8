// Well-formed UTF-8 at every edge of table 3-7 of the Unicode Standard.
#include "base/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace tandem::base {
namespace {

TEST(Utf8Test, AcceptsEachRangesBounds) {
  for (const char* text :
       {"", "plain ASCII", "\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF", "\xEE\x80\x80",
        "\xF0\x90\x80\x80", "\xF4\x8F\xBF\xBF", "caf\xC3\xA9"}) {
    EXPECT_TRUE(IsValidUtf8(text)) << text;
  }
}

TEST(Utf8Test, RefusesOverlongFormsSurrogatesAndPastTheLastCodePoint) {
  for (const char* text :
       {"\xC0\xAF", "\xC1\xBF", "\xE0\x9F\xBF", "\xED\xA0\x80", "\xF0\x8F\xBF\xBF",
        "\xF4\x90\x80\x80", "\xF5\x80\x80\x80", "\xFF", "\x80", "caf\xE9"}) {
    EXPECT_FALSE(IsValidUtf8(text)) << text;
  }
}

TEST(Utf8Test, SequenceLengthAtAPosition) {
  const std::string text = "a\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80\xE2\x82";
  EXPECT_EQ(Utf8SequenceLength(text, 0), 1u);
  EXPECT_EQ(Utf8SequenceLength(text, 1), 2u);
  EXPECT_EQ(Utf8SequenceLength(text, 2), 0u);  // a continuation byte starts nothing
  EXPECT_EQ(Utf8SequenceLength(text, 3), 3u);
  EXPECT_EQ(Utf8SequenceLength(text, 6), 4u);
  EXPECT_EQ(Utf8SequenceLength(text, 10), 0u);  // cut short by the end
}

}  // namespace
}  // namespace tandem::base
