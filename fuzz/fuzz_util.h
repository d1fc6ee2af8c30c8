// File: fuzz_util.h
//
// What the libFuzzer targets in fuzz/ share: a check that aborts naming its condition (libFuzzer
// then saves the input as a crash), exact-size heap copies of input bytes (a std::string's spare
// capacity and terminating NUL would hide a read past the end from AddressSanitizer), a cursor
// that takes header fields off the front of an input, a UTF-8 validity test and a scratch directory
// for the targets whose code under test reads files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

// Aborts with the failed condition when an invariant does not hold: a finding, like a crash.
#define TANDEM_FUZZ_CHECK(cond)                                                         \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (false)

namespace tandem::fuzz {

// A heap copy of exactly `bytes`, 16-byte aligned (operator new[]), that ends where they end.
class Bytes {
 public:
  explicit Bytes(absl::string_view bytes) : size_(bytes.size()), data_(new char[bytes.size()]) {
    if (size_ > 0) std::memcpy(data_.get(), bytes.data(), size_);
  }
  const char* data() const { return data_.get(); }
  size_t size() const { return size_; }
  absl::string_view view() const { return {data_.get(), size_}; }
  const uint8_t* begin() const { return reinterpret_cast<const uint8_t*>(data_.get()); }
  const uint8_t* end() const { return begin() + size_; }

 private:
  size_t size_;
  std::unique_ptr<char[]> data_;
};

// Takes little-endian header fields off the front of an input; past its end every field reads 0.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : rest_(reinterpret_cast<const char*>(data), size) {}

  uint8_t Byte() {
    if (rest_.empty()) return 0;
    const uint8_t b = static_cast<uint8_t>(rest_[0]);
    rest_.remove_prefix(1);
    return b;
  }
  uint32_t U32() {
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) v |= uint32_t{Byte()} << (8 * i);
    return v;
  }
  // Everything not taken yet.
  absl::string_view rest() const { return rest_; }

 private:
  absl::string_view rest_;
};

// True when `s` is well-formed UTF-8. Transcribed from the Unicode Standard's table of well-formed
// byte sequences (chapter 3, Table 3-7) rather than from the decoders under test, so that it checks
// them independently: each row gives a range of lead bytes, the sequence's length and the range of
// its second byte; every later byte lies in 80..BF. Lead bytes in no row (80..C1, F5..FF) are never
// valid.
inline bool IsValidUtf8(absl::string_view s) {
  struct Row {
    unsigned char lead_min, lead_max;
    size_t length;
    unsigned char second_min, second_max;
  };
  static constexpr Row kWellFormed[] = {
      {0x00, 0x7F, 1, 0x00, 0x00}, {0xC2, 0xDF, 2, 0x80, 0xBF}, {0xE0, 0xE0, 3, 0xA0, 0xBF},
      {0xE1, 0xEC, 3, 0x80, 0xBF}, {0xED, 0xED, 3, 0x80, 0x9F}, {0xEE, 0xEF, 3, 0x80, 0xBF},
      {0xF0, 0xF0, 4, 0x90, 0xBF}, {0xF1, 0xF3, 4, 0x80, 0xBF}, {0xF4, 0xF4, 4, 0x80, 0x8F},
  };
  const auto in = [](unsigned char c, unsigned char min, unsigned char max) {
    return c >= min && c <= max;
  };
  for (size_t i = 0; i < s.size();) {
    const auto byte = [&](size_t j) { return static_cast<unsigned char>(s[i + j]); };
    const Row* row = nullptr;
    for (const Row& r : kWellFormed) {
      if (in(byte(0), r.lead_min, r.lead_max)) row = &r;
    }
    if (row == nullptr || row->length > s.size() - i) return false;
    if (row->length > 1 && !in(byte(1), row->second_min, row->second_max)) return false;
    for (size_t j = 2; j < row->length; ++j) {
      if (!in(byte(j), 0x80, 0xBF)) return false;
    }
    i += row->length;
  }
  return true;
}

// A directory of this process's own, for targets that must hand their input to code reading a
// file: under $TMPDIR (deploy/fuzz.sh points it at a scratch directory on tmpfs where there is
// one), created at first use and removed at exit.
const std::string& ScratchDir();

// Writes `bytes` to `name` in ScratchDir() and returns the file's path. Aborts when it cannot.
std::string WriteScratchFile(absl::string_view name, absl::string_view bytes);

}  // namespace tandem::fuzz
