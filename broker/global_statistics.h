// File: global_statistics.h
//
// tandem-broker --global-stats: a query over shards that are live indexes (each holding the ids
// that hash to it, shard_hash.h) scores with the whole collection's BM25 statistics, as
// Elasticsearch's dfs_query_then_fetch. Before the query runs, one replica of every shard answers
// GetCollectionStatistics for the query's terms (another replica of the shard when one fails);
// their sum goes with the query to every shard (SearchRequest.collection_statistics), and each
// shard's scores are then those of one node holding every document, bit for bit. Without it, each
// live shard scores with its own documents' statistics.
//
//   GatherStatistics(replicas.topology(), request, deadline,
//                    [](absl::StatusOr<tandem::v1::CollectionStatistics> sum) { ... });
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "broker/replica_set.h"
#include "tandem/v1/search.pb.h"

namespace tandem::broker {

using StatisticsDone = std::function<void(absl::StatusOr<tandem::v1::CollectionStatistics>)>;

// Asks every shard of `topology` for the statistics of `request`'s query and calls `done` once
// with their sum, on a gRPC thread (or on this one when no shard can be asked). A query error
// (INVALID_ARGUMENT) is the answer at once; a shard none of whose healthy replicas answers makes
// it UNAVAILABLE, naming the shard and the last replica's error.
void GatherStatistics(std::shared_ptr<const Topology> topology,
                      const tandem::v1::SearchRequest& request, absl::Time deadline,
                      StatisticsDone done);

// The sum over shards: documents, lengths and each term's document frequency. INTERNAL when the
// shards' terms differ (nodes that analyze the query differently: not one collection).
absl::StatusOr<tandem::v1::CollectionStatistics> SumStatistics(
    const std::vector<tandem::v1::CollectionStatistics>& shards);

// Lets a query's later calls to the shards be cancelled before they exist: the statistics are
// gathered first, and a cancel that comes meanwhile stops the query when it would start.
class DeferredCancel {
 public:
  // Cancels `cancel` at once when Cancel came first.
  void Set(std::function<void()> cancel);
  void Cancel();
  bool cancelled() const;

 private:
  mutable absl::Mutex mu_;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::function<void()> cancel_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tandem::broker
