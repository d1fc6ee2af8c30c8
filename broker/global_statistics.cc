// File: global_statistics.cc
#include "broker/global_statistics.h"

#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tandem::broker {
namespace {

// One query's statistics calls, alive until the last answer.
class Gather : public std::enable_shared_from_this<Gather> {
 public:
  Gather(std::shared_ptr<const Topology> topology, const tandem::v1::SearchRequest& request,
         absl::Time deadline, StatisticsDone done)
      : topology_(std::move(topology)),
        deadline_(deadline),
        done_(std::move(done)),
        answers_(topology_->shards),
        tried_(topology_->shards),
        remaining_(topology_->shards) {
    // Only the query is read: the rest (k, filter, fields) need not travel.
    if (request.has_text()) request_.set_text(request.text());
    if (request.has_terms()) *request_.mutable_terms() = request.terms();
  }

  void Start() {
    for (uint32_t s = 0; s < topology_->shards; ++s) Ask(s, absl::OkStatus());
  }

 private:
  struct Call {
    grpc::ClientContext context;
    tandem::v1::CollectionStatistics response;
  };

  void Ask(uint32_t shard, const absl::Status& last) {
    std::shared_ptr<Replica> replica;
    {
      absl::MutexLock lock(&mu_);
      if (failed_) return;
      replica = ReplicaSet::Pick(*topology_, shard, tried_[shard]);
      if (replica != nullptr) tried_[shard].push_back(replica.get());
    }
    if (replica == nullptr) {
      Finish(absl::UnavailableError(
          absl::StrCat("shard ", shard, ": no healthy replica answered GetCollectionStatistics",
                       last.ok() ? "" : absl::StrCat(" (", last.message(), ")"))));
      return;
    }
    auto call = std::make_shared<Call>();
    call->context.set_deadline(absl::ToChronoTime(deadline_));
    replica->stub().async()->GetCollectionStatistics(
        &call->context, &request_, &call->response,
        [self = shared_from_this(), call, replica, shard](grpc::Status status) {
          self->OnAnswer(shard, *replica, *call, status);
        });
  }

  void OnAnswer(uint32_t shard, const Replica& replica, Call& call, const grpc::Status& status) {
    if (!status.ok()) {
      const absl::Status error(
          static_cast<absl::StatusCode>(status.error_code()),
          absl::StrCat("replica ", replica.address(), ": ", status.error_message()));
      // The query's own fault, or a deadline that passed: no other replica would do better.
      if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
          status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
        Finish(absl::Status(error.code(), absl::StrCat("shard ", shard, ": ", error.message())));
        return;
      }
      Ask(shard, error);
      return;
    }
    bool last = false;
    {
      absl::MutexLock lock(&mu_);
      answers_[shard] = std::move(call.response);
      last = --remaining_ == 0;
    }
    if (last) Finish(SumStatistics(answers_));
  }

  // The first outcome that ends the gather is the answer.
  void Finish(absl::StatusOr<tandem::v1::CollectionStatistics> outcome) {
    {
      absl::MutexLock lock(&mu_);
      if (failed_) return;
      failed_ = true;  // ends it: later answers are dropped
    }
    done_(std::move(outcome));
  }

  const std::shared_ptr<const Topology> topology_;
  tandem::v1::SearchRequest request_;
  const absl::Time deadline_;
  const StatisticsDone done_;
  absl::Mutex mu_;
  std::vector<tandem::v1::CollectionStatistics> answers_;  // read once the last one is in
  std::vector<std::vector<const Replica*>> tried_ ABSL_GUARDED_BY(mu_);
  uint32_t remaining_ ABSL_GUARDED_BY(mu_);
  bool failed_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

void GatherStatistics(std::shared_ptr<const Topology> topology,
                      const tandem::v1::SearchRequest& request, absl::Time deadline,
                      StatisticsDone done) {
  if (topology->shards == 0) {
    done(absl::UnavailableError("no replica has answered yet: the shards are unknown"));
    return;
  }
  std::make_shared<Gather>(std::move(topology), request, deadline, std::move(done))->Start();
}

absl::StatusOr<tandem::v1::CollectionStatistics> SumStatistics(
    const std::vector<tandem::v1::CollectionStatistics>& shards) {
  tandem::v1::CollectionStatistics sum;
  for (size_t s = 0; s < shards.size(); ++s) {
    const tandem::v1::CollectionStatistics& shard = shards[s];
    if (s == 0) {
      *sum.mutable_terms() = shard.terms();
    } else if (shard.terms_size() != sum.terms_size()) {
      return absl::InternalError(absl::StrCat("shard ", s, " analyzes the query into ",
                                              shard.terms_size(), " terms, shard 0 into ",
                                              sum.terms_size(), ": not one collection"));
    } else {
      for (int i = 0; i < shard.terms_size(); ++i) {
        tandem::v1::TermStatistics& t = *sum.mutable_terms(i);
        if (shard.terms(i).term() != t.term()) {
          return absl::InternalError(absl::StrCat(
              "shard ", s, " analyzes the query's term ", i, " into \"", shard.terms(i).term(),
              "\", shard 0 into \"", t.term(), "\": not one collection"));
        }
        t.set_document_frequency(t.document_frequency() + shard.terms(i).document_frequency());
      }
    }
    sum.set_num_docs(sum.num_docs() + shard.num_docs());
    sum.set_total_doc_length(sum.total_doc_length() + shard.total_doc_length());
  }
  return sum;
}

void DeferredCancel::Set(std::function<void()> cancel) {
  {
    absl::MutexLock lock(&mu_);
    if (!cancelled_) {
      cancel_ = std::move(cancel);
      return;
    }
  }
  cancel();
}

void DeferredCancel::Cancel() {
  std::function<void()> cancel;
  {
    absl::MutexLock lock(&mu_);
    cancelled_ = true;
    cancel = std::move(cancel_);
  }
  if (cancel) cancel();
}

bool DeferredCancel::cancelled() const {
  absl::MutexLock lock(&mu_);
  return cancelled_;
}

}  // namespace tandem::broker
