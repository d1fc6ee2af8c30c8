#include "index_builder/spill_run.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace tandem::index_builder {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

bool GetVarint(std::istream& in, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    int c = in.get();
    if (c == EOF) return false;
    *v |= static_cast<uint64_t>(c & 0x7f) << shift;
    if ((c & 0x80) == 0) return true;
  }
  return false;
}

}  // namespace

absl::Status WriteRun(const MemoryRun& run, const std::string& path) {
  std::vector<std::pair<const std::string*, const RunPostings*>> sorted;
  sorted.reserve(run.size());
  for (const auto& [term, postings] : run) sorted.emplace_back(&term, &postings);
  std::sort(sorted.begin(), sorted.end(),
            [](const auto& a, const auto& b) { return *a.first < *b.first; });
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::InternalError(absl::StrCat("cannot create spill file '", path, "'"));
  std::string buf;
  for (const auto& [term, postings] : sorted) {
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
  }
  out.close();
  if (!out)
    return absl::InternalError(absl::StrCat("cannot write spill file '", path, "' (disk full?)"));
  return absl::OkStatus();
}

RunReader::RunReader(const std::string& path) : path_(path), in_(path, std::ios::binary) {
  in_.rdbuf()->pubsetbuf(buffer_, sizeof(buffer_));
  if (!in_.is_open()) {
    status_ = absl::DataLossError(absl::StrCat("cannot open spill file '", path_, "'"));
  }
}

bool RunReader::Next() {
  if (!status_.ok()) return false;
  uint64_t len, n;
  if (!GetVarint(in_, &len)) return false;  // clean end of file
  term_.resize(len);
  if (!in_.read(term_.data(), static_cast<std::streamsize>(len)) || !GetVarint(in_, &n)) {
    status_ = absl::DataLossError(absl::StrCat("spill file '", path_, "' is truncated"));
    return false;
  }
  postings_.resize(2 * n);
  uint64_t doc = 0, v;
  for (uint64_t i = 0; i < n; ++i) {
    if (!GetVarint(in_, &v)) {
      status_ = absl::DataLossError(absl::StrCat("spill file '", path_, "' is truncated"));
      return false;
    }
    doc += v;
    postings_[2 * i] = static_cast<uint32_t>(doc);
    if (!GetVarint(in_, &v)) {
      status_ = absl::DataLossError(absl::StrCat("spill file '", path_, "' is truncated"));
      return false;
    }
    postings_[2 * i + 1] = static_cast<uint32_t>(v);
  }
  return true;
}

RunMerger::RunMerger(const std::vector<std::string>& paths) {
  for (const std::string& p : paths) {
    readers_.push_back(std::make_unique<RunReader>(p));
    if (readers_.back()->Next()) heads_.emplace(readers_.back()->term(), readers_.size() - 1);
    if (!readers_.back()->status().ok()) {
      status_ = readers_.back()->status();
      return;
    }
  }
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
    if (r.Next()) heads_.emplace(r.term(), which);
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
