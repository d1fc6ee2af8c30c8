// File: request_validation.h
//
// Turns a tandem.v1.SearchRequest into the index::Query an engine runs, or into INVALID_ARGUMENT
// with a message that names the offending field ("k must be between 1 and 10000, got 20000"). Every
// check the API documents lives here, so the unary, batch and stream paths reject exactly the same
// requests:
//   - the query (text or terms) is set and not empty; text within --max-query-bytes; at most
//     --max-query-terms terms (after analysis, for text);
//   - k in 1..10000 (0 means 10); BM25 k1 in [0, 100] and b in [0, 1]; weights finite and >= 0
//     (0 means 1); mode and engine hint are known enum values.
// Text is analyzed with the index's own Analyzer. A query whose terms are all stop words or absent
// from the index is valid: it returns no hits.
//
//   absl::StatusOr<QueryTask> task = ParseSearchRequest(request, index, limits);
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "filter/attribute_index.h"
#include "filter/filter.h"
#include "filter/filter_cache.h"
#include "index/analyzer.h"
#include "index/index.h"
#include "index/query.h"
#include "index/resolved_query.h"
#include "scheduler/query_executor.h"
#include "tandem/v1/search.pb.h"

namespace tandem::server {

// request_id is echoed in every response: a caller's id, not a payload.
inline constexpr size_t kMaxRequestIdBytes = 256;
// SearchRequest.fields: how many stored-field names, and how long each.
inline constexpr int kMaxFieldNames = 32;
inline constexpr size_t kMaxFieldNameBytes = 128;
// SearchRequest.snippet_bytes.
inline constexpr uint32_t kMaxSnippetBytes = 1000;

struct RequestLimits {
  uint32_t max_query_terms = 64;
  uint32_t max_query_bytes = 4096;
  uint32_t max_batch = 1024;
  // Most hits one SearchBatch call may ask for, the sum of its queries' k: a call of 1,024
  // queries with k = 10,000 would otherwise build a 100 MB response and hold workers for seconds.
  uint32_t max_batch_hits = 100000;
  // Admission, over all calls. Queries admitted and not yet answered, each query of a batch
  // counted: a call that would pass it is refused whole with RESOURCE_EXHAUSTED. At least
  // max_batch, so that any valid batch can run on an idle node.
  uint32_t max_queries_in_flight = 4096;
  // The memory circuit breaker: the estimated bytes of the responses of admitted, unanswered
  // queries (k hits each, kResponseBytesPerHit apiece); a call that would pass it is refused whole
  // with RESOURCE_EXHAUSTED. At least what one batch of max_batch_hits hits takes.
  uint64_t max_response_bytes_in_flight = uint64_t{256} << 20;
};

// What a response takes per hit while it is built and sent: the Hit message and its external id
// (in memory and encoded), for ids of up to about 32 bytes.
inline constexpr uint64_t kResponseBytesPerHit = 192;

// INVALID_ARGUMENT naming the limit when one is 0 (nothing would be accepted), or when the
// admission limits could never admit a batch the request limits accept.
absl::Status ValidateLimits(const RequestLimits& limits);

// The tree of a protobuf filter, checked by filter::ValidateFilter; INVALID_ARGUMENT naming the
// problem (an empty node, nesting deeper than filter::kMaxFilterDepth).
absl::StatusOr<filter::FilterNode> FilterFromProto(const tandem::v1::DocumentFilter& filter);

// The task's query is prepared against `index` (index::PreparedQuery): its text analyzed with the
// index's Analyzer, repeated terms merged, the engines' checks made and its terms looked up, once.
// A filter (filter_text or filter) is evaluated through `filters` (null, or over an index that
// stores no attributes: a filter is INVALID_ARGUMENT) into the query's filter bitmap.
absl::StatusOr<scheduler::QueryTask> ParseSearchRequest(const tandem::v1::SearchRequest& request,
                                                        const index::Index& index,
                                                        const RequestLimits& limits,
                                                        filter::FilterCache* filters = nullptr);

// The query's terms (text analyzed with `analyzer`, or the caller's list), within the limits, in
// request order, repeats not yet merged: what ParseSearchRequest and GetCollectionStatistics read.
absl::StatusOr<std::vector<index::QueryTerm>> RequestTerms(const tandem::v1::SearchRequest& request,
                                                           const index::Analyzer& analyzer,
                                                           const RequestLimits& limits);

// SearchRequest.collection_statistics as the engines score with them, checked against the query's
// terms after MergeRepeatedTerms: INVALID_ARGUMENT for a term count or a term that differs, no
// documents, or a document frequency above num_docs.
absl::StatusOr<std::shared_ptr<const index::CollectionStatistics>> ParseCollectionStatistics(
    const tandem::v1::CollectionStatistics& given, const std::vector<index::QueryTerm>& merged);

// INVALID_ARGUMENT when the batch holds more than limits.max_batch queries, or asks for more than
// limits.max_batch_hits hits in all (k, 10 when unset, summed over its queries).
absl::Status ValidateBatchSize(const tandem::v1::SearchBatchRequest& request,
                               const RequestLimits& limits);

// Conversions between the wire enums and the engine's, for responses and metric labels.
tandem::v1::QueryMode ToProtoMode(index::QueryMode mode);

// The mode label of a request for metrics: "and", "or", "and_or", or "invalid" for an unknown
// value.
absl::string_view RequestModeLabel(const tandem::v1::SearchRequest& request);

}  // namespace tandem::server
