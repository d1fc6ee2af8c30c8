// Tests of the quoted-printable and base64 decoders on well-formed input and on the damaged input
// mail carries (bad escapes, stray characters, missing or early padding).
#include "index_builder/transfer_encoding.h"

#include <string>

#include "gtest/gtest.h"

namespace tandem::index_builder {
namespace {

TEST(TransferEncodingTest, Decodes) {
  EXPECT_EQ(DecodeQuotedPrintable("a=3Db=\r\nc= \nd=zz=4"), "a=bcd=zz=4");
  EXPECT_EQ(DecodeBase64("SGVs\r\nbG8=\nignored"), "Hello");
  EXPECT_EQ(DecodeBase64("-_-_"), "\xfb\xff\xbf");
}

TEST(TransferEncodingTest, QuotedPrintableKeepsBadEscapes) {
  EXPECT_EQ(DecodeQuotedPrintable(""), "");
  EXPECT_EQ(DecodeQuotedPrintable("caf=C3=A9 =3d =3D"), "caf\u00e9 = =");
  EXPECT_EQ(DecodeQuotedPrintable("=G1 =4 =\t x"), "=G1 =4 =\t x");
  EXPECT_EQ(DecodeQuotedPrintable("a=4"), "a=4");   // escape cut short by the end
  EXPECT_EQ(DecodeQuotedPrintable("end="), "end");  // soft break at the very end
  EXPECT_EQ(DecodeQuotedPrintable("a= \t\r"), "a");
  EXPECT_EQ(DecodeQuotedPrintable("a=\nb=\r\nc\r\nd"), "abc\r\nd");  // hard breaks stay
  EXPECT_EQ(DecodeQuotedPrintable("=00=FF"), std::string("\0\xff", 2));
}

TEST(TransferEncodingTest, Base64SkipsWhatIsNotInTheAlphabet) {
  EXPECT_EQ(DecodeBase64(""), "");
  EXPECT_EQ(DecodeBase64("!!! ***"), "");
  EXPECT_EQ(DecodeBase64("SGVsbG8"), "Hello");  // no padding
  EXPECT_EQ(DecodeBase64(" S G V s\tb G 8 ="), "Hello");
  EXPECT_EQ(DecodeBase64("SG.Vs*bG8!"), "Hello");
  EXPECT_EQ(DecodeBase64("S"), "");      // six bits make no byte
  EXPECT_EQ(DecodeBase64("=SGVs"), "");  // decoding stops at the first "="
  EXPECT_EQ(DecodeBase64("SGk=SGk="), "Hi");
  EXPECT_EQ(DecodeBase64("+/+/"), "\xfb\xff\xbf");  // standard and URL-safe alphabets agree
}

}  // namespace
}  // namespace tandem::index_builder
