// File: utf8_test_util.h
//
// The check that the reader tests apply to every Document::text and stored field, written apart
// from SanitizeUtf8's own code so that a test of one does not share the other's mistakes.
//
//   EXPECT_TRUE(IsCleanUtf8(doc.text)) << doc.location;
#pragma once

#include <string_view>

namespace tandem::index_builder {

// RFC 3629 well-formedness (no overlong forms, no surrogates, nothing past U+10FFFF) and no C0
// controls other than tab, newline and carriage return, and no DEL.
inline bool IsCleanUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F) return false;
      ++i;
      continue;
    }
    int n;
    char32_t cp;
    if ((c & 0xE0) == 0xC0) {
      n = 1, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      n = 2, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (int k = 1; k <= n; ++k) {
      if (i + k >= s.size() || (static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
    }
    const char32_t min = n == 1 ? 0x80 : n == 2 ? 0x800 : 0x10000;
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += n + 1;
  }
  return true;
}

}  // namespace tandem::index_builder
