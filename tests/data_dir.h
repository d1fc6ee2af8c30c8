// File: data_dir.h
//
// Where the shared real data lives for data-driven tests: $TANDEM_DATA_DIR, else ../shared/data
// beside the source tree ($TANDEM_SOURCE_DIR, set by ctest). Tests call GTEST_SKIP when it is
// absent, so a user's fresh clone passes without it.
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

namespace tandem::testing {

inline std::string DataDir() {
  if (const char* d = std::getenv("TANDEM_DATA_DIR"); d != nullptr && *d != '\0') return d;
  const char* src = std::getenv("TANDEM_SOURCE_DIR");
  std::filesystem::path base = src != nullptr ? src : ".";
  return (base / ".." / "shared" / "data").lexically_normal().string();
}

// The path of `relative` under DataDir(), or "" when it does not exist.
inline std::string DataFile(const std::string& relative) {
  std::filesystem::path p = std::filesystem::path(DataDir()) / relative;
  return std::filesystem::exists(p) ? p.string() : "";
}

}  // namespace tandem::testing
