#include "base/huge_pages.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

namespace tandem::base {

std::optional<uint64_t> HugePageBytes(const void* address) {
  std::ifstream smaps("/proc/self/smaps");
  if (!smaps) return std::nullopt;
  const auto at = reinterpret_cast<uintptr_t>(address);
  // Each mapping is a header line "start-end perms offset dev inode [path]" followed by
  // "Key:   value kB" lines; only the mapping that holds `address` is summed.
  bool inside = false, found = false;
  uint64_t kib = 0;
  std::string line;
  while (std::getline(smaps, line)) {
    uintptr_t start = 0, end = 0;
    if (std::sscanf(line.c_str(), "%" SCNxPTR "-%" SCNxPTR " ", &start, &end) == 2 &&
        line.find(':') > line.find(' ')) {  // a header: its first field holds no colon
      if (found) break;
      inside = start <= at && at < end;
      found = inside;
      continue;
    }
    if (!inside) continue;
    for (const char* key : {"AnonHugePages:", "ShmemPmdMapped:", "FilePmdMapped:"}) {
      if (line.rfind(key, 0) == 0) {
        unsigned long long value = 0;
        if (std::sscanf(line.c_str() + std::strlen(key), "%llu", &value) == 1) kib += value;
      }
    }
  }
  if (!found) return std::nullopt;
  return kib * 1024;
}

std::string TransparentHugePagesMode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  if (!in || !std::getline(in, line)) return "unavailable";
  const size_t open = line.find('['), close = line.find(']');
  if (open == std::string::npos || close == std::string::npos || close < open) return line;
  return line.substr(open + 1, close - open - 1);
}

}  // namespace tandem::base
