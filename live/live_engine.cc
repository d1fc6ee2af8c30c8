#include "live/live_engine.h"

#include "base/status_macros.h"
#include "index/prepared_query.h"

namespace tandem::live {

absl::StatusOr<index::SearchResult> LiveEngine::Search(const index::PreparedQuery& query,
                                                       const index::SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(query.CheckPreparedFor(base_));
  std::shared_ptr<const Snapshot> snapshot = live_->snapshot();
  // Until its first refresh with a write, the snapshot is the opened index itself: its own engine
  // answers the query as prepared, with the stored norms and no second lookup.
  if (snapshot->as_built() && &snapshot->segments()[0].segment->index() == &base_)
    return snapshot->segments()[0].segment->engine().Search(query, context);
  if (query.query().filter != nullptr && query.query().filter_expression == nullptr) {
    return absl::FailedPreconditionError(
        "a filter bitmap numbers the documents as the index was built, which an index that took "
        "writes no longer does: give the filter as an expression");
  }
  TANDEM_ASSIGN_OR_RETURN(index::SearchResult result, snapshot->Search(query.query(), context));
  result.documents = std::move(snapshot);
  return result;
}

}  // namespace tandem::live
