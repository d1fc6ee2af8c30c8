// File: transfer_encoding.h
//
// Decoders of the two MIME Content-Transfer-Encodings that carry text (RFC 2045 section 6): the
// e-mail reader applies them to a part's body before SanitizeUtf8. Both are lenient, as mail
// readers are: damaged input decodes as far as it can and never fails.
//
//   std::string body = DecodeQuotedPrintable("caf=C3=A9 =\r\nmenu");  // "café menu"
//   std::string text = DecodeBase64("SGVs\r\nbG8=");                  // "Hello"
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

// Quoted-printable: "=XX" (hex digits of either case) is the byte XX; a "=" that starts no escape
// is kept as written; "=" line breaks ("soft" breaks) are dropped, lines ending in LF or CRLF.
std::string DecodeQuotedPrintable(absl::string_view in);

// Base64, standard or URL-safe alphabet (RFC 4648): line breaks and any other character outside the
// alphabet are skipped, decoding stops at "=" padding, and bits left over at the end are dropped.
std::string DecodeBase64(absl::string_view in);

}  // namespace tandem::index_builder
