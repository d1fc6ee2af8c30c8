#include "index_builder/synth_inputs.h"

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <functional>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"

namespace tandem::index_builder {
namespace {

// Calls `on_line(line, number)` for every line of a plain or gzip-compressed text file (zlib reads
// both), without its line ending. Stops at the first error `on_line` returns.
absl::Status ForEachLine(const std::string& path,
                         const std::function<absl::Status(absl::string_view, size_t)>& on_line) {
  gzFile file = gzopen(path.c_str(), "rb");
  if (file == nullptr) {
    const int err = errno;
    const std::string message = absl::StrCat("cannot open '", path, "': ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(message) : absl::UnavailableError(message);
  }
  gzbuffer(file, 1 << 18);
  std::string line;
  char buf[1 << 12];
  size_t number = 0;
  absl::Status status;
  while (status.ok()) {
    line.clear();
    bool got = false;
    while (gzgets(file, buf, sizeof(buf)) != nullptr) {
      got = true;
      line.append(buf);
      if (!line.empty() && line.back() == '\n') break;
    }
    if (!got) break;
    ++number;
    absl::string_view view(line);
    while (!view.empty() && (view.back() == '\n' || view.back() == '\r')) view.remove_suffix(1);
    status = on_line(view, number);
  }
  int zerr = Z_OK;
  const char* zmessage = gzerror(file, &zerr);
  gzclose(file);
  TANDEM_RETURN_IF_ERROR(status);
  if (zerr != Z_OK && zerr != Z_STREAM_END) {
    return absl::DataLossError(absl::StrCat("cannot read '", path, "': ", zmessage));
  }
  return absl::OkStatus();
}

bool IsComment(absl::string_view line) {
  return absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "#");
}

// "N articles" or "N documents" in a comment line; 0 when there is none.
uint64_t DeclaredDocuments(absl::string_view comment) {
  std::vector<absl::string_view> words =
      absl::StrSplit(comment, absl::ByAnyChar(" \t,;:()"), absl::SkipEmpty());
  for (size_t i = 0; i + 1 < words.size(); ++i) {
    uint64_t n = 0;
    if ((words[i + 1] == "articles" || words[i + 1] == "documents") &&
        absl::SimpleAtoi(words[i], &n)) {
      return n;
    }
  }
  return 0;
}

absl::Status BadLine(const std::string& path, size_t number, absl::string_view what,
                     absl::string_view line) {
  return absl::InvalidArgumentError(
      absl::StrCat(path, ":", number, ": ", what, ", got '", line.substr(0, 80), "'"));
}

}  // namespace

absl::StatusOr<TermStats> LoadTermStats(const std::string& path) {
  TermStats stats;
  absl::flat_hash_set<std::string> seen;
  TANDEM_RETURN_IF_ERROR(ForEachLine(path, [&](absl::string_view line, size_t number) {
    if (absl::StripAsciiWhitespace(line).empty()) return absl::OkStatus();
    if (IsComment(line)) {
      if (stats.declared_documents == 0) stats.declared_documents = DeclaredDocuments(line);
      return absl::OkStatus();
    }
    std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    TermStat t;
    if (f.size() != 3 || f[0].empty() || !absl::SimpleAtoi(f[1], &t.df) ||
        !absl::SimpleAtoi(f[2], &t.cf)) {
      return BadLine(path, number, "expected term<TAB>df<TAB>cf", line);
    }
    if (t.df == 0) return BadLine(path, number, "df must be at least 1", line);
    if (t.cf < t.df) return BadLine(path, number, "cf must be at least df", line);
    t.term = std::string(f[0]);
    if (!seen.insert(t.term).second) return BadLine(path, number, "term listed twice", line);
    stats.total_df += t.df;
    stats.terms.push_back(std::move(t));
    return absl::OkStatus();
  }));
  if (stats.terms.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' holds no term statistics"));
  }
  return stats;
}

absl::StatusOr<LengthHistogram> LoadLengthHistogram(const std::string& path) {
  LengthHistogram h;
  TANDEM_RETURN_IF_ERROR(ForEachLine(path, [&](absl::string_view line, size_t number) {
    if (absl::StripAsciiWhitespace(line).empty() || IsComment(line)) return absl::OkStatus();
    std::vector<absl::string_view> f = absl::StrSplit(line, '\t');
    uint32_t length = 0;
    uint64_t count = 0;
    if (f.size() != 2 || !absl::SimpleAtoi(f[0], &length) || !absl::SimpleAtoi(f[1], &count)) {
      return BadLine(path, number, "expected length<TAB>count", line);
    }
    if (count == 0) return absl::OkStatus();
    h.lengths.push_back(length);
    h.counts.push_back(count);
    h.documents += count;
    return absl::OkStatus();
  }));
  if (h.documents == 0) {
    return absl::InvalidArgumentError(absl::StrCat("'", path, "' holds no document lengths"));
  }
  return h;
}

}  // namespace tandem::index_builder
