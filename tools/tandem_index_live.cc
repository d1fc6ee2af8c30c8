// tandem-index inspect's part for a live index (tandem_index_live.h).
#include "tools/tandem_index_live.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

#include "absl/strings/str_cat.h"
#include "index/index.h"
#include "live/commit_point.h"

namespace tandem {
namespace {

int Fail(const absl::Status& status) {
  std::fprintf(stderr, "tandem-index: %s\n", std::string(status.message()).c_str());
  return 1;
}

}  // namespace

// A live index's segments, deletes and commit generation (live/commit_point.h); nothing for an
// index no write has reached.
int InspectLive(const std::string& dir) {
  absl::StatusOr<std::optional<live::CommitPoint>> commit = live::ReadLatestCommitPoint(dir);
  if (!commit.ok()) return Fail(commit.status());
  if (!commit->has_value()) {
    std::printf("live       no commit point: one segment, the index above, no deletes%s\n",
                std::filesystem::exists(dir + "/wal") ? " (writes wait in wal/)" : "");
    return 0;
  }
  const live::CommitPoint& c = **commit;
  std::printf("live       commit generation %llu, log through record %llu, %zu segments\n",
              static_cast<unsigned long long>(c.generation),
              static_cast<unsigned long long>(c.log_sequence), c.segments.size());
  uint64_t documents = 0, deleted = 0;
  for (const live::CommittedSegment& s : c.segments) {
    absl::StatusOr<std::unique_ptr<index::Index>> segment =
        index::Index::Open(s.name == "." ? dir : absl::StrCat(dir, "/", s.name));
    if (!segment.ok()) return Fail(segment.status());
    const uint32_t n = (*segment)->num_docs();
    std::printf("  segment  %-8s %u documents, %zu deleted, %llu postings\n", s.name.c_str(), n,
                s.deleted.size(),
                static_cast<unsigned long long>((*segment)->stats().num_postings));
    documents += n;
    deleted += s.deleted.size();
  }
  std::printf("  live     %llu documents (%llu deleted, dropped by merges); %zu versioned ids\n",
              static_cast<unsigned long long>(documents - deleted),
              static_cast<unsigned long long>(deleted), c.versions.size());
  if (std::none_of(c.segments.begin(), c.segments.end(),
                   [](const live::CommittedSegment& s) { return s.name == "."; })) {
    std::printf(
        "  note     the index above was merged away: its files are not part of the live "
        "index\n");
  }
  return 0;
}

}  // namespace tandem
