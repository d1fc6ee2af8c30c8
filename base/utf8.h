// File: utf8.h
//
// Well-formed UTF-8 as RFC 3629 and the Unicode Standard (section 3.9, table 3-7) define it: no
// overlong forms, no surrogates, nothing past U+10FFFF. The query file reader refuses what is not;
// the document readers keep the well-formed sequences and read every other byte as windows-1252.
//
//   base::IsValidUtf8("caf\xc3\xa9");           // true
//   base::Utf8SequenceLength("caf\xe9", 3);     // 0: 0xE9 starts no sequence here
#pragma once

#include <cstddef>

#include "absl/strings/string_view.h"

namespace tandem::base {

// Length (1 to 4) of the well-formed UTF-8 sequence that starts at in[i], or 0 when none does.
size_t Utf8SequenceLength(absl::string_view in, size_t i);

// True when all of `in` is well-formed UTF-8.
bool IsValidUtf8(absl::string_view in);

}  // namespace tandem::base
