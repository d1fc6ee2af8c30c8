#include "server/request_validation.h"

#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "index/resolved_query.h"

namespace tandem::server {
namespace {

using tandem::v1::SearchRequest;

constexpr uint32_t kDefaultK = 10;

// A wire enum's value beside the engine's. The first entry of an engine value is the one answers
// carry; the wire's UNSPECIFIED comes last, read as the default.
template <typename Wire, typename Engine>
struct WireValue {
  Wire wire;
  Engine engine;
};

constexpr WireValue<tandem::v1::QueryMode, index::QueryMode> kModes[] = {
    {tandem::v1::QUERY_MODE_OR, index::QueryMode::kOr},
    {tandem::v1::QUERY_MODE_AND, index::QueryMode::kAnd},
    {tandem::v1::QUERY_MODE_AND_OR, index::QueryMode::kAndOr},
    {tandem::v1::QUERY_MODE_UNSPECIFIED, index::QueryMode::kOr}};

constexpr WireValue<tandem::v1::EngineHint, scheduler::EnginePreference> kEngineHints[] = {
    {tandem::v1::ENGINE_HINT_AUTO, scheduler::EnginePreference::kAuto},
    {tandem::v1::ENGINE_HINT_CPU, scheduler::EnginePreference::kCpu},
    {tandem::v1::ENGINE_HINT_GPU, scheduler::EnginePreference::kGpu},
    {tandem::v1::ENGINE_HINT_UNSPECIFIED, scheduler::EnginePreference::kAuto}};

// The engine's value of the wire value `wire`; nullopt for one the table lacks (a newer client's).
template <typename Wire, typename Engine, size_t N>
std::optional<Engine> FromWire(const WireValue<Wire, Engine> (&table)[N], int wire) {
  for (const WireValue<Wire, Engine>& entry : table) {
    if (entry.wire == wire) return entry.engine;
  }
  return std::nullopt;
}

absl::StatusOr<index::QueryMode> ParseMode(int mode) {
  if (std::optional<index::QueryMode> parsed = FromWire(kModes, mode)) return *parsed;
  return absl::InvalidArgumentError(absl::StrFormat("mode: unknown QueryMode value %d", mode));
}

absl::StatusOr<scheduler::EnginePreference> ParseEngine(int hint) {
  if (std::optional<scheduler::EnginePreference> parsed = FromWire(kEngineHints, hint)) {
    return *parsed;
  }
  return absl::InvalidArgumentError(absl::StrFormat("engine: unknown EngineHint value %d", hint));
}

absl::Status TooManyTerms(size_t count, const RequestLimits& limits, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s has %d terms, more than the limit of %d (--max-query-terms)", what, count,
                      limits.max_query_terms));
}

absl::Status TooManyBytes(size_t bytes, const RequestLimits& limits, absl::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s is %d bytes, more than the limit of %d (--max-query-bytes)", what, bytes,
                      limits.max_query_bytes));
}

absl::StatusOr<std::vector<index::QueryTerm>> TextTerms(const std::string& text,
                                                        const index::Analyzer& analyzer,
                                                        const RequestLimits& limits) {
  if (text.size() > limits.max_query_bytes) return TooManyBytes(text.size(), limits, "text");
  if (absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())).empty()) {
    return absl::InvalidArgumentError("text is empty");
  }
  std::vector<std::string> analyzed;
  analyzer.Analyze(absl::string_view(text.data(), text.size()), &analyzed);
  if (analyzed.size() > limits.max_query_terms) {
    return TooManyTerms(analyzed.size(), limits, "text (after analysis)");
  }
  std::vector<index::QueryTerm> terms;
  terms.reserve(analyzed.size());
  for (std::string& term : analyzed) terms.push_back({.term = std::move(term), .weight = 1.0f});
  return terms;
}

absl::StatusOr<std::vector<index::QueryTerm>> ListTerms(const tandem::v1::TermList& list,
                                                        const RequestLimits& limits) {
  if (list.terms_size() == 0) return absl::InvalidArgumentError("terms.terms is empty");
  if (static_cast<size_t>(list.terms_size()) > limits.max_query_terms) {
    return TooManyTerms(list.terms_size(), limits, "terms.terms");
  }
  std::vector<index::QueryTerm> terms;
  terms.reserve(list.terms_size());
  size_t bytes = 0;
  for (int i = 0; i < list.terms_size(); ++i) {
    const tandem::v1::WeightedTerm& t = list.terms(i);
    if (t.term().empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("terms.terms[%d].term is empty", i));
    }
    if (!std::isfinite(t.weight()) || t.weight() < 0.0f || t.weight() > index::kMaxTermWeight) {
      return absl::InvalidArgumentError(
          absl::StrFormat("terms.terms[%d].weight must be in [0, %g] (0: 1), got %g", i,
                          index::kMaxTermWeight, t.weight()));
    }
    bytes += t.term().size();
    // 0 is proto3's "unset": weight 1, as documented in search.proto.
    terms.push_back({.term = t.term(), .weight = t.weight() == 0.0f ? 1.0f : t.weight()});
  }
  if (bytes > limits.max_query_bytes) return TooManyBytes(bytes, limits, "terms.terms (together)");
  return terms;
}

absl::StatusOr<filter::FilterNode> FilterFromProtoAt(const tandem::v1::DocumentFilter& f,
                                                     size_t depth, size_t& nodes) {
  if (depth > filter::kMaxFilterDepth) {
    return absl::InvalidArgumentError(
        absl::StrFormat("filter is nested deeper than %d levels", filter::kMaxFilterDepth));
  }
  if (++nodes > filter::kMaxFilterNodes) {
    return absl::InvalidArgumentError(
        absl::StrFormat("filter has more than %d nodes", filter::kMaxFilterNodes));
  }
  auto list = [&](const tandem::v1::DocumentFilterList& l,
                  const char* name) -> absl::StatusOr<std::vector<filter::FilterNode>> {
    if (l.filters_size() == 0) {
      return absl::InvalidArgumentError(absl::StrCat("filter: an empty ", name, " node"));
    }
    std::vector<filter::FilterNode> children;
    for (const tandem::v1::DocumentFilter& child : l.filters()) {
      TANDEM_ASSIGN_OR_RETURN(filter::FilterNode node, FilterFromProtoAt(child, depth + 1, nodes));
      children.push_back(std::move(node));
    }
    return children;
  };
  switch (f.node_case()) {
    case tandem::v1::DocumentFilter::kEquals:
      return filter::FilterNode::Term(f.equals().field(), f.equals().value());
    case tandem::v1::DocumentFilter::kIn:
      return filter::FilterNode::In(
          f.in().field(), std::vector<std::string>(f.in().values().begin(), f.in().values().end()));
    case tandem::v1::DocumentFilter::kRange:
      return filter::FilterNode::Range(
          f.range().field(),
          f.range().has_min() ? std::optional<int64_t>(f.range().min()) : std::nullopt,
          f.range().has_max() ? std::optional<int64_t>(f.range().max()) : std::nullopt);
    case tandem::v1::DocumentFilter::kAnd: {
      TANDEM_ASSIGN_OR_RETURN(auto children, list(f.and_(), "and"));
      return filter::FilterNode::And(std::move(children));
    }
    case tandem::v1::DocumentFilter::kOr: {
      TANDEM_ASSIGN_OR_RETURN(auto children, list(f.or_(), "or"));
      return filter::FilterNode::Or(std::move(children));
    }
    case tandem::v1::DocumentFilter::kNot: {
      TANDEM_ASSIGN_OR_RETURN(filter::FilterNode child,
                              FilterFromProtoAt(f.not_(), depth + 1, nodes));
      return filter::FilterNode::Not(std::move(child));
    }
    case tandem::v1::DocumentFilter::NODE_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("filter: a node with nothing set");
}

// The request's filter as the bitmap of the documents it allows, and as it was given, into
// `query`; nothing without a filter.
absl::Status RequestFilter(const SearchRequest& request, filter::FilterCache* filters,
                           index::Query& query) {
  const bool has_text = !request.filter_text().empty();
  if (!has_text && !request.has_filter()) return absl::OkStatus();
  if (has_text && request.has_filter()) {
    return absl::InvalidArgumentError("give filter_text or filter, not both");
  }
  filter::FilterNode node;
  if (has_text) {
    TANDEM_ASSIGN_OR_RETURN(node, filter::ParseFilter(request.filter_text()));
  } else {
    TANDEM_ASSIGN_OR_RETURN(node, FilterFromProto(request.filter()));
  }
  if (filters == nullptr) {
    return absl::InvalidArgumentError(
        "filter: this index stores no attributes (build it with tandem-index build "
        "--attributes)");
  }
  TANDEM_ASSIGN_OR_RETURN(query.filter, filters->Evaluate(node));
  query.filter_expression = std::make_shared<const filter::FilterNode>(std::move(node));
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<filter::FilterNode> FilterFromProto(const tandem::v1::DocumentFilter& filter) {
  size_t nodes = 0;
  TANDEM_ASSIGN_OR_RETURN(filter::FilterNode node, FilterFromProtoAt(filter, 1, nodes));
  TANDEM_RETURN_IF_ERROR(filter::ValidateFilter(node));
  return node;
}

absl::StatusOr<scheduler::QueryTask> ParseSearchRequest(const SearchRequest& request,
                                                        const index::Index& index,
                                                        const RequestLimits& limits,
                                                        filter::FilterCache* filters) {
  index::Query query;
  scheduler::EnginePreference engine = scheduler::EnginePreference::kAuto;
  if (request.request_id().size() > kMaxRequestIdBytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "request_id has %d bytes, at most %d", request.request_id().size(), kMaxRequestIdBytes));
  }
  if (request.fields_size() > kMaxFieldNames) {
    return absl::InvalidArgumentError(absl::StrFormat("fields names %d stored fields, at most %d",
                                                      request.fields_size(), kMaxFieldNames));
  }
  for (const std::string& name : request.fields()) {
    if (name.empty() || name.size() > kMaxFieldNameBytes) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "fields: a field name has 1 to %d bytes, got %d", kMaxFieldNameBytes, name.size()));
    }
  }
  if (request.snippet_bytes() > kMaxSnippetBytes) {
    return absl::InvalidArgumentError(absl::StrFormat("snippet_bytes must be at most %d, got %d",
                                                      kMaxSnippetBytes, request.snippet_bytes()));
  }
  TANDEM_ASSIGN_OR_RETURN(query.mode, ParseMode(request.mode()));
  TANDEM_ASSIGN_OR_RETURN(engine, ParseEngine(request.engine()));
  if (request.k() > index::kMaxK) {
    return absl::InvalidArgumentError(
        absl::StrFormat("k must be between 1 and %d, got %d", index::kMaxK, request.k()));
  }
  query.k = request.k() == 0 ? kDefaultK : request.k();
  if (request.has_bm25()) {
    if (request.bm25().has_k1()) query.bm25.k1 = request.bm25().k1();
    if (request.bm25().has_b()) query.bm25.b = request.bm25().b();
  }

  TANDEM_ASSIGN_OR_RETURN(query.terms, RequestTerms(request, index.analyzer(), limits));
  TANDEM_RETURN_IF_ERROR(RequestFilter(request, filters, query));
  if (request.has_collection_statistics()) {
    TANDEM_ASSIGN_OR_RETURN(query.collection,
                            ParseCollectionStatistics(request.collection_statistics(),
                                                      index::MergeRepeatedTerms(query.terms)));
  }
  // Merges repeated terms, checks k, the BM25 ranges and the weights (the engines' own rules) and
  // looks the terms up: once, for every stage after admission.
  const std::shared_ptr<const index::CollectionStatistics> collection = query.collection;
  TANDEM_ASSIGN_OR_RETURN(index::PreparedQuery prepared,
                          index::PreparedQuery::Prepare(index, std::move(query), collection.get()));
  return scheduler::QueryTask{.query = std::move(prepared), .engine = engine};
}

absl::StatusOr<std::vector<index::QueryTerm>> RequestTerms(const SearchRequest& request,
                                                           const index::Analyzer& analyzer,
                                                           const RequestLimits& limits) {
  switch (request.query_case()) {
    case SearchRequest::kText:
      return TextTerms(request.text(), analyzer, limits);
    case SearchRequest::kTerms:
      return ListTerms(request.terms(), limits);
    case SearchRequest::QUERY_NOT_SET:
      break;
  }
  return absl::InvalidArgumentError("query is not set: give text or terms");
}

absl::StatusOr<std::shared_ptr<const index::CollectionStatistics>> ParseCollectionStatistics(
    const tandem::v1::CollectionStatistics& given, const std::vector<index::QueryTerm>& merged) {
  if (given.num_docs() == 0) {
    return absl::InvalidArgumentError("collection_statistics.num_docs must be at least 1");
  }
  if (static_cast<size_t>(given.terms_size()) != merged.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "collection_statistics has %d terms, the query has %d after analysis and merging of "
        "repeats",
        given.terms_size(), merged.size()));
  }
  auto collection = std::make_shared<index::CollectionStatistics>();
  collection->num_docs = given.num_docs();
  // As a live snapshot and IndexWriter compute the average, to the same float.
  collection->avg_doc_length =
      given.total_doc_length() == 0
          ? 1.0f
          : static_cast<float>(static_cast<double>(given.total_doc_length()) / given.num_docs());
  for (int i = 0; i < given.terms_size(); ++i) {
    const tandem::v1::TermStatistics& t = given.terms(i);
    if (t.term() != merged[i].term) {
      return absl::InvalidArgumentError(
          absl::StrFormat("collection_statistics.terms[%d] is \"%s\", the query's term is \"%s\"",
                          i, t.term().substr(0, 64), merged[i].term.substr(0, 64)));
    }
    if (t.document_frequency() > given.num_docs()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "collection_statistics.terms[%d]: document_frequency %d is more than num_docs %d", i,
          t.document_frequency(), given.num_docs()));
    }
    collection->dfs.push_back(t.document_frequency());
  }
  return collection;
}

absl::Status ValidateBatchSize(const tandem::v1::SearchBatchRequest& request,
                               const RequestLimits& limits) {
  if (static_cast<size_t>(request.requests_size()) > limits.max_batch) {
    return absl::InvalidArgumentError(
        absl::StrFormat("requests has %d queries, more than the limit of %d (--max-batch)",
                        request.requests_size(), limits.max_batch));
  }
  uint64_t hits = 0;
  for (const SearchRequest& r : request.requests()) hits += r.k() == 0 ? kDefaultK : r.k();
  if (hits > limits.max_batch_hits) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "requests ask for %d hits in all (the sum of their k), more than the limit of %d "
        "(--max-batch-hits): split the batch",
        hits, limits.max_batch_hits));
  }
  return absl::OkStatus();
}

tandem::v1::QueryMode ToProtoMode(index::QueryMode mode) {
  for (const WireValue<tandem::v1::QueryMode, index::QueryMode>& entry : kModes) {
    if (entry.engine == mode) return entry.wire;
  }
  return tandem::v1::QUERY_MODE_UNSPECIFIED;
}

absl::string_view RequestModeLabel(const SearchRequest& request) {
  absl::StatusOr<index::QueryMode> mode = ParseMode(request.mode());
  return mode.ok() ? index::QueryModeName(*mode) : absl::string_view("invalid");
}

absl::Status ValidateLimits(const RequestLimits& limits) {
  for (const auto& [value, name] : {std::pair{limits.max_query_terms, "max_query_terms"},
                                    std::pair{limits.max_query_bytes, "max_query_bytes"},
                                    std::pair{limits.max_batch, "max_batch"},
                                    std::pair{limits.max_batch_hits, "max_batch_hits"}}) {
    if (value < 1) return absl::InvalidArgumentError(absl::StrCat(name, " must be at least 1"));
  }
  if (limits.max_queries_in_flight < limits.max_batch) {
    return absl::InvalidArgumentError(absl::StrCat(
        "max_queries_in_flight (", limits.max_queries_in_flight, ") must be at least max_batch (",
        limits.max_batch, "), or no full batch could run"));
  }
  const uint64_t batch_bytes = uint64_t{limits.max_batch_hits} * kResponseBytesPerHit;
  if (limits.max_response_bytes_in_flight < batch_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("max_response_bytes_in_flight (", limits.max_response_bytes_in_flight,
                     ") must be at least what a batch of max_batch_hits (", limits.max_batch_hits,
                     ") hits takes, ", batch_bytes, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace tandem::server
