// File: utf8.h
//
// Every Document::text and stored field is valid UTF-8, whatever bytes the collection on disk holds
// (Reuters-21578 has stray Latin-1 bytes, e-mail bodies come in any charset): each reader passes
// what it extracts through SanitizeUtf8, which never fails. DecodeEntities (html_entities.h) writes
// the characters that references name with AppendUtf8.
//
//   std::string text = SanitizeUtf8("caf\xe9");  // "café"
//   AppendUtf8(0x2014, &text);                  // "café—"
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace tandem::index_builder {

// U+FFFD, written for what names no character: a surrogate, a value past U+10FFFF, a NUL reference.
inline constexpr char32_t kReplacementCharacter = 0xFFFD;

// Returns `in` as valid UTF-8. Well-formed UTF-8 sequences are kept; every byte that does not start
// one is read as windows-1252 (the WHATWG Encoding Standard's decoder for "latin1"/"iso-8859-1"),
// which is what stray high bytes in old newswire and e-mail almost always are. C0 control
// characters other than tab, newline and carriage return, and DEL, become spaces: they separate
// words at most, and a NUL inside Document::text would surprise any C API downstream.
std::string SanitizeUtf8(absl::string_view in);

// Appends the UTF-8 encoding of `code_point` to *out; a surrogate or a value past U+10FFFF is
// written as U+FFFD.
void AppendUtf8(char32_t code_point, std::string* out);

// The code point of `byte` in windows-1252. The five bytes of 0x80..0x9F that it leaves undefined
// map to the C1 code point of the same value, as the WHATWG decoder does.
char32_t DecodeWindows1252(unsigned char byte);

// True for the C0 control characters other than tab, newline and carriage return, and for DEL:
// code points that never reach Document::text (SanitizeUtf8 and DecodeEntities write a space).
inline bool IsNonTextControl(char32_t c) {
  return (c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F;
}

}  // namespace tandem::index_builder
