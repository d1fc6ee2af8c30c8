#include "workload/query_set.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/ascii.h"
#include "absl/strings/string_view.h"

namespace tandem::workload {

absl::StatusOr<std::vector<AnalyzedQuery>> LoadQuerySet(const std::string& path,
                                                        const index::Analyzer& analyzer,
                                                        QueryFileFormat format) {
  absl::StatusOr<std::vector<QueryRecord>> records = LoadQueryFile(path, format);
  if (!records.ok()) return records.status();
  std::vector<AnalyzedQuery> queries;
  queries.reserve(records->size());
  for (QueryRecord& r : *records) {
    AnalyzedQuery& q = queries.emplace_back();
    analyzer.Analyze(r.text, &q.terms);
    q.id = std::move(r.id);
    q.text = std::move(r.text);
  }
  return queries;
}

absl::StatusOr<std::vector<AnalyzedQuery>> SelectQueries(std::vector<AnalyzedQuery> queries,
                                                         const index::Index& index,
                                                         const QuerySelection& selection) {
  std::vector<AnalyzedQuery> pool;
  for (AnalyzedQuery& q : queries) {
    const bool known = std::any_of(q.terms.begin(), q.terms.end(), [&](const std::string& t) {
      return index.Lookup(t).has_value();
    });
    if (known) pool.push_back(std::move(q));
  }
  std::vector<AnalyzedQuery> chosen;
  if (selection.part == SplitPart::kAll) {
    chosen = std::move(pool);
  } else {
    absl::StatusOr<QuerySplit> split =
        SplitQueries(pool.size(), selection.seed, selection.train, selection.eval);
    if (!split.ok()) return split.status();
    for (size_t i : selection.part == SplitPart::kTrain ? split->train : split->eval) {
      chosen.push_back(std::move(pool[i]));
    }
  }
  if (selection.limit > 0 && chosen.size() > selection.limit) chosen.resize(selection.limit);
  return chosen;
}

absl::StatusOr<std::vector<AnalyzedQuery>> SelectQueries(const std::string& path,
                                                         const index::Index& index,
                                                         const QuerySelection& selection) {
  absl::StatusOr<std::vector<AnalyzedQuery>> loaded = LoadQuerySet(path, index.analyzer());
  if (!loaded.ok()) return loaded.status();
  return SelectQueries(*std::move(loaded), index, selection);
}

std::vector<std::string> DistinctTerms(const std::vector<std::string>& terms) {
  std::vector<std::string> out;
  absl::flat_hash_set<absl::string_view> seen;
  for (const std::string& t : terms) {
    if (seen.insert(t).second) out.push_back(t);
  }
  return out;
}

}  // namespace tandem::workload
