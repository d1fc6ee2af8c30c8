// Tests of DecodeEntities: numeric and named references, and every reference it must leave as
// written (unknown names, no ";", too many digits, an empty number) or turn into U+FFFD or a space.
#include "index_builder/html_entities.h"

#include "gtest/gtest.h"

namespace tandem::index_builder {
namespace {

TEST(HtmlEntitiesTest, DecodesNumericAndNamedReferences) {
  EXPECT_EQ(
      DecodeEntities("&lt;a&gt; &amp; &quot;b&quot; &#233;&#xE9;&#XE9; &eacute;&Delta;&mu;&nbsp;."),
      "<a> & \"b\" \u00e9\u00e9\u00e9 \u00e9\u0394\u03bc .");
  EXPECT_EQ(DecodeEntities("AT&T; &bogus; & &#; &#x110000; &#0;"),
            "AT&T; &bogus; & &#; \ufffd \ufffd");
  EXPECT_EQ(DecodeEntities("&#2;text&#3;&#150;&hyph;"), " text \u2013-");
}

TEST(HtmlEntitiesTest, NamesAreCaseSensitiveExceptCapitalisedGreek) {
  EXPECT_EQ(DecodeEntities("&Omega;&omega;&Eacute;&eacute;"), "\u03a9\u03c9\u00c9\u00e9");
  EXPECT_EQ(DecodeEntities("&AMP; &OMEGA; &Sigmaf;"), "&AMP; &OMEGA; &Sigmaf;");
  EXPECT_EQ(DecodeEntities("&sigmaf;&mdash;&euro;&blank;&cir;"), "\u03c2\u2014\u20ac \u25cb");
}

TEST(HtmlEntitiesTest, KeepsWhatIsNoReferenceAsWritten) {
  EXPECT_EQ(DecodeEntities(""), "");
  EXPECT_EQ(DecodeEntities("&"), "&");
  EXPECT_EQ(DecodeEntities("&&amp;"), "&&");
  EXPECT_EQ(DecodeEntities("fish &amp chips"), "fish &amp chips");  // no ";"
  EXPECT_EQ(DecodeEntities("&amp"), "&amp");                        // ends before the ";"
  EXPECT_EQ(DecodeEntities("&#65"), "&#65");
  EXPECT_EQ(DecodeEntities("&#x;&#xG1;&#-1;&# 65;"), "&#x;&#xG1;&#-1;&# 65;");
  EXPECT_EQ(DecodeEntities("&#123456789;"), "&#123456789;");  // more than 8 digits
  EXPECT_EQ(DecodeEntities("&#x000000041;"), "&#x000000041;");
  EXPECT_EQ(DecodeEntities("&abcdefghijk;"), "&abcdefghijk;");  // longer than any name
  EXPECT_EQ(DecodeEntities("&a-b; & ;"), "&a-b; & ;");
}

TEST(HtmlEntitiesTest, ReferencesToNoCharacterOrToControls) {
  EXPECT_EQ(DecodeEntities("&#xD800;&#xDFFF;&#99999999;"), "\ufffd\ufffd\ufffd");
  EXPECT_EQ(DecodeEntities("&#x00000041;&#00000065;"), "AA");  // 8 digits at most, zeros included
  EXPECT_EQ(DecodeEntities("a&#1;b&#31;c&#127;d"), "a b c d");
  EXPECT_EQ(DecodeEntities("a&#9;b&#10;c&#13;d"), "a\tb\nc\rd");
  // &#128;..&#159; are read as windows-1252, as browsers do.
  EXPECT_EQ(DecodeEntities("&#128;&#x93;&#x94;&#x81;"), "\u20ac\u201c\u201d\u0081");
}

}  // namespace
}  // namespace tandem::index_builder
