#include "base/utf8.h"

namespace tandem::base {
namespace {

// A row of table 3-7: the lead bytes [lead_low, lead_high] start sequences of `length` bytes whose
// second byte lies in [second_low, second_high]; later bytes are 0x80..0xBF.
struct SequenceRule {
  unsigned char lead_low, lead_high;
  size_t length;
  unsigned char second_low, second_high;
};

constexpr SequenceRule kSequenceRules[] = {
    {0xC2, 0xDF, 2, 0x80, 0xBF},  // U+0080..U+07FF
    {0xE0, 0xE0, 3, 0xA0, 0xBF},  // U+0800..U+0FFF, no overlong forms
    {0xE1, 0xEC, 3, 0x80, 0xBF},  // U+1000..U+CFFF
    {0xED, 0xED, 3, 0x80, 0x9F},  // U+D000..U+D7FF, no surrogates
    {0xEE, 0xEF, 3, 0x80, 0xBF},  // U+E000..U+FFFF
    {0xF0, 0xF0, 4, 0x90, 0xBF},  // U+10000..U+3FFFF, no overlong forms
    {0xF1, 0xF3, 4, 0x80, 0xBF},  // U+40000..U+FFFFF
    {0xF4, 0xF4, 4, 0x80, 0x8F},  // U+100000..U+10FFFF, nothing past it
};

}  // namespace

size_t Utf8SequenceLength(absl::string_view in, size_t i) {
  const auto at = [&in](size_t j) { return static_cast<unsigned char>(in[j]); };
  const unsigned char lead = at(i);
  if (lead < 0x80) return 1;
  for (const SequenceRule& rule : kSequenceRules) {
    if (lead < rule.lead_low || lead > rule.lead_high) continue;
    if (i + rule.length > in.size()) return 0;
    if (at(i + 1) < rule.second_low || at(i + 1) > rule.second_high) return 0;
    for (size_t k = 2; k < rule.length; ++k) {
      if (at(i + k) < 0x80 || at(i + k) > 0xBF) return 0;
    }
    return rule.length;
  }
  return 0;
}

bool IsValidUtf8(absl::string_view in) {
  for (size_t i = 0; i < in.size();) {
    const size_t length = Utf8SequenceLength(in, i);
    if (length == 0) return false;
    i += length;
  }
  return true;
}

}  // namespace tandem::base
