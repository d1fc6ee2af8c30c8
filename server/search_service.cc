#include "server/search_service.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "index/resolved_query.h"
#include "live/snapshot.h"
#include "rpc/status_mapping.h"
#include "server/search_stream.h"
#include "server/wire.h"

namespace tandem::server {
namespace {

using tandem::v1::SearchBatchResponse;
using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

// A unary reactor whose OnCancel raises the flag the engines poll. Finish is called exactly once,
// by whichever thread completes the call; gRPC then calls OnDone, the reactor's last event.
class CancellableReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit CancellableReactor(absl::Time deadline)
      : deadline_(deadline), cancelled_(std::make_shared<std::atomic<bool>>(false)) {}
  absl::Time deadline() const { return deadline_; }
  std::shared_ptr<const std::atomic<bool>> cancelled() const { return cancelled_; }
  void OnCancel() override { MarkCancelled(*cancelled_, deadline_); }
  void OnDone() override { delete this; }

 private:
  const absl::Time deadline_;
  std::shared_ptr<std::atomic<bool>> cancelled_;
};

}  // namespace

absl::Time CallDeadline(const grpc::CallbackServerContext& context) {
  const std::chrono::system_clock::time_point deadline = context.deadline();
  if (deadline == std::chrono::system_clock::time_point::max()) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

void MarkCancelled(std::atomic<bool>& cancelled, absl::Time deadline) {
  // gRPC's deadline timer and absl::Now() read different clocks; within this margin of the deadline
  // the cancellation is taken for the deadline (the query then stops at the deadline, at most this
  // much later).
  constexpr absl::Duration kClockSlack = absl::Milliseconds(100);
  if (absl::Now() + kClockSlack >= deadline) return;
  cancelled.store(true, std::memory_order_relaxed);
}

RequestReader::RequestReader(QueryDispatcher& dispatcher, rpc::LogSink log)
    : dispatcher_(dispatcher), log_(absl::Minutes(1), std::move(log)) {}

absl::Status RequestReader::Read(const grpc::ByteBuffer& bytes,
                                 const grpc::CallbackServerContext& context,
                                 google::protobuf::Message& request) {
  absl::Status parsed = ParseRequest(bytes, request);
  if (!parsed.ok()) {
    dispatcher_.RecordUnparsedCall(parsed);
    log_.Log(absl::StrCat("tandem-server: answered INVALID_ARGUMENT to ", context.peer(), ": ",
                          parsed.message()));
  }
  return parsed;
}

SearchService::SearchService(QueryDispatcher& dispatcher, std::vector<std::string> engines,
                             SearchServiceOptions options)
    : dispatcher_(dispatcher),
      engines_(std::move(engines)),
      max_response_bytes_(options.max_response_bytes),
      live_shard_(std::move(options.live_shard)),
      reader_(dispatcher, std::move(options.log)) {}

absl::StatusOr<tandem::v1::ShardInfo> ParseLiveShard(absl::string_view text) {
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("--live-shard \"", text, "\": ", why,
                                                   " (the form is COLLECTION:SHARD/SHARDS)"));
  };
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos || colon == 0) return bad("no collection name");
  const absl::string_view place = text.substr(colon + 1);
  const size_t slash = place.find('/');
  uint32_t shard = 0;
  uint32_t shards = 0;
  if (slash == absl::string_view::npos || !absl::SimpleAtoi(place.substr(0, slash), &shard) ||
      !absl::SimpleAtoi(place.substr(slash + 1), &shards)) {
    return bad("no SHARD/SHARDS numbers");
  }
  if (shards < 1 || shard >= shards) return bad("SHARD must be below SHARDS");
  tandem::v1::ShardInfo info;
  info.set_shard(shard);
  info.set_shards(shards);
  info.set_collection_index_id(std::string(text.substr(0, colon)));
  return info;
}

absl::Status SearchService::Accept(const grpc::CallbackServerContext& context,
                                   const grpc::ByteBuffer& bytes, grpc::ServerUnaryReactor& reactor,
                                   google::protobuf::Message& request) {
  // Refused before parsing when nothing could be admitted: under overload a refusal costs little.
  absl::Status status = dispatcher_.Admissible();
  if (!status.ok()) {
    dispatcher_.RecordUnparsedCall(status);
  } else {
    status = reader_.Read(bytes, context, request);
  }
  if (!status.ok()) reactor.Finish(rpc::ToGrpcStatus(status));
  return status;
}

grpc::ServerUnaryReactor* SearchService::Search(grpc::CallbackServerContext* context,
                                                const grpc::ByteBuffer* request_bytes,
                                                grpc::ByteBuffer* response_bytes) {
  auto* reactor = new CancellableReactor(CallDeadline(*context));
  SearchRequest request;
  if (!Accept(*context, *request_bytes, *reactor, request).ok()) return reactor;
  const CallContext call{.deadline = reactor->deadline(), .cancelled = reactor->cancelled()};
  const SearchRequest* const requests[] = {&request};
  absl::Status admitted = dispatcher_.Dispatch(
      requests, call,
      [this, reactor, response_bytes](size_t, absl::StatusOr<SearchResponse> result) {
        absl::Status status = result.status();
        if (result.ok()) status = SerializeResponse(*result, max_response_bytes_, *response_bytes);
        reactor->Finish(rpc::ToGrpcStatus(status));
      });
  if (!admitted.ok()) reactor->Finish(rpc::ToGrpcStatus(admitted));
  return reactor;
}

grpc::ServerUnaryReactor* SearchService::SearchBatch(grpc::CallbackServerContext* context,
                                                     const grpc::ByteBuffer* request_bytes,
                                                     grpc::ByteBuffer* response_bytes) {
  auto* reactor = new CancellableReactor(CallDeadline(*context));
  tandem::v1::SearchBatchRequest request;
  if (!Accept(*context, *request_bytes, *reactor, request).ok()) return reactor;
  std::vector<const SearchRequest*> requests;
  requests.reserve(request.requests_size());
  for (const SearchRequest& r : request.requests()) requests.push_back(&r);
  if (absl::Status valid = ValidateBatchSize(request, dispatcher_.limits()); !valid.ok()) {
    dispatcher_.RecordRefusedCall(requests, valid);
    reactor->Finish(rpc::ToGrpcStatus(valid));
    return reactor;
  }
  if (requests.empty()) {
    reactor->Finish(rpc::ToGrpcStatus(
        SerializeResponse(SearchBatchResponse(), max_response_bytes_, *response_bytes)));
    return reactor;
  }
  // Results are pre-allocated so that workers fill distinct elements without locking; the last one
  // to finish serializes the response and completes the call.
  auto response = std::make_shared<SearchBatchResponse>();
  for (size_t i = 0; i < requests.size(); ++i) response->add_results();
  auto remaining = std::make_shared<std::atomic<size_t>>(requests.size());
  const CallContext call{.deadline = reactor->deadline(), .cancelled = reactor->cancelled()};
  absl::Status admitted = dispatcher_.Dispatch(
      requests, call,
      [this, reactor, response, response_bytes, remaining](size_t i,
                                                           absl::StatusOr<SearchResponse> result) {
        tandem::v1::SearchBatchResult* slot = response->mutable_results(static_cast<int>(i));
        *slot->mutable_status() = rpc::ToQueryStatus(result.status());
        if (result.ok()) *slot->mutable_response() = *std::move(result);
        if (remaining->fetch_sub(1, std::memory_order_acq_rel) == 1) {
          absl::Status written = SerializeResponse(*response, max_response_bytes_, *response_bytes);
          response->Clear();
          reactor->Finish(rpc::ToGrpcStatus(written));
        }
      });
  if (!admitted.ok()) reactor->Finish(rpc::ToGrpcStatus(admitted));
  return reactor;
}

grpc::ServerBidiReactor<grpc::ByteBuffer, grpc::ByteBuffer>* SearchService::SearchStream(
    grpc::CallbackServerContext* context) {
  return new SearchStreamReactor(context, dispatcher_, reader_, max_response_bytes_);
}

grpc::ServerUnaryReactor* SearchService::GetIndexInfo(grpc::CallbackServerContext* context,
                                                      const grpc::ByteBuffer* request_bytes,
                                                      grpc::ByteBuffer* response_bytes) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  tandem::v1::GetIndexInfoRequest request;
  if (absl::Status read = reader_.Read(*request_bytes, *context, request); !read.ok()) {
    reactor->Finish(rpc::ToGrpcStatus(read));
    return reactor;
  }
  tandem::v1::GetIndexInfoResponse response;
  const std::shared_ptr<QueryTarget> target = dispatcher_.target();  // held while it is read
  const index::Index& index = target->index;
  const index::IndexManifest& m = index.manifest();
  response.set_index_id(m.index_id);
  // A node that took writes answers from its live documents.
  const std::shared_ptr<const live::Snapshot> snapshot =
      target->live != nullptr ? target->live->snapshot() : nullptr;
  response.set_documents(snapshot != nullptr ? snapshot->num_docs() : m.stats.num_docs);
  response.set_terms(index.num_terms());
  response.set_postings(m.stats.num_postings);
  response.set_index_bytes(index.index_bytes());
  response.set_codec(m.codec);
  response.set_analyzer(m.analyzer.Describe());
  response.set_build_time(m.build_time);
  response.set_average_document_length(snapshot != nullptr ? snapshot->avg_doc_length()
                                                           : m.stats.avg_doc_length);
  for (const std::string& engine : engines_) response.add_engines(engine);
  response.set_format_version(m.format_version);
  response.set_source_format(m.source_format);
  // The input's name without the build host's directories (which a client has no use for).
  response.set_source_input(std::filesystem::path(m.source_input).filename().string());
  // A live shard's place. Its collection's counts stay 0, unknown here: a broker sums the shards'
  // own, and gathers the statistics queries score with (--global-stats).
  if (live_shard_.has_value()) *response.mutable_shard() = *live_shard_;
  // A shard's place, and the collection's statistics its BM25 uses; the counts above are its own.
  if (const index::ShardManifest* shard = index.shard()) {
    tandem::v1::ShardInfo& info = *response.mutable_shard();
    info.set_shard(shard->shard);
    info.set_shards(shard->shards);
    info.set_first_docid(shard->first_docid);
    info.set_collection_documents(shard->collection_num_docs);
    info.set_collection_average_document_length(shard->collection_avg_doc_length);
    info.set_collection_index_id(shard->collection_index_id);
  }
  response.set_generation(target->generation);
  response.set_directory(index.directory());
  reactor->Finish(
      rpc::ToGrpcStatus(SerializeResponse(response, max_response_bytes_, *response_bytes)));
  return reactor;
}

grpc::ServerUnaryReactor* SearchService::GetCollectionStatistics(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request_bytes,
    grpc::ByteBuffer* response_bytes) {
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  SearchRequest request;
  if (absl::Status read = reader_.Read(*request_bytes, *context, request); !read.ok()) {
    reactor->Finish(rpc::ToGrpcStatus(read));
    return reactor;
  }
  const std::shared_ptr<QueryTarget> target = dispatcher_.target();  // held while it is read
  const index::Index& index = target->index;
  absl::StatusOr<std::vector<index::QueryTerm>> terms =
      RequestTerms(request, index.analyzer(), dispatcher_.limits());
  if (!terms.ok()) {
    reactor->Finish(rpc::ToGrpcStatus(terms.status()));
    return reactor;
  }
  *terms = index::MergeRepeatedTerms(*terms);
  tandem::v1::CollectionStatistics response;
  std::vector<uint64_t> dfs;
  if (target->live != nullptr) {
    const std::shared_ptr<const live::Snapshot> snapshot = target->live->snapshot();
    response.set_num_docs(snapshot->num_docs());
    response.set_total_doc_length(snapshot->total_doc_length());
    dfs = snapshot->Statistics(*terms).dfs;
  } else {
    response.set_num_docs(index.manifest().stats.num_docs);
    response.set_total_doc_length(index.manifest().stats.total_doc_length);
    for (const index::QueryTerm& t : *terms) {
      const std::optional<index::TermInfo> info = index.Lookup(t.term);
      dfs.push_back(info.has_value() ? info->df : 0);
    }
  }
  for (size_t i = 0; i < terms->size(); ++i) {
    tandem::v1::TermStatistics* t = response.add_terms();
    t->set_term((*terms)[i].term);
    t->set_document_frequency(dfs[i]);
  }
  reactor->Finish(
      rpc::ToGrpcStatus(SerializeResponse(response, max_response_bytes_, *response_bytes)));
  return reactor;
}

}  // namespace tandem::server
