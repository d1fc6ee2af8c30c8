#include "index_builder/transfer_encoding.h"

#include <cstdint>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace tandem::index_builder {

std::string DecodeQuotedPrintable(absl::string_view in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const char c = in[i];
    if (c != '=') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 2 < in.size() && absl::ascii_isxdigit(in[i + 1]) && absl::ascii_isxdigit(in[i + 2])) {
      const auto nibble = [](char h) {
        return absl::ascii_isdigit(h) ? h - '0' : absl::ascii_tolower(h) - 'a' + 10;
      };
      out.push_back(static_cast<char>(nibble(in[i + 1]) * 16 + nibble(in[i + 2])));
      i += 3;
      continue;
    }
    // A soft line break: "=" then optional trailing blanks, then the end of the line.
    size_t j = i + 1;
    while (j < in.size() && (in[j] == ' ' || in[j] == '\t' || in[j] == '\r')) ++j;
    if (j == in.size() || in[j] == '\n') {
      i = j == in.size() ? j : j + 1;
      continue;
    }
    out.push_back('=');
    ++i;
  }
  return out;
}

std::string DecodeBase64(absl::string_view in) {
  std::string out;
  out.reserve(in.size() / 4 * 3);
  uint32_t bits = 0;
  int bit_count = 0;
  for (const char c : in) {
    int value;
    if (c >= 'A' && c <= 'Z') {
      value = c - 'A';
    } else if (c >= 'a' && c <= 'z') {
      value = c - 'a' + 26;
    } else if (c >= '0' && c <= '9') {
      value = c - '0' + 52;
    } else if (c == '+' || c == '-') {  // "-" and "_": the URL-safe alphabet of RFC 4648
      value = 62;
    } else if (c == '/' || c == '_') {
      value = 63;
    } else if (c == '=') {
      break;
    } else {
      continue;
    }
    bits = (bits << 6) | static_cast<uint32_t>(value);
    bit_count += 6;
    if (bit_count >= 8) {
      bit_count -= 8;
      out.push_back(static_cast<char>((bits >> bit_count) & 0xFF));
    }
  }
  return out;
}

}  // namespace tandem::index_builder
