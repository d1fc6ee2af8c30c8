#include "index_builder/spill_run.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace tandem::index_builder {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

}  // namespace

absl::StatusOr<SpilledRun> WriteRun(const MemoryRun& run, const std::string& path) {
  std::vector<std::pair<const std::string*, const RunPostings*>> sorted;
  sorted.reserve(run.size());
  for (const auto& [term, postings] : run) sorted.emplace_back(&term, &postings);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat("cannot create spill file '", path, "'"));
  SpilledRun spilled;
  spilled.path = path;
  uint64_t next_mark = 0;
  std::string buf;
  for (const auto& [term, postings] : sorted) {
    if (spilled.bytes >= next_mark) {
      spilled.marks.push_back({*term, spilled.bytes});
      next_mark = spilled.bytes + kRunMarkBytes;
    }
    buf.clear();
    PutVarint(&buf, term->size());
    buf.append(*term);
    PutVarint(&buf, postings->size() / 2);
    uint32_t prev = 0;
    for (size_t i = 0; i < postings->size(); i += 2) {
      PutVarint(&buf, (*postings)[i] - prev);
      prev = (*postings)[i];
      PutVarint(&buf, (*postings)[i + 1]);
    }
    out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
    spilled.bytes += buf.size();
  }
  out.close();
  if (!out)
    return absl::InternalError(absl::StrCat("cannot write spill file '", path, "' (disk full?)"));
  return spilled;
}

std::vector<TermRange> SplitTermRanges(const std::vector<SpilledRun>& runs, uint64_t target_bytes) {
  // Each mark stands for the run data up to the run's next mark.
  std::vector<std::pair<absl::string_view, uint64_t>> marks;
  for (const SpilledRun& run : runs) {
    for (size_t i = 0; i < run.marks.size(); ++i) {
      const uint64_t next = i + 1 < run.marks.size() ? run.marks[i + 1].offset : run.bytes;
      marks.emplace_back(run.marks[i].term, next - run.marks[i].offset);
    }
  }
  std::sort(marks.begin(), marks.end());
  std::vector<TermRange> ranges(1);
  uint64_t bytes = 0;
  for (size_t i = 0; i + 1 < marks.size(); ++i) {
    bytes += marks[i].second;
    // A range ends where the next mark's term starts, so no term is cut between two ranges.
    if (bytes >= target_bytes && marks[i + 1].first > ranges.back().first) {
      ranges.back().end = std::string(marks[i + 1].first);
      ranges.push_back({std::string(marks[i + 1].first), std::nullopt});
      bytes = 0;
    }
  }
  return ranges;
}

RunReader::RunReader(const std::string& path, uint64_t offset)
    : path_(path), in_(path, std::ios::binary) {
  if (!in_.is_open()) {
    status_ = absl::DataLossError(absl::StrCat("cannot open spill file '", path_, "'"));
  } else if (offset > 0 && !in_.seekg(static_cast<std::streamoff>(offset))) {
    status_ = absl::DataLossError(
        absl::StrCat("spill file '", path_, "' is shorter than its mark at byte ", offset));
  }
}

bool RunReader::Fill() {
  in_.read(buffer_, sizeof(buffer_));
  pos_ = 0;
  end_ = static_cast<size_t>(in_.gcount());
  if (in_.bad() && status_.ok()) {
    status_ = absl::DataLossError(absl::StrCat("cannot read spill file '", path_, "'"));
  }
  return end_ > 0;
}

bool RunReader::GetVarint(uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    const int c = Byte();
    if (c < 0) return false;
    *v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) return true;
  }
  return false;
}

bool RunReader::Next() {
  if (!status_.ok()) return false;
  uint64_t len, n;
  if (pos_ == end_ && !Fill()) return false;  // clean end of file
  auto truncated = [&] {
    status_ = absl::DataLossError(absl::StrCat("spill file '", path_, "' is truncated"));
    return false;
  };
  if (!GetVarint(&len)) return truncated();
  term_.resize(len);
  for (uint64_t i = 0; i < len; ++i) {
    const int c = Byte();
    if (c < 0) return truncated();
    term_[i] = static_cast<char>(c);
  }
  if (!GetVarint(&n)) return truncated();
  postings_.resize(2 * n);
  uint64_t doc = 0, v;
  for (uint64_t i = 0; i < n; ++i) {
    if (!GetVarint(&v)) return truncated();
    doc += v;
    postings_[2 * i] = static_cast<uint32_t>(doc);
    if (!GetVarint(&v)) return truncated();
    postings_[2 * i + 1] = static_cast<uint32_t>(v);
  }
  return true;
}

RunMerger::RunMerger(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    if (!Open(p, 0)) return;
  }
}

RunMerger::RunMerger(const std::vector<SpilledRun>& runs, const TermRange& range)
    : first_(range.first), end_(range.end) {
  for (const SpilledRun& run : runs) {
    if (run.marks.empty()) continue;  // an empty run
    // The last mark at or below the range's first term; the first mark is the run's first term.
    auto after =
        std::upper_bound(run.marks.begin(), run.marks.end(), first_,
                         [](const std::string& t, const RunMark& m) { return t < m.term; });
    const uint64_t offset = after == run.marks.begin() ? 0 : std::prev(after)->offset;
    // A run cut short at a term's end would read as a clean end.
    std::error_code error;
    const uint64_t size = std::filesystem::file_size(run.path, error);
    if (error || size != run.bytes) {
      status_ =
          absl::DataLossError(error ? absl::StrCat("cannot open spill file '", run.path, "'")
                                    : absl::StrCat("spill file '", run.path, "' holds ", size,
                                                   " bytes, but ", run.bytes, " were written"));
      return;
    }
    if (!Open(run.path, offset)) return;
  }
}

bool RunMerger::Open(const std::string& path, uint64_t offset) {
  readers_.push_back(std::make_unique<RunReader>(path, offset));
  RunReader& r = *readers_.back();
  bool more = r.Next();
  while (more && r.term() < first_) more = r.Next();
  if (!r.status().ok()) {
    status_ = r.status();
    return false;
  }
  if (more) Push(readers_.size() - 1);
  return true;
}

void RunMerger::Push(size_t which) {
  const RunReader& r = *readers_[which];
  if (!end_ || r.term() < *end_) heads_.emplace(r.term(), which);
}
bool RunMerger::Next() {
  if (!status_.ok() || heads_.empty()) return false;
  term_ = heads_.top().first;
  postings_.clear();
  size_t sources = 0;
  while (!heads_.empty() && heads_.top().first == term_) {
    const size_t which = heads_.top().second;
    RunReader& r = *readers_[which];
    heads_.pop();
    const RunPostings& p = r.postings();
    for (size_t i = 0; i < p.size(); i += 2) postings_.emplace_back(p[i], p[i + 1]);
    ++sources;
    if (r.Next()) Push(which);
    if (!r.status().ok()) {
      status_ = r.status();
      return false;
    }
  }
  // Runs of different workers interleave in docID order.
  if (sources > 1) std::sort(postings_.begin(), postings_.end());
  return true;
}

}  // namespace tandem::index_builder
