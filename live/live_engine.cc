#include "live/live_engine.h"

#include "base/status_macros.h"
#include "index/prepared_query.h"

namespace tandem::live {

absl::StatusOr<index::SearchResult> LiveEngine::Search(const index::PreparedQuery& query,
                                                       const index::SearchContext& context) const {
  TANDEM_RETURN_IF_ERROR(query.CheckPreparedFor(base_));
  std::shared_ptr<const Snapshot> snapshot = live_->snapshot();
  const bool as_opened =
      snapshot->segments().size() == 1 && &snapshot->segments()[0].segment->index() != nullptr &&
      snapshot->segments()[0].segment->name() == "." && snapshot->segments()[0].deleted->empty();
  if (query.query().filter != nullptr && !as_opened) {
    return absl::FailedPreconditionError(
        "filters are not evaluated on an index that has taken writes: its attributes number the "
        "documents as they were built");
  }
  TANDEM_ASSIGN_OR_RETURN(index::SearchResult result, snapshot->Search(query.query(), context));
  result.documents = std::move(snapshot);
  return result;
}

}  // namespace tandem::live
