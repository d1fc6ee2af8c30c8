// LiveIndex's merges (live_index.h): the background merge thread, ForceMerge, and the swap of a
// merged segment for its inputs.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "live/live_index.h"
#include "live/segment_merge.h"

namespace tandem::live {

namespace {

// Where each document deleted from an input since the merge began goes in the merged segment:
// the input's live documents at the start were written in order from `base`, so a docID moves
// down by the deletes at the start below it.
void CarryDeletes(const std::vector<uint32_t>& at_start, const std::vector<uint32_t>& now,
                  uint32_t base, std::vector<uint32_t>& merged_deleted) {
  for (uint32_t d : now) {
    auto below = std::lower_bound(at_start.begin(), at_start.end(), d);
    if (below != at_start.end() && *below == d) continue;  // dropped by the merge
    merged_deleted.push_back(base + d - static_cast<uint32_t>(below - at_start.begin()));
  }
}

}  // namespace

absl::Status LiveIndex::Merge(MergeRange range) {
  const std::shared_ptr<const Snapshot> start = snapshot();
  const std::vector<SegmentView>& views = start->segments();
  if (range.begin >= range.end || range.end > views.size()) {
    return absl::InvalidArgumentError("a merge of segments the index does not hold");
  }
  std::vector<MergeInput> inputs;
  uint64_t live = 0;
  for (size_t i = range.begin; i < range.end; ++i) {
    inputs.push_back({&views[i].segment->index(), *views[i].deleted});
    live += views[i].live_docs;
  }
  uint64_t number = 0;
  {
    absl::MutexLock lock(&mu_);
    number = next_segment_++;
    merging_.insert(number);
  }
  const std::string name = absl::StrCat("_", number);
  const std::string path = absl::StrCat(dir_, "/", name);
  std::shared_ptr<Segment> merged;
  MergeSummary summary;
  absl::Status status;
  if (live > 0) {
    MergeOptions options;
    options.max_bytes_per_second = options_.merge_bytes_per_second;
    options.check = [this]() -> absl::Status {
      absl::MutexLock lock(&stop_mu_);
      return stopping_ ? absl::CancelledError("the live index is closing") : absl::OkStatus();
    };
    absl::StatusOr<MergeSummary> done = MergeSegments(inputs, path, options);
    if (done.ok()) {
      summary = *done;
      absl::StatusOr<std::shared_ptr<Segment>> opened =
          Segment::Open(path, name, options_.engine, nullptr, options_.device);
      if (opened.ok()) merged = *std::move(opened);
      status = opened.status();
    } else {
      status = done.status();
    }
  }
  absl::MutexLock lock(&mu_);
  merging_.erase(number);
  if (!status.ok()) {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
    return absl::Status(status.code(),
                        absl::StrCat("merging segments ", views[range.begin].segment->name(), "..",
                                     views[range.end - 1].segment->name(), ": ", status.message()));
  }
  // The inputs as the index holds them now: refreshes may have deleted more of their documents,
  // and dropped an input whose documents all went.
  std::vector<SegmentView> now = snapshot()->segments();
  std::vector<uint32_t> merged_deleted;
  uint32_t base = 0;
  size_t first = now.size();
  std::vector<bool> replaced(now.size(), false);
  for (size_t i = range.begin; i < range.end; ++i) {
    const SegmentView& input = views[i];
    auto it = std::find_if(now.begin(), now.end(),
                           [&](const SegmentView& v) { return v.segment == input.segment; });
    std::vector<uint32_t> all;
    const std::vector<uint32_t>* deleted = nullptr;
    if (it == now.end()) {
      all.resize(input.segment->num_docs());
      for (uint32_t d = 0; d < all.size(); ++d) all[d] = d;
      deleted = &all;
    } else {
      const size_t at = static_cast<size_t>(it - now.begin());
      replaced[at] = true;
      first = std::min(first, at);
      deleted = it->deleted.get();
    }
    CarryDeletes(*input.deleted, *deleted, base, merged_deleted);
    base += input.live_docs;
  }
  std::vector<SegmentView> next;
  for (size_t i = 0; i < now.size(); ++i) {
    if (i == first && merged != nullptr) {
      TANDEM_ASSIGN_OR_RETURN(
          SegmentView view, SegmentView::Make(merged, std::make_shared<const std::vector<uint32_t>>(
                                                          std::move(merged_deleted))));
      if (view.live_docs > 0) next.push_back(std::move(view));
    }
    if (!replaced[i]) next.push_back(now[i]);
  }
  if (next.empty()) next.push_back(now.back());  // as RefreshLocked keeps one
  bytes_merged_ += summary.bytes_written;
  ++merges_;
  Publish(std::move(next));
  return absl::OkStatus();
}

absl::StatusOr<bool> LiveIndex::MaybeMerge() {
  absl::MutexLock merging(&merge_mu_);
  const std::shared_ptr<const Snapshot> snap = snapshot();
  std::vector<SegmentSize> sizes;
  MergePolicyOptions policy = options_.merge_policy;
  for (const SegmentView& v : snap->segments()) {
    sizes.push_back({v.segment->num_docs(), v.deleted->size()});
    // The index built offline stays whole in the background: its rewrite is ForceMerge's.
    if (v.segment->name() == ".") policy.first_mergeable = sizes.size();
  }
  const std::optional<MergeRange> range = FindMerge(sizes, policy);
  if (!range) return false;
  TANDEM_RETURN_IF_ERROR(Merge(*range));
  return true;
}

absl::Status LiveIndex::ForceMerge(size_t max_segments) {
  if (max_segments == 0) return absl::InvalidArgumentError("ForceMerge needs max_segments >= 1");
  TANDEM_RETURN_IF_ERROR(Refresh());
  absl::MutexLock merging(&merge_mu_);
  while (true) {
    const std::shared_ptr<const Snapshot> snap = snapshot();
    const std::vector<SegmentView>& views = snap->segments();
    std::vector<MergeRange> ranges = ForcedMerges(views.size(), max_segments);
    // A single segment with deletes is rewritten without them.
    if (ranges.empty()) {
      for (size_t i = 0; i < views.size(); ++i) {
        if (!views[i].deleted->empty()) ranges.push_back({i, i + 1});
      }
    }
    if (ranges.empty()) return absl::OkStatus();
    // The last range first: the earlier ranges keep their positions.
    TANDEM_RETURN_IF_ERROR(Merge(ranges.back()));
  }
}

void LiveIndex::MergeLoop() {
  BecomeBackground("tandem-merge");
  while (true) {
    {
      absl::MutexLock lock(&stop_mu_);
      stop_mu_.AwaitWithTimeout(absl::Condition(this, &LiveIndex::MergeOrStop), absl::Seconds(10));
      if (stopping_) return;
      merge_wanted_ = false;
    }
    // Merge while the policy finds work; a failure waits for the next refresh.
    while (true) {
      absl::StatusOr<bool> merged = MaybeMerge();
      if (!merged.ok()) {
        if (merged.status().code() != absl::StatusCode::kCancelled) {
          std::fprintf(stderr, "tandem: live index '%s': merge failed: %s\n", dir_.c_str(),
                       std::string(merged.status().message()).c_str());
        }
        break;
      }
      if (!*merged) break;
    }
  }
}

}  // namespace tandem::live
