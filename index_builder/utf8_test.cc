// Tests of SanitizeUtf8 and AppendUtf8: well-formed UTF-8 kept, every malformed sequence (overlong,
// surrogate, past U+10FFFF, truncated, stray continuation byte) read byte by byte as windows-1252,
// control characters turned into spaces, and every byte value giving clean UTF-8.
#include "index_builder/utf8.h"

#include <string>

#include "gtest/gtest.h"
#include "index_builder/utf8_test_util.h"

namespace tandem::index_builder {
namespace {

std::string Utf8(char32_t code_point) {
  std::string out;
  AppendUtf8(code_point, &out);
  return out;
}

TEST(Utf8Test, SanitizeUtf8KeepsUtf8AndReadsOtherBytesAsWindows1252) {
  EXPECT_EQ(SanitizeUtf8("plain \u00e9\u4e2d\U0001F600"), "plain \u00e9\u4e2d\U0001F600");
  EXPECT_EQ(SanitizeUtf8("caf\xe9"), "caf\u00e9");
  EXPECT_EQ(SanitizeUtf8("\x93quoted\x94 \x80"), "\u201cquoted\u201d \u20ac");
  EXPECT_EQ(SanitizeUtf8("\xc0\x80"), "\u00c0\u20ac");            // overlong NUL
  EXPECT_EQ(SanitizeUtf8("\xed\xa0\x80"), "\u00ed\u00a0\u20ac");  // UTF-16 surrogate
  EXPECT_EQ(SanitizeUtf8("end\xe2\x82"), "end\u00e2\u201a");      // truncated sequence
  EXPECT_EQ(SanitizeUtf8(std::string("a\0b\x01\x7f\tc\r\n", 9)), "a b  \tc\r\n");
  for (int byte = 0; byte < 256; ++byte) {
    EXPECT_TRUE(IsCleanUtf8(SanitizeUtf8(std::string(3, static_cast<char>(byte))))) << byte;
  }
}

TEST(Utf8Test, SanitizeUtf8ReadsEachByteOfAMalformedSequenceOnItsOwn) {
  EXPECT_EQ(SanitizeUtf8(""), "");
  EXPECT_EQ(SanitizeUtf8("\x80"
                         "a"),
            "\u20ac"
            "a");                                                 // continuation byte alone
  EXPECT_EQ(SanitizeUtf8("\xe0\x80\x80"), "\u00e0\u20ac\u20ac");  // overlong three-byte form
  EXPECT_EQ(SanitizeUtf8("\xf0\x8f\xbf\xbf"), "\u00f0\u008f\u00bf\u00bf");  // overlong four-byte
  EXPECT_EQ(SanitizeUtf8("\xf4\x90\x80\x80"), "\u00f4\u0090\u20ac\u20ac");  // past U+10FFFF
  EXPECT_EQ(SanitizeUtf8("\xf5\xff"), "\u00f5\u00ff");                      // never a lead byte
  EXPECT_EQ(SanitizeUtf8("\xc3"
                         "a"),
            "\u00c3"
            "a");                                                 // lead byte, no continuation
  EXPECT_EQ(SanitizeUtf8("\xf0\x9f\x98"), "\u00f0\u0178\u02dc");  // four-byte form cut short
  // The bytes windows-1252 leaves undefined become the C1 code point of the same value.
  EXPECT_EQ(SanitizeUtf8("\x81\x8d\x8f\x90\x9d"), "\u0081\u008d\u008f\u0090\u009d");
  // The last code points of each length are kept.
  EXPECT_EQ(SanitizeUtf8("\u07ff\uffff\U0010FFFF"), "\u07ff\uffff\U0010FFFF");
}

TEST(Utf8Test, AppendUtf8EncodesEveryLengthAndReplacesWhatIsNoCharacter) {
  EXPECT_EQ(Utf8(0x41), "A");
  EXPECT_EQ(Utf8(0x7F), "\x7f");
  EXPECT_EQ(Utf8(0x80), "\u0080");
  EXPECT_EQ(Utf8(0x7FF), "\u07ff");
  EXPECT_EQ(Utf8(0x800), "\u0800");
  EXPECT_EQ(Utf8(0xFFFF), "\uffff");
  EXPECT_EQ(Utf8(0x10000), "\U00010000");
  EXPECT_EQ(Utf8(0x10FFFF), "\U0010FFFF");
  EXPECT_EQ(Utf8(0xD800), "\ufffd");  // surrogates
  EXPECT_EQ(Utf8(0xDFFF), "\ufffd");
  EXPECT_EQ(Utf8(0x110000), "\ufffd");
  EXPECT_EQ(Utf8(0xFFFFFFFF), "\ufffd");
  std::string text = "caf";
  AppendUtf8(0xE9, &text);
  EXPECT_EQ(text, "caf\u00e9");
}

TEST(Utf8Test, Windows1252AndControls) {
  EXPECT_EQ(DecodeWindows1252(0x41), U'A');
  EXPECT_EQ(DecodeWindows1252(0x80), U'\u20ac');
  EXPECT_EQ(DecodeWindows1252(0x9F), U'\u0178');
  EXPECT_EQ(DecodeWindows1252(0xA0), U'\u00a0');
  EXPECT_TRUE(IsNonTextControl(0));
  EXPECT_TRUE(IsNonTextControl(0x1F));
  EXPECT_TRUE(IsNonTextControl(0x7F));
  EXPECT_FALSE(IsNonTextControl('\t'));
  EXPECT_FALSE(IsNonTextControl('\n'));
  EXPECT_FALSE(IsNonTextControl('\r'));
  EXPECT_FALSE(IsNonTextControl(' '));
  EXPECT_FALSE(IsNonTextControl(0x85));  // C1 controls are kept
}

}  // namespace
}  // namespace tandem::index_builder
