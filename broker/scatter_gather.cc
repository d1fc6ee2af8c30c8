// File: scatter_gather.cc
#include "broker/scatter_gather.h"

#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "broker/shard_merge.h"
#include "grpcpp/grpcpp.h"
#include "rpc/status_mapping.h"

namespace tandem::broker {

using tandem::v1::QueryMode;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

bool AbslParseFlag(absl::string_view text, HedgePolicy* policy, std::string* error) {
  if (text == "off") {
    *policy = {HedgePolicy::Kind::kOff, absl::ZeroDuration()};
    return true;
  }
  if (text == "auto") {
    *policy = {HedgePolicy::Kind::kAuto, absl::ZeroDuration()};
    return true;
  }
  absl::Duration delay;
  if (!absl::ParseDuration(text, &delay) || delay <= absl::ZeroDuration()) {
    *error = "must be off, auto or a positive duration such as 5ms";
    return false;
  }
  *policy = {HedgePolicy::Kind::kFixed, delay};
  return true;
}

std::string AbslUnparseFlag(const HedgePolicy& policy) {
  switch (policy.kind) {
    case HedgePolicy::Kind::kOff:
      return "off";
    case HedgePolicy::Kind::kAuto:
      return "auto";
    case HedgePolicy::Kind::kFixed:
      return absl::FormatDuration(policy.delay);
  }
  return "auto";
}

void LatencyWindow::Add(absl::Duration d) {
  const uint64_t i = added_.fetch_add(1, std::memory_order_relaxed);
  ring_[i % kSize].store(absl::ToInt64Nanoseconds(d), std::memory_order_relaxed);
}

std::optional<absl::Duration> LatencyWindow::P95() const {
  const uint64_t added = added_.load(std::memory_order_relaxed);
  if (added < 32) return std::nullopt;
  absl::MutexLock lock(&mu_);
  // Recomputed every 32 answers: a selection over 512 values, not on every query.
  if (!p95_.has_value() || added - p95_at_ >= 32) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(added, kSize));
    std::vector<int64_t> values(n);
    for (size_t i = 0; i < n; ++i) values[i] = ring_[i].load(std::memory_order_relaxed);
    const size_t rank = (n * 95 + 99) / 100 - 1;
    std::nth_element(values.begin(), values.begin() + rank, values.end());
    p95_ = absl::Nanoseconds(values[rank]);
    p95_at_ = added;
  }
  return p95_;
}

namespace {

// Errors of the query itself: every replica would give the same, so it is the answer.
bool IsQueryError(grpc::StatusCode code) {
  return code == grpc::StatusCode::INVALID_ARGUMENT || code == grpc::StatusCode::OUT_OF_RANGE ||
         code == grpc::StatusCode::FAILED_PRECONDITION;
}

// Failures another replica may not have.
bool IsRetryable(grpc::StatusCode code) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::RESOURCE_EXHAUSTED ||
         code == grpc::StatusCode::INTERNAL || code == grpc::StatusCode::UNKNOWN ||
         code == grpc::StatusCode::ABORTED || code == grpc::StatusCode::DATA_LOSS ||
         code == grpc::StatusCode::CANCELLED || code == grpc::StatusCode::UNIMPLEMENTED;
}

absl::Status ToAbsl(const grpc::Status& status) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

}  // namespace

// One query's fan-out: one or two passes (AND+OR), each over every shard.
class QueryRun : public std::enable_shared_from_this<QueryRun> {
 public:
  QueryRun(ScatterGather& owner, const SearchRequest& request, absl::Time deadline,
           ScatterGather::Done done, std::shared_ptr<const Topology> topology)
      : owner_(owner),
        request_(request),
        shard_deadline_(deadline - owner.options_.deadline_budget),
        done_(std::move(done)),
        k_(request.k() == 0 ? 10 : request.k()),
        topology_(std::move(topology)) {
    absl::MutexLock lock(&owner_.mu_);
    ++owner_.running_;
  }

  ~QueryRun() {
    absl::MutexLock lock(&owner_.mu_);
    --owner_.running_;
  }

  // Cancels every call in flight; the query ends with CANCELLED, without retries or a next pass.
  void Cancel() {
    std::vector<std::shared_ptr<Attempt>> running;
    {
      absl::MutexLock lock(&mu_);
      if (cancelled_) return;
      cancelled_ = true;
      for (const Shard& shard : shards_) {
        for (const auto& a : shard.attempts) {
          if (!a->finished) running.push_back(a);
        }
      }
    }
    for (const auto& a : running) a->context.TryCancel();
  }

  void Start() {
    const QueryMode mode = request_.mode();
    StartPass(mode == tandem::v1::QUERY_MODE_AND_OR ? tandem::v1::QUERY_MODE_AND : mode);
  }

 private:
  struct Attempt {
    int pass = 0;
    std::shared_ptr<Replica> replica;
    std::shared_ptr<const SearchRequest> request;
    grpc::ClientContext context;
    SearchResponse response;
    absl::Time started;
    bool finished = false;
  };
  struct Shard {
    bool done = false;
    bool answered = false;
    grpc::Status last_error;
    std::vector<std::shared_ptr<Attempt>> attempts;
    std::vector<const Replica*> tried;
    int in_flight = 0;
    absl::Time started;
    SearchResponse answer;
  };

  void StartPass(QueryMode mode) {
    const uint32_t shards = topology_->shards;
    auto request = std::make_shared<SearchRequest>(request_);
    request->set_mode(mode);
    request->clear_require_complete();
    std::vector<std::pair<uint32_t, std::shared_ptr<Attempt>>> launch;
    std::vector<uint32_t> unserved;  // shards with no healthy replica to ask
    bool complete = false;
    int pass = 0;
    {
      absl::MutexLock lock(&mu_);
      pass = ++pass_;
      pass_mode_ = mode;
      pass_request_ = std::move(request);
      shards_.assign(shards, Shard{});
      finished_ = 0;
      const absl::Time now = absl::Now();
      for (uint32_t s = 0; s < shards; ++s) {
        shards_[s].started = now;
        std::shared_ptr<Attempt> a = PrepareLocked(s);
        if (a != nullptr) {
          launch.emplace_back(s, std::move(a));
        } else {
          shards_[s].done = true;
          shards_[s].last_error = grpc::Status(grpc::StatusCode::UNAVAILABLE, "no healthy replica");
          unserved.push_back(s);
          ++finished_;
        }
      }
      complete = finished_ == shards;
    }
    if (owner_.metrics_ != nullptr) {
      for (uint32_t s : unserved) {
        owner_.metrics_->RecordShardFailure(s, grpc::StatusCode::UNAVAILABLE);
      }
    }
    for (auto& [s, a] : launch) {
      Launch(s, a);
      ScheduleHedge(s, pass);
    }
    if (complete) Complete();
  }

  // An attempt on an untried healthy replica of shard `s`, counted in flight; null when none.
  std::shared_ptr<Attempt> PrepareLocked(uint32_t s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    Shard& shard = shards_[s];
    std::shared_ptr<Replica> replica = ReplicaSet::Pick(*topology_, s, shard.tried);
    if (replica == nullptr) return nullptr;
    auto a = std::make_shared<Attempt>();
    a->pass = pass_;
    a->replica = std::move(replica);
    a->request = pass_request_;
    a->context.set_deadline(absl::ToChronoTime(shard_deadline_));
    shard.tried.push_back(a->replica.get());
    shard.attempts.push_back(a);
    ++shard.in_flight;
    return a;
  }

  void Launch(uint32_t s, const std::shared_ptr<Attempt>& a) {
    a->replica->CallStarted();
    a->started = absl::Now();
    a->replica->stub().async()->Search(&a->context, a->request.get(), &a->response,
                                       [self = shared_from_this(), s, a](grpc::Status status) {
                                         self->OnAttemptDone(s, a, std::move(status));
                                       });
  }

  void ScheduleHedge(uint32_t s, int pass) {
    if (owner_.options_.max_attempts < 2) return;
    // No timer where there is no second replica to send the hedge to.
    const auto& replicas = topology_->replicas[s];
    if (std::count_if(replicas.begin(), replicas.end(),
                      [](const auto& r) { return r->healthy(); }) < 2) {
      return;
    }
    const std::optional<absl::Duration> delay = owner_.HedgeDelay(s);
    if (!delay.has_value()) return;
    const absl::Time when = absl::Now() + *delay;
    if (when >= shard_deadline_) return;
    std::weak_ptr<QueryRun> weak = weak_from_this();
    owner_.timers_.RunAt(when, [weak, s, pass] {
      if (std::shared_ptr<QueryRun> run = weak.lock()) run->Hedge(s, pass);
    });
  }

  void Hedge(uint32_t s, int pass) {
    std::shared_ptr<Attempt> a;
    {
      absl::MutexLock lock(&mu_);
      if (pass != pass_ || shards_[s].done || shards_[s].in_flight == 0 ||
          shards_[s].attempts.size() >= static_cast<size_t>(owner_.options_.max_attempts)) {
        return;
      }
      a = PrepareLocked(s);
    }
    if (a == nullptr) return;
    if (owner_.metrics_ != nullptr) owner_.metrics_->RecordHedge(s);
    Launch(s, a);
  }

  void OnAttemptDone(uint32_t s, const std::shared_ptr<Attempt>& a, grpc::Status status) {
    a->replica->CallEnded();
    const absl::Time now = absl::Now();
    if (status.ok()) {
      owner_.Latency(s).Add(now - a->started);
    } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
      owner_.replicas_.ReportUnavailable(*a->replica, status);
    }
    std::vector<std::shared_ptr<Attempt>> losers;
    std::shared_ptr<Attempt> retry;
    bool complete = false;
    bool missing = false;
    absl::Duration shard_time;
    {
      absl::MutexLock lock(&mu_);
      a->finished = true;
      if (a->pass != pass_) return;
      Shard& shard = shards_[s];
      --shard.in_flight;
      if (shard.done) return;
      const grpc::StatusCode code = status.error_code();
      if (status.ok() || IsQueryError(code)) {
        shard.done = true;
        if (status.ok()) {
          shard.answered = true;
          shard.answer = std::move(a->response);
          shard_time = now - shard.started;
        } else if (fatal_.ok()) {
          fatal_ = status;
        }
        for (const auto& other : shard.attempts) {
          if (!other->finished) losers.push_back(other);
        }
      } else {
        shard.last_error = status;
        if (!cancelled_ && IsRetryable(code) && now < shard_deadline_ &&
            shard.attempts.size() < static_cast<size_t>(owner_.options_.max_attempts)) {
          retry = PrepareLocked(s);
        }
        if (retry == nullptr && shard.in_flight == 0) {
          shard.done = true;
          missing = true;
        }
      }
      complete = shard.done && ++finished_ == shards_.size();
    }
    for (const auto& loser : losers) loser->context.TryCancel();
    if (owner_.metrics_ != nullptr) {
      if (status.ok()) owner_.metrics_->RecordShard(s, shard_time);
      if (missing) owner_.metrics_->RecordShardFailure(s, status.error_code());
      if (retry != nullptr) owner_.metrics_->RecordRetry(s);
    }
    if (retry != nullptr) Launch(s, retry);
    if (complete) Complete();
  }

  // Every shard of the pass is done.
  void Complete() {
    std::vector<ShardAnswer> answers;
    QueryMode mode;
    absl::Status early;  // the answer, when it is an error decided already
    {
      absl::MutexLock lock(&mu_);
      if (!fatal_.ok()) {
        early = ToAbsl(fatal_);
      } else if (cancelled_) {
        early = absl::CancelledError("the call was cancelled");
      }
      mode = pass_mode_;
      for (uint32_t s = 0; s < shards_.size(); ++s) {
        Shard& shard = shards_[s];
        if (shard.answered) {
          answers.push_back({s, topology_->first_docid[s], std::move(shard.answer)});
        } else {
          missing_.emplace(s, shard.last_error);
        }
      }
    }
    if (!early.ok()) {
      Finish(early);
      return;
    }
    if (request_.mode() == tandem::v1::QUERY_MODE_AND_OR && mode == tandem::v1::QUERY_MODE_AND &&
        TotalHits(answers) < k_ && absl::Now() < shard_deadline_) {
      // The AND pass's work counts in the answer's stats, as on one node.
      for (const ShardAnswer& a : answers) {
        and_postings_ += a.response.stats().postings_decoded();
      }
      StartPass(tandem::v1::QUERY_MODE_OR);
      return;
    }
    std::set<uint32_t> missing;
    std::vector<std::string> reasons;
    bool overloaded = false;
    {
      absl::MutexLock lock(&mu_);
      for (const auto& [s, error] : missing_) {
        overloaded |= error.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED;
        if (missing.insert(s).second) {
          reasons.push_back(absl::StrCat("shard ", s, ": ", rpc::GrpcCodeName(error.error_code()),
                                         " ", error.error_message()));
        }
      }
    }
    if (overloaded) {
      // Every replica of a shard refused the query: overload is pushed back to the caller, who
      // may retry later, rather than hidden in a partial answer.
      Finish(absl::ResourceExhaustedError(absl::StrCat("every replica of a shard is overloaded (",
                                                       absl::StrJoin(reasons, "; "), ")")));
      return;
    }
    if (answers.empty()) {
      Finish(absl::UnavailableError(
          absl::StrCat("no shard answered (", absl::StrJoin(reasons, "; "), ")")));
      return;
    }
    if (!missing.empty() && request_.require_complete()) {
      Finish(absl::UnavailableError(
          absl::StrCat(missing.size(), " of ", topology_->shards,
                       " shards did not answer and the request requires all (",
                       absl::StrJoin(reasons, "; "), ")")));
      return;
    }
    absl::StatusOr<SearchResponse> merged = MergeShardAnswers(k_, answers);
    if (!merged.ok()) {
      Finish(merged.status());
      return;
    }
    merged->mutable_stats()->set_postings_decoded(merged->stats().postings_decoded() +
                                                  and_postings_);
    if (!missing.empty()) {
      merged->set_degraded(true);
      for (uint32_t s : missing) merged->add_missing_shards(s);
    }
    Finish(*std::move(merged));
  }

  void Finish(absl::StatusOr<SearchResponse> answer) {
    ScatterGather::Done done = std::move(done_);
    done(std::move(answer));
  }

  ScatterGather& owner_;
  const SearchRequest request_;
  const absl::Time shard_deadline_;
  ScatterGather::Done done_;
  const uint32_t k_;
  const std::shared_ptr<const Topology> topology_;

  absl::Mutex mu_;
  int pass_ ABSL_GUARDED_BY(mu_) = 0;
  QueryMode pass_mode_ ABSL_GUARDED_BY(mu_) = tandem::v1::QUERY_MODE_OR;
  std::shared_ptr<const SearchRequest> pass_request_ ABSL_GUARDED_BY(mu_);
  std::vector<Shard> shards_ ABSL_GUARDED_BY(mu_);
  size_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  grpc::Status fatal_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t and_postings_ = 0;  // decoded by an AND+OR query's AND pass, when OR follows
  // Shards missing from any pass, with their last error.
  std::multimap<uint32_t, grpc::Status> missing_ ABSL_GUARDED_BY(mu_);
};

ScatterGather::ScatterGather(ReplicaSet& replicas, TimerQueue& timers, BrokerMetrics* metrics,
                             ScatterGatherOptions options)
    : replicas_(replicas), timers_(timers), metrics_(metrics), options_(options) {}

ScatterGather::~ScatterGather() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](int* running) { return *running == 0; }, &running_));
}

LatencyWindow& ScatterGather::Latency(uint32_t shard) {
  absl::MutexLock lock(&mu_);
  while (latency_.size() <= shard) latency_.push_back(std::make_unique<LatencyWindow>());
  return *latency_[shard];
}

std::optional<absl::Duration> ScatterGather::HedgeDelay(uint32_t shard) const {
  switch (options_.hedge.kind) {
    case HedgePolicy::Kind::kOff:
      return std::nullopt;
    case HedgePolicy::Kind::kFixed:
      return options_.hedge.delay;
    case HedgePolicy::Kind::kAuto: {
      absl::MutexLock lock(&mu_);
      if (shard >= latency_.size()) return std::nullopt;
      return latency_[shard]->P95();
    }
  }
  return std::nullopt;
}

void CancelHandle::Cancel() const {
  if (std::shared_ptr<QueryRun> run = run_.lock()) run->Cancel();
  if (cancel_) cancel_();
}

CancelHandle ScatterGather::Search(const SearchRequest& request, absl::Time deadline, Done done) {
  std::shared_ptr<const Topology> topology = replicas_.topology();
  if (topology->shards == 0) {
    done(absl::UnavailableError("no replica has answered yet: the shards are unknown"));
    return {};
  }
  if (deadline - options_.deadline_budget <= absl::Now()) {
    done(absl::DeadlineExceededError(
        absl::StrCat("the deadline leaves no time for the shards after the broker's budget of ",
                     absl::FormatDuration(options_.deadline_budget))));
    return {};
  }
  auto run =
      std::make_shared<QueryRun>(*this, request, deadline, std::move(done), std::move(topology));
  run->Start();
  return CancelHandle(run);
}

}  // namespace tandem::broker
