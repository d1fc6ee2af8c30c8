#include "server/query_dispatcher.h"

#include <cstdio>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/status_mapping.h"

namespace tandem::server {
namespace {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

uint64_t Micros(absl::Duration d) { return static_cast<uint64_t>(absl::ToInt64Microseconds(d)); }

// A refused or rejected query never reached an engine: its reason label.
absl::string_view RejectReason(const absl::Status& status) {
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

struct QueryDispatcher::JobState {
  CallContext call;
  QueryDone done;
  // Per task (the executor job's order): the request it answers and what its response echoes.
  std::vector<size_t> request_index;
  std::vector<std::string> request_id;
  std::vector<index::QueryMode> mode;
  std::vector<std::vector<std::string>> terms;
};

QueryDispatcher::QueryDispatcher(const index::Index& index, scheduler::QueryExecutor& executor,
                                 QueryMetrics& metrics, const RequestLimits& limits, LogSink log)
    : index_(index),
      executor_(executor),
      metrics_(metrics),
      limits_(limits),
      log_(log != nullptr ? std::move(log) : [](absl::string_view line) {
        std::fprintf(stderr, "%.*s\n", static_cast<int>(line.size()), line.data());
      }) {}

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
  state->call = call;
  state->done = std::move(done);
  scheduler::QueryJob job;
  std::vector<std::pair<size_t, absl::Status>> invalid;
  for (size_t i = 0; i < requests.size(); ++i) {
    absl::StatusOr<scheduler::QueryTask> task =
        ParseSearchRequest(*requests[i], index_.analyzer(), limits_);
    if (!task.ok()) {
      invalid.emplace_back(i, std::move(task).status());
      continue;
    }
    state->request_index.push_back(i);
    state->request_id.push_back(requests[i]->request_id());
    state->mode.push_back(task->query.mode);
    std::vector<std::string>& terms = state->terms.emplace_back();
    for (const index::QueryTerm& t : task->query.terms) terms.push_back(t.term);
    job.tasks.push_back(*std::move(task));
  }

  const int64_t admitted = static_cast<int64_t>(job.tasks.size());
  if (admitted > 0) {
    absl::Status refused;
    {
      absl::MutexLock lock(&mu_);
      // Checked under the same lock as the in-flight count, so a drain that has seen zero in flight
      // can never be followed by a late admission.
      if (draining_) {
        refused = absl::UnavailableError("the server is draining; retry on another node");
      } else {
        in_flight_ += admitted;
        metrics_.SetInFlight(in_flight_);
      }
    }
    if (refused.ok()) {
      job.deadline = call.deadline;
      job.cancelled = call.cancelled;
      job.on_done = [this, state](size_t task, scheduler::QueryOutcome outcome) {
        Complete(*state, task, std::move(outcome));
      };
      refused = executor_.Submit(std::move(job));
      if (!refused.ok()) ReleaseInFlight(admitted);
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
                          .code = ToGrpcCode(status.code())});
    state->done(i, std::move(status));
  }
  return absl::OkStatus();
}

void QueryDispatcher::RecordRefusedCall(absl::Span<const SearchRequest* const> requests,
                                        const absl::Status& status) {
  metrics_.RecordRejection(RejectReason(status), requests.size());
  for (const SearchRequest* request : requests) {
    metrics_.RecordQuery(
        {.mode = RequestModeLabel(*request), .engine = "none", .code = ToGrpcCode(status.code())});
  }
}

void QueryDispatcher::Complete(JobState& job, size_t task, scheduler::QueryOutcome outcome) {
  const absl::Duration total = absl::Now() - job.call.arrival;
  QueryRecord record{.mode = index::QueryModeName(job.mode[task]),
                     .engine = outcome.engine.empty() ? absl::string_view("none")
                                                      : absl::string_view(outcome.engine),
                     .code = ToGrpcCode(outcome.result.status().code()),
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
    for (const index::Hit& hit : result.hits) {
      tandem::v1::Hit* h = r.add_hits();
      h->set_docid(hit.docid);
      h->set_score(hit.score);
      const absl::string_view id = index_.external_id(hit.docid);
      h->set_external_id(id.data(), id.size());
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
  job.done(job.request_index[task], std::move(response));
  ReleaseInFlight(1);
}

void QueryDispatcher::ReleaseInFlight(int64_t queries) {
  absl::MutexLock lock(&mu_);
  in_flight_ -= queries;
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
