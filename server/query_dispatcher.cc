#include "server/query_dispatcher.h"

#include <algorithm>
#include <utility>

#include "absl/strings/cord.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "rpc/status_mapping.h"
#include "server/snippet.h"

namespace tandem::server {
namespace {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

uint64_t Micros(absl::Duration d) { return static_cast<uint64_t>(absl::ToInt64Microseconds(d)); }

// Where a refusal that is not told apart by its code alone carries its reject_reason label.
constexpr absl::string_view kReasonPayload = "type.tandem/reject_reason";

absl::Status WithReason(absl::Status status, absl::string_view reason) {
  status.SetPayload(kReasonPayload, absl::Cord(reason));
  return status;
}

// A refused or rejected query never reached an engine: its reason label.
absl::string_view RejectReason(const absl::Status& status) {
  if (auto reason = status.GetPayload(kReasonPayload)) {
    for (absl::string_view known : {reject_reason::kInFlightLimit, reject_reason::kMemoryBreaker}) {
      if (*reason == known) return known;
    }
  }
  switch (status.code()) {
    case absl::StatusCode::kResourceExhausted:
      return reject_reason::kQueueFull;
    case absl::StatusCode::kUnavailable:
      return reject_reason::kDraining;
    case absl::StatusCode::kFailedPrecondition:
      return reject_reason::kNoGpu;
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kCancelled:
      return reject_reason::kExpiredInQueue;
    default:
      break;
  }
  return reject_reason::kInvalidArgument;
}

}  // namespace

// The mode label of a call refused before its request was parsed.
constexpr absl::string_view kUnparsedMode = "unparsed";

struct QueryDispatcher::JobState {
  // Held until the last task is answered: a target switched away from lives as long.
  std::shared_ptr<QueryTarget> target;
  CallContext call;
  QueryDone done;
  // Reserved against max_response_bytes_in_flight per task (its k hits).
  std::vector<uint64_t> response_bytes;
  // Per task (the executor job's order): the request it answers and what its response echoes.
  std::vector<size_t> request_index;
  std::vector<std::string> request_id;
  std::vector<index::QueryMode> mode;
  std::vector<std::vector<std::string>> terms;
  // The stored fields each hit carries: none, all ("*"), or these names.
  std::vector<std::vector<std::string>> fields;
  // The longest snippet of each hit's stored text; 0 for none.
  std::vector<uint32_t> snippet_bytes;
};

namespace {

// The snippet of `docid`'s stored text ("text", kept by --store-text) around `terms`, if it has
// one.
void AddSnippet(const index::Analyzer& analyzer,
                const std::vector<std::pair<absl::string_view, absl::string_view>>& fields,
                const std::vector<std::string>& terms, uint32_t max_bytes, tandem::v1::Hit* hit) {
  for (const auto& [name, value] : fields) {
    if (name != "text") continue;
    const Snippet snippet = MakeSnippet(analyzer, value, terms, max_bytes);
    tandem::v1::Snippet* out = hit->mutable_snippet();
    out->set_text(snippet.text);
    for (const auto& [begin, end] : snippet.highlights) {
      tandem::v1::Highlight* h = out->add_highlights();
      h->set_begin(static_cast<uint32_t>(begin));
      h->set_end(static_cast<uint32_t>(end));
    }
    out->set_starts_inside(snippet.starts_inside);
    out->set_ends_inside(snippet.ends_inside);
    return;
  }
}

// The stored fields of `docid` that `wanted` names ("*": all), in the document's order.
void AddStoredFields(const std::vector<std::pair<absl::string_view, absl::string_view>>& fields,
                     const std::vector<std::string>& wanted, tandem::v1::Hit* hit) {
  const bool all = std::find(wanted.begin(), wanted.end(), "*") != wanted.end();
  for (const auto& [name, value] : fields) {
    if (all || std::find(wanted.begin(), wanted.end(), name) != wanted.end()) {
      tandem::v1::StoredField* field = hit->add_fields();
      field->set_name(name.data(), name.size());
      field->set_value(value.data(), value.size());
    }
  }
}

}  // namespace

QueryDispatcher::QueryDispatcher(const index::Index& index, scheduler::QueryExecutor& executor,
                                 QueryMetrics& metrics, const RequestLimits& limits,
                                 rpc::LogSink log, filter::FilterEvaluator filters,
                                 DispatcherMemory memory)
    : QueryDispatcher(
          std::make_shared<QueryTarget>(index, executor, std::move(filters), memory.filter_cache),
          metrics, limits, std::move(log), memory.responses) {}

QueryDispatcher::QueryDispatcher(std::shared_ptr<QueryTarget> target, QueryMetrics& metrics,
                                 const RequestLimits& limits, rpc::LogSink log,
                                 base::MemoryBreaker::Account* responses)
    : target_(std::move(target)),
      metrics_(metrics),
      limits_(limits),
      breaker_(responses),
      log_(rpc::SinkOrStderr(std::move(log))) {}

std::shared_ptr<QueryTarget> QueryDispatcher::target() const {
  absl::MutexLock lock(&target_mu_);
  return target_;
}

std::shared_ptr<QueryTarget> QueryDispatcher::SwitchTarget(std::shared_ptr<QueryTarget> target) {
  absl::MutexLock lock(&target_mu_);
  std::swap(target_, target);
  return target;
}

void QueryDispatcher::LogDataLossOnce(absl::string_view message) {
  absl::MutexLock lock(&log_mu_);
  if (logged_data_loss_.size() > kMaxLoggedDataLoss) return;
  if (logged_data_loss_.size() == kMaxLoggedDataLoss) {
    logged_data_loss_.insert("");  // past the cap: this line once, then nothing
    log_(absl::StrCat("tandem-server: more than ", kMaxLoggedDataLoss,
                      " distinct data-loss errors; no more are logged (they are still counted)"));
    return;
  }
  if (!logged_data_loss_.insert(std::string(message)).second) return;
  log_(
      absl::StrCat("tandem-server: data loss (its queries fail until the index is rebuilt; "
                   "logged once): ",
                   message));
}

absl::Status QueryDispatcher::Dispatch(absl::Span<const SearchRequest* const> requests,
                                       const CallContext& call, QueryDone done) {
  auto state = std::make_shared<JobState>();
  state->target = target();
  const index::Index& index = state->target->index;
  state->call = call;
  state->done = std::move(done);
  scheduler::QueryJob job;
  std::vector<std::pair<size_t, absl::Status>> invalid;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<scheduler::QueryTask> task =
        ParseSearchRequest(*requests[i], index, limits_, &state->target->filters);
    if (!task.ok()) {
      invalid.emplace_back(i, std::move(task).status());
      continue;
    }
    state->request_index.push_back(i);
    // A hit with stored fields is counted with twice the average document's stored bytes.
    const uint64_t fields_per_hit = requests[i]->fields().empty() || index.num_docs() == 0
                                        ? 0
                                        : 2 * index.stored_field_bytes() / index.num_docs();
    // A snippet counts at twice its bound (its highlights and framing).
    state->response_bytes.push_back(
        uint64_t{task->query.query().k} *
        (kResponseBytesPerHit + fields_per_hit + 2 * uint64_t{requests[i]->snippet_bytes()}));
    state->snippet_bytes.push_back(requests[i]->snippet_bytes());
    state->fields.emplace_back(requests[i]->fields().begin(), requests[i]->fields().end());
    state->request_id.push_back(requests[i]->request_id());
    state->mode.push_back(task->query.query().mode);
    std::vector<std::string>& terms = state->terms.emplace_back();
    for (const index::QueryTerm& t : task->query.query().terms) terms.push_back(t.term);
    job.tasks.push_back(*std::move(task));
  }

  const int64_t admitted = static_cast<int64_t>(job.tasks.size());
  if (admitted > 0) {
    uint64_t bytes = 0;
    for (uint64_t b : state->response_bytes) bytes += b;
    absl::Status refused;
    {
      absl::MutexLock lock(&mu_);
      // Checked under the same lock as the in-flight count, so a drain that has seen zero in flight
      // can never be followed by a late admission.
      if (draining_) {
        refused = absl::UnavailableError("the server is draining; retry on another node");
      } else {
        refused = CheckInFlightLimits(admitted, bytes);
      }
      if (refused.ok()) {
        in_flight_ += admitted;
        response_bytes_in_flight_ += bytes;
        metrics_.SetInFlight(in_flight_);
      }
    }
    if (refused.ok() && breaker_ != nullptr && !breaker_->ReserveReclaiming(bytes)) {
      ReleaseInFlight(admitted, bytes, /*reserved=*/false);
      const base::MemoryBreaker& breaker = breaker_->breaker();
      refused =
          WithReason(absl::ResourceExhaustedError(absl::StrCat(
                         "the node's memory breaker is full (", breaker.limit() >> 20,
                         " MiB: ", breaker.Describe(), "), ", (bytes + (1 << 20) - 1) >> 20,
                         " MiB more for this call's responses; retry later or on another node")),
                     reject_reason::kMemoryBreaker);
    }
    if (refused.ok()) {
      job.deadline = call.deadline;
      job.cancelled = call.cancelled;
      job.on_done = [this, state](size_t task, scheduler::QueryOutcome outcome) {
        Complete(*state, task, std::move(outcome));
      };
      refused = state->target->executor.Submit(std::move(job));
      if (!refused.ok()) ReleaseInFlight(admitted, bytes);
    }
    if (!refused.ok()) {
      RecordRefusedCall(requests, refused);
      return refused;
    }
  }
  for (auto& [i, status] : invalid) {
    metrics_.RecordRejection(reject_reason::kInvalidArgument);
    metrics_.RecordQuery({.mode = RequestModeLabel(*requests[i]),
                          .engine = "none",
                          .code = rpc::ToGrpcCode(status.code())});
    state->done(i, std::move(status));
  }
  return absl::OkStatus();
}

absl::Status QueryDispatcher::CheckInFlightLimits(int64_t queries, uint64_t bytes) const {
  if (in_flight_ + queries > static_cast<int64_t>(limits_.max_queries_in_flight)) {
    return WithReason(absl::ResourceExhaustedError(absl::StrCat(
                          "the node has ", in_flight_, " queries in flight and admits at most ",
                          limits_.max_queries_in_flight, "; retry later or on another node")),
                      reject_reason::kInFlightLimit);
  }
  if (response_bytes_in_flight_ + bytes > limits_.max_response_bytes_in_flight) {
    return WithReason(
        absl::ResourceExhaustedError(absl::StrCat(
            "the responses in flight would take more than this node's limit of ",
            limits_.max_response_bytes_in_flight >> 20, " MiB (", response_bytes_in_flight_ >> 20,
            " MiB now, ", (bytes + (1 << 20) - 1) >> 20,
            " MiB more for this call); retry later, or ask for fewer hits")),
        reject_reason::kMemoryBreaker);
  }
  return absl::OkStatus();
}

absl::Status QueryDispatcher::Admissible() const {
  {
    absl::MutexLock lock(&mu_);
    if (draining_) return absl::UnavailableError("the server is draining; retry on another node");
    TANDEM_RETURN_IF_ERROR(CheckInFlightLimits(1, 0));
  }
  const std::shared_ptr<QueryTarget> now = target();
  const scheduler::QueryExecutor& executor = now->executor;
  if (executor.queue_depth() >= executor.queue_capacity()) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the admission queue is full (", executor.queue_capacity(), " waiting); retry later"));
  }
  return absl::OkStatus();
}

void QueryDispatcher::RecordUnparsedCall(const absl::Status& status) {
  // A code of INVALID_ARGUMENT here means the bytes did not parse.
  metrics_.RecordRejection(status.code() == absl::StatusCode::kInvalidArgument
                               ? reject_reason::kMalformed
                               : RejectReason(status));
  metrics_.RecordQuery(
      {.mode = kUnparsedMode, .engine = "none", .code = rpc::ToGrpcCode(status.code())});
}

uint64_t QueryDispatcher::response_bytes_in_flight() const {
  absl::MutexLock lock(&mu_);
  return response_bytes_in_flight_;
}

void QueryDispatcher::RecordRefusedCall(absl::Span<const SearchRequest* const> requests,
                                        const absl::Status& status) {
  metrics_.RecordRejection(RejectReason(status), requests.size());
  for (const SearchRequest* request : requests) {
    metrics_.RecordQuery({.mode = RequestModeLabel(*request),
                          .engine = "none",
                          .code = rpc::ToGrpcCode(status.code())});
  }
}

void QueryDispatcher::Complete(JobState& job, size_t task, scheduler::QueryOutcome outcome) {
  const absl::Duration total = absl::Now() - job.call.arrival;
  QueryRecord record{.mode = index::QueryModeName(job.mode[task]),
                     .engine = outcome.engine.empty() ? absl::string_view("none")
                                                      : absl::string_view(outcome.engine),
                     .code = rpc::ToGrpcCode(outcome.result.status().code()),
                     .reached_engine = !outcome.engine.empty(),
                     .started = outcome.started,
                     .queued = outcome.queued,
                     .executed = outcome.executed,
                     .total = total,
                     .gpu_fallback = outcome.gpu_fallback};
  absl::StatusOr<SearchResponse> response;
  if (outcome.result.ok()) {
    const index::SearchResult& result = *outcome.result;
    record.postings_decoded = result.stats.postings_decoded;
    SearchResponse r;
    r.set_request_id(job.request_id[task]);
    r.mutable_hits()->Reserve(static_cast<int>(result.hits.size()));
    const index::Index& index = job.target->index;
    for (const index::Hit& hit : result.hits) {
      tandem::v1::Hit* h = r.add_hits();
      h->set_docid(hit.docid);
      h->set_score(hit.score);
      // A live index's snapshot answers in its own docIDs (index::DocumentTable).
      const index::DocumentTable* table = result.documents.get();
      const absl::string_view id =
          table != nullptr ? table->external_id(hit.docid) : index.external_id(hit.docid);
      h->set_external_id(id.data(), id.size());
      if (job.fields[task].empty() && job.snippet_bytes[task] == 0) continue;
      const std::vector<std::pair<absl::string_view, absl::string_view>> fields =
          table != nullptr ? table->stored_fields(hit.docid) : index.stored_fields(hit.docid);
      if (!job.fields[task].empty()) AddStoredFields(fields, job.fields[task], h);
      if (job.snippet_bytes[task] > 0) {
        AddSnippet(index.analyzer(), fields, job.terms[task], job.snippet_bytes[task], h);
      }
    }
    tandem::v1::QueryStats* stats = r.mutable_stats();
    stats->set_engine(outcome.engine);
    stats->set_executed_mode(ToProtoMode(result.stats.executed_mode));
    stats->set_postings_decoded(result.stats.postings_decoded);
    stats->set_queued_micros(Micros(outcome.queued));
    stats->set_execution_micros(Micros(outcome.executed));
    stats->set_total_micros(Micros(total));
    for (const std::string& term : job.terms[task]) stats->add_terms(term);
    response = std::move(r);
  } else {
    response = outcome.result.status();
    if (!outcome.started) metrics_.RecordRejection(RejectReason(outcome.result.status()));
    if (outcome.result.status().code() == absl::StatusCode::kDataLoss) {
      // The details (the index's path, the term) go to the node's log, not to the caller.
      LogDataLossOnce(outcome.result.status().message());
      response = absl::DataLossError(
          "the index data this query reads is damaged; the node's log has the details");
    }
  }
  metrics_.RecordQuery(record);
  // `done` builds the call's answer (a batch's whole response, from its last query) before the
  // query's bytes leave the breaker.
  job.done(job.request_index[task], std::move(response));
  ReleaseInFlight(1, job.response_bytes[task]);
}

void QueryDispatcher::ReleaseInFlight(int64_t queries, uint64_t bytes, bool reserved) {
  if (reserved && breaker_ != nullptr) breaker_->Release(bytes);
  absl::MutexLock lock(&mu_);
  in_flight_ -= queries;
  response_bytes_in_flight_ -= bytes;
  metrics_.SetInFlight(in_flight_);
}

void QueryDispatcher::StartDraining() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

bool QueryDispatcher::draining() const {
  absl::MutexLock lock(&mu_);
  return draining_;
}

bool QueryDispatcher::WaitForIdle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(
      absl::Condition(
          +[](int64_t* in_flight) { return *in_flight == 0; }, &in_flight_),
      deadline);
}

int64_t QueryDispatcher::in_flight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

}  // namespace tandem::server
