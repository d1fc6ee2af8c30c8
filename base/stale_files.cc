#include "base/stale_files.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <filesystem>
#include <random>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace tandem::base {

std::string PidTaggedSuffix(std::string_view prefix) {
  std::random_device rd;
  std::string out = absl::StrCat(std::string(prefix), ::getpid(), "-");
  for (int i = 0; i < 6; ++i) absl::StrAppendFormat(&out, "%02x", rd() & 0xff);
  return out;
}

int RemoveStaleSiblings(const std::string& dir, std::string_view prefix) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  if (ec) return 0;
  int removed = 0;
  for (const fs::directory_entry& entry : it) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) continue;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    pid_t pid = 0;
    const auto [end, parsed] = std::from_chars(first, last, pid);
    if (parsed != std::errc() || end == last || *end != '-' || pid <= 0) continue;
    // kill(pid, 0) fails with ESRCH only when no such process exists (EPERM: it exists).
    if (::kill(pid, 0) == 0 || errno != ESRCH) continue;
    fs::remove_all(entry.path(), ec);
    removed += !ec;
  }
  return removed;
}

}  // namespace tandem::base
