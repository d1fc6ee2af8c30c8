// File: broker_service.cc
#include "broker/broker_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <set>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "broker/global_statistics.h"
#include "rpc/status_mapping.h"

namespace tandem::broker {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

namespace {

class StreamReactor final
    : public grpc::ServerBidiReactor<SearchRequest, tandem::v1::SearchStreamResponse> {
 public:
  StreamReactor(BrokerService& service, grpc::CallbackServerContext* context)
      : service_(service), context_(context) {
    absl::MutexLock lock(&mu_);
    reading_ = true;
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    reading_ = false;
    if (!ok) {
      half_closed_ = true;
      MaybeFinishLocked();
      return;
    }
    auto slot = std::make_shared<Slot>();
    slot->response.set_request_id(request_.request_id());
    slots_.push_back(slot);
    ++running_;
    const SearchRequest request = std::move(request_);
    // The answer may come on this thread (a cached one): it takes mu_ itself.
    mu_.Unlock();
    CancelHandle handle =
        service_.Answer(request, service_.DeadlineOf(*context_), "search_stream",
                        [this, slot](absl::StatusOr<SearchResponse> answer) {
                          absl::MutexLock lock(&mu_);
                          if (answer.ok()) {
                            *slot->response.mutable_response() = *std::move(answer);
                          } else {
                            *slot->response.mutable_status() = rpc::ToQueryStatus(answer.status());
                          }
                          slot->ready = true;
                          --running_;
                          WriteLocked();
                          MaybeReadLocked();
                          MaybeFinishLocked();
                        });
    mu_.Lock();
    if (cancelled_) {
      handle.Cancel();
    } else {
      slot->handle = handle;
    }
    MaybeReadLocked();
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    slots_.pop_front();
    if (!ok) cancelled_ = true;
    WriteLocked();
    MaybeReadLocked();
    MaybeFinishLocked();
  }

  void OnCancel() override {
    std::vector<CancelHandle> running;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      for (const auto& slot : slots_) {
        if (!slot->ready) running.push_back(slot->handle);
      }
      MaybeFinishLocked();
    }
    for (const CancelHandle& h : running) h.Cancel();
  }

  void OnDone() override { delete this; }

 private:
  struct Slot {
    tandem::v1::SearchStreamResponse response;
    bool ready = false;
    CancelHandle handle;
  };

  void WriteLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (cancelled_) {
      // Nobody reads any more: answers are dropped as they come.
      while (!writing_ && !slots_.empty() && slots_.front()->ready) slots_.pop_front();
      return;
    }
    if (writing_ || slots_.empty() || !slots_.front()->ready) return;
    writing_ = true;
    StartWrite(&slots_.front()->response);
  }

  void MaybeReadLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (reading_ || half_closed_ || cancelled_ ||
        slots_.size() >= BrokerService::kMaxQueriesInFlight) {
      return;
    }
    reading_ = true;
    StartRead(&request_);
  }

  // Finishes once no read, write or query is outstanding and the client is done (or gone).
  void MaybeFinishLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    if (finished_ || reading_ || writing_ || running_ > 0) return;
    if (!(half_closed_ && slots_.empty()) && !cancelled_) return;
    finished_ = true;
    Finish(cancelled_ ? grpc::Status::CANCELLED : grpc::Status::OK);
  }

  BrokerService& service_;
  grpc::CallbackServerContext* context_;
  absl::Mutex mu_;
  SearchRequest request_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  size_t running_ ABSL_GUARDED_BY(mu_) = 0;
  bool reading_ ABSL_GUARDED_BY(mu_) = false;
  bool writing_ ABSL_GUARDED_BY(mu_) = false;
  bool half_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;
};

// A unary call (Search, SearchBatch) whose cancellation reaches its queries' shard calls.
class UnaryCall final : public grpc::ServerUnaryReactor {
 public:
  void Add(const CancelHandle& handle) {
    {
      absl::MutexLock lock(&mu_);
      if (!cancelled_) {
        handles_.push_back(handle);
        return;
      }
    }
    handle.Cancel();
  }
  void OnCancel() override {
    std::vector<CancelHandle> handles;
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
      handles.swap(handles_);
    }
    for (const CancelHandle& h : handles) h.Cancel();
  }
  void OnDone() override { delete this; }

 private:
  absl::Mutex mu_;
  std::vector<CancelHandle> handles_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace

BrokerService::BrokerService(ReplicaSet& replicas, ScatterGather& fanout, ResultCache& cache,
                             BrokerMetrics* metrics, BrokerServiceOptions options)
    : replicas_(replicas),
      fanout_(fanout),
      cache_(cache),
      metrics_(metrics),
      options_(std::move(options)) {}

absl::Time BrokerService::DeadlineOf(const grpc::CallbackServerContext& context) const {
  const auto deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) {
    return absl::Now() + options_.default_deadline;
  }
  return absl::FromChrono(deadline);
}

CancelHandle BrokerService::Answer(const SearchRequest& request, absl::Time deadline,
                                   absl::string_view method, ScatterGather::Done done) {
  const absl::Time start = absl::Now();
  const auto finish = [this, start, method, request_id = request.request_id(),
                       done = std::move(done)](absl::StatusOr<SearchResponse> answer) {
    const absl::Duration took = absl::Now() - start;
    if (answer.ok()) {
      answer->set_request_id(request_id);
      answer->mutable_stats()->set_total_micros(absl::ToInt64Microseconds(took));
    }
    if (metrics_ != nullptr) {
      metrics_->RecordQuery(method, rpc::ToGrpcCode(answer.status().code()),
                            answer.ok() && answer->degraded(), took);
    }
    done(std::move(answer));
  };
  std::string key;
  if (cache_.enabled()) {
    key = ResultCache::Key(request, replicas_.topology()->generation);
    std::optional<SearchResponse> cached = cache_.Lookup(key, start);
    if (metrics_ != nullptr) metrics_->RecordCache(cached.has_value());
    if (cached.has_value()) {
      finish(*std::move(cached));
      return {};
    }
  }
  ScatterGather::Done store = [this, key = std::move(key),
                               finish = std::move(finish)](absl::StatusOr<SearchResponse> answer) {
    // Only complete answers are kept: a degraded one would outlive the outage.
    if (answer.ok() && !answer->degraded() && !key.empty()) {
      cache_.Insert(key, *answer, absl::Now());
    }
    finish(std::move(answer));
  };
  if (!options_.global_stats || request.has_collection_statistics()) {
    return fanout_.Search(request, deadline, std::move(store));
  }
  auto deferred = std::make_shared<DeferredCancel>();
  GatherStatistics(replicas_.topology(), request, deadline,
                   [this, request, deadline, deferred, store = std::move(store)](
                       absl::StatusOr<tandem::v1::CollectionStatistics> stats) {
                     if (!stats.ok()) {
                       store(stats.status());
                       return;
                     }
                     if (deferred->cancelled()) {
                       store(absl::CancelledError("the caller cancelled the query"));
                       return;
                     }
                     SearchRequest with = request;
                     *with.mutable_collection_statistics() = *std::move(stats);
                     const CancelHandle handle = fanout_.Search(with, deadline, store);
                     deferred->Set([handle] { handle.Cancel(); });
                   });
  return CancelHandle([deferred] { deferred->Cancel(); });
}

grpc::ServerUnaryReactor* BrokerService::GetCollectionStatistics(
    grpc::CallbackServerContext* context, const SearchRequest* request,
    tandem::v1::CollectionStatistics* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  GatherStatistics(replicas_.topology(), *request, DeadlineOf(*context),
                   [reactor, response](absl::StatusOr<tandem::v1::CollectionStatistics> sum) {
                     if (sum.ok()) *response = *std::move(sum);
                     reactor->Finish(rpc::ToGrpcStatus(sum.status()));
                   });
  return reactor;
}

grpc::ServerUnaryReactor* BrokerService::Search(grpc::CallbackServerContext* context,
                                                const SearchRequest* request,
                                                SearchResponse* response) {
  auto* call = new UnaryCall();
  // The call lives until its OnDone, which comes only after this returns and Finish is called.
  call->Add(Answer(*request, DeadlineOf(*context), "search",
                   [call, response](absl::StatusOr<SearchResponse> answer) {
                     if (!answer.ok()) {
                       call->Finish(rpc::ToGrpcStatus(answer.status()));
                       return;
                     }
                     *response = *std::move(answer);
                     call->Finish(grpc::Status::OK);
                   }));
  return call;
}

grpc::ServerUnaryReactor* BrokerService::SearchBatch(grpc::CallbackServerContext* context,
                                                     const tandem::v1::SearchBatchRequest* request,
                                                     tandem::v1::SearchBatchResponse* response) {
  auto* call = new UnaryCall();
  const int n = request->requests_size();
  if (static_cast<uint32_t>(n) > options_.max_batch) {
    call->Finish(grpc::Status(
        grpc::StatusCode::INVALID_ARGUMENT,
        absl::StrCat("a batch holds at most ", options_.max_batch, " queries, got ", n)));
    return call;
  }
  if (n == 0) {
    call->Finish(grpc::Status::OK);
    return call;
  }
  for (int i = 0; i < n; ++i) response->add_results();
  auto pending = std::make_shared<std::atomic<int>>(n);
  const absl::Time deadline = DeadlineOf(*context);
  for (int i = 0; i < n; ++i) {
    call->Add(Answer(request->requests(i), deadline, "search_batch",
                     [call, response, pending, i](absl::StatusOr<SearchResponse> answer) {
                       tandem::v1::SearchBatchResult* result = response->mutable_results(i);
                       if (answer.ok()) {
                         *result->mutable_response() = *std::move(answer);
                       } else {
                         *result->mutable_status() = rpc::ToQueryStatus(answer.status());
                       }
                       // Each answer writes its own result; the last one finishes the call.
                       if (pending->fetch_sub(1, std::memory_order_acq_rel) == 1) {
                         call->Finish(grpc::Status::OK);
                       }
                     }));
  }
  return call;
}

grpc::ServerBidiReactor<SearchRequest, tandem::v1::SearchStreamResponse>*
BrokerService::SearchStream(grpc::CallbackServerContext* context) {
  return new StreamReactor(*this, context);
}

grpc::ServerUnaryReactor* BrokerService::GetIndexInfo(
    grpc::CallbackServerContext* context, const tandem::v1::GetIndexInfoRequest* /*request*/,
    tandem::v1::GetIndexInfoResponse* response) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  std::shared_ptr<const Topology> topology = replicas_.topology();
  std::set<std::string> engines;
  std::vector<uint32_t> unknown;
  uint64_t live_documents = 0;
  double live_length = 0;
  for (uint32_t s = 0; s < topology->shards; ++s) {
    std::optional<tandem::v1::GetIndexInfoResponse> info;
    for (const auto& r : topology->replicas[s]) {
      if ((info = r->info()).has_value()) break;
    }
    if (!info.has_value()) {
      unknown.push_back(s);
      continue;
    }
    if (s == 0 || response->codec().empty()) {
      response->set_codec(info->codec());
      response->set_analyzer(info->analyzer());
      response->set_build_time(info->build_time());
      response->set_format_version(info->format_version());
      response->set_source_format(info->source_format());
      response->set_source_input(info->source_input());
    }
    if (info->has_shard() && info->shard().collection_documents() == 0) {
      // A live shard (tandem-server --live-shard): the collection is the sum of the shards.
      live_documents += info->documents();
      live_length += static_cast<double>(info->average_document_length()) * info->documents();
      response->set_documents(live_documents);
      response->set_average_document_length(
          live_documents == 0 ? 0.0f : static_cast<float>(live_length / live_documents));
    } else if (info->has_shard()) {
      response->set_documents(info->shard().collection_documents());
      response->set_average_document_length(info->shard().collection_average_document_length());
    } else {
      response->set_documents(info->documents());
      response->set_average_document_length(info->average_document_length());
    }
    response->set_terms(std::max(response->terms(), info->terms()));
    response->set_postings(response->postings() + info->postings());
    response->set_index_bytes(response->index_bytes() + info->index_bytes());
    for (const std::string& e : info->engines()) engines.insert(e);
  }
  if (topology->shards == 0 || !unknown.empty()) {
    reactor->Finish(grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        topology->shards == 0 ? "no replica has answered yet"
                              : absl::StrCat("no replica of shard(s) ",
                                             absl::StrJoin(unknown, ", "), " has answered yet")));
    return reactor;
  }
  response->set_index_id(topology->collection_id);
  for (const std::string& e : engines) response->add_engines(e);
  reactor->Finish(grpc::Status::OK);
  return reactor;
}

}  // namespace tandem::broker
