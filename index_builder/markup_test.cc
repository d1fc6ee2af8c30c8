// Tests of StripTags and HtmlToText: what each removed tag leaves, the two tag policies, and markup
// that is cut short or malformed (unclosed tags, comments and scripts, "<" that opens no tag).
#include "index_builder/markup.h"

#include "gtest/gtest.h"

namespace tandem::index_builder {
namespace {

TEST(MarkupTest, StripTags) {
  EXPECT_EQ(StripTags("<p>one</p><p>two</p>", TagPolicy::kAnyTag), "one\ntwo");
  EXPECT_EQ(StripTags("one<br/>two <b>H</b>ello", TagPolicy::kAnyTag), "one\ntwo Hello");
  EXPECT_EQ(StripTags("a<!-- <b>c</b> -->b<!DOCTYPE x><SCRIPT>x<y</script>c", TagPolicy::kAnyTag),
            "a b c");
  EXPECT_EQ(StripTags("a < b and c<d", TagPolicy::kAnyTag), "a < b and c<d");
  EXPECT_EQ(StripTags("<DATELINE>X</DATELINE>Y", TagPolicy::kAnyTag), "X Y");
  EXPECT_EQ(StripTags("x<y and y>z <m> <br>a<ref name=\"r\">b</ref>", TagPolicy::kKnownHtmlTags),
            "x<y and y>z <m> a b");
  EXPECT_EQ(HtmlToText("  <p>caf\xe9 &amp; bar</p>  "), "caf\u00e9 & bar");
}

TEST(MarkupTest, SeparatorsOnlyBetweenWords) {
  EXPECT_EQ(StripTags("<p><br><div>a</div></p>", TagPolicy::kAnyTag), "a");
  EXPECT_EQ(StripTags("a <br> b", TagPolicy::kAnyTag), "a  b");
  EXPECT_EQ(StripTags("a<x><br><y>b", TagPolicy::kAnyTag), "a\nb");  // a newline wins over a space
  EXPECT_EQ(StripTags("a<br><x>b", TagPolicy::kAnyTag), "a\nb");
  EXPECT_EQ(StripTags("<I>H</I><SPAN class=x>i</SPAN>", TagPolicy::kAnyTag), "Hi");
}

TEST(MarkupTest, MarkupCutShortIsKeptOrDropsTheRest) {
  EXPECT_EQ(StripTags("", TagPolicy::kAnyTag), "");
  EXPECT_EQ(StripTags("a <b", TagPolicy::kAnyTag), "a <b");  // tag never closed
  EXPECT_EQ(StripTags("a<", TagPolicy::kAnyTag), "a<");
  EXPECT_EQ(StripTags("a</>b <1> <-x>", TagPolicy::kAnyTag), "a</>b <1> <-x>");  // no tag name
  EXPECT_EQ(StripTags("a<!x", TagPolicy::kAnyTag), "a<!x");  // declaration never closed
  EXPECT_EQ(StripTags("a<!-- never closed <b>x</b>", TagPolicy::kAnyTag), "a");
  EXPECT_EQ(StripTags("a<script>var x = 1;", TagPolicy::kAnyTag), "a");  // script never closed
  EXPECT_EQ(StripTags("a<style>p {}</STYLE b", TagPolicy::kAnyTag), "a");
  EXPECT_EQ(StripTags("a<script/>b", TagPolicy::kAnyTag), "a b");  // self-closed: no contents
}

TEST(MarkupTest, KnownHtmlTagsOnlyAndOnOneLine) {
  EXPECT_EQ(StripTags("a <1%<br>b", TagPolicy::kKnownHtmlTags), "a <1%\nb");
  EXPECT_EQ(StripTags("<foo>x</foo> <DOC>", TagPolicy::kKnownHtmlTags), "<foo>x</foo> <DOC>");
  EXPECT_EQ(StripTags("a<br\n>b", TagPolicy::kKnownHtmlTags), "a<br\n>b");
  EXPECT_EQ(StripTags("a<br\n>b", TagPolicy::kAnyTag), "a\nb");
  EXPECT_EQ(StripTags("a<!-- c -->b", TagPolicy::kKnownHtmlTags), "a<!-- c -->b");
  EXPECT_EQ(StripTags("<poem>x</poem><ref>y</ref>", TagPolicy::kKnownHtmlTags), "x y");
}

TEST(MarkupTest, HtmlToTextCleansBytesAndTrims) {
  EXPECT_EQ(HtmlToText(""), "");
  EXPECT_EQ(HtmlToText(" \n<p> </p>\t"), "");
  EXPECT_EQ(HtmlToText("<b>\x93quoted\x94</b>\x01 &lt;x&gt;"), "\u201cquoted\u201d  <x>");
  EXPECT_EQ(HtmlToText("&lt;b&gt;kept&lt;/b&gt;"), "<b>kept</b>");  // entities decode after tags go
}

}  // namespace
}  // namespace tandem::index_builder
