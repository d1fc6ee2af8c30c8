// File: shard_merge.cc
#include "broker/shard_merge.h"

#include <algorithm>
#include <limits>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace tandem::broker {

using tandem::v1::Hit;
using tandem::v1::SearchResponse;

namespace {

struct Ranked {
  float score;
  uint32_t docid;  // the collection's
  Hit* hit;
};

// Higher score first, then lower docID: the node's rank order (TopK).
bool Before(const Ranked& a, const Ranked& b) {
  if (a.score != b.score) return a.score > b.score;
  return a.docid < b.docid;
}

}  // namespace

absl::StatusOr<SearchResponse> MergeShardAnswers(uint32_t k, std::vector<ShardAnswer>& answers) {
  std::vector<Ranked> ranked;
  size_t total = 0;
  for (const ShardAnswer& a : answers) total += a.response.hits_size();
  ranked.reserve(total);
  for (ShardAnswer& a : answers) {
    for (Hit& hit : *a.response.mutable_hits()) {
      const uint64_t docid = uint64_t{a.first_docid} + hit.docid();
      if (docid > std::numeric_limits<uint32_t>::max()) {
        return absl::InternalError(absl::StrCat("shard ", a.shard, " answered docID ", hit.docid(),
                                                ", beyond the collection from first docID ",
                                                a.first_docid));
      }
      ranked.push_back({hit.score(), static_cast<uint32_t>(docid), &hit});
    }
  }
  const size_t keep = std::min<size_t>(k, ranked.size());
  std::partial_sort(ranked.begin(), ranked.begin() + keep, ranked.end(), Before);

  SearchResponse merged;
  merged.mutable_hits()->Reserve(static_cast<int>(keep));
  for (size_t i = 0; i < keep; ++i) {
    Hit* hit = merged.add_hits();
    *hit = std::move(*ranked[i].hit);
    hit->set_docid(ranked[i].docid);
  }

  tandem::v1::QueryStats* stats = merged.mutable_stats();
  std::set<std::string> engines;
  for (const ShardAnswer& a : answers) {
    const tandem::v1::QueryStats& s = a.response.stats();
    if (!s.engine().empty()) engines.insert(s.engine());
    stats->set_postings_decoded(stats->postings_decoded() + s.postings_decoded());
    stats->set_queued_micros(std::max(stats->queued_micros(), s.queued_micros()));
    stats->set_execution_micros(std::max(stats->execution_micros(), s.execution_micros()));
    if (stats->terms_size() == 0 && s.terms_size() > 0) *stats->mutable_terms() = s.terms();
    if (stats->executed_mode() == tandem::v1::QUERY_MODE_UNSPECIFIED) {
      stats->set_executed_mode(s.executed_mode());
    }
  }
  stats->set_engine(absl::StrJoin(engines, "+"));
  return merged;
}

uint64_t TotalHits(const std::vector<ShardAnswer>& answers) {
  uint64_t hits = 0;
  for (const ShardAnswer& a : answers) hits += a.response.hits_size();
  return hits;
}

}  // namespace tandem::broker
