#include "bench/unary_transport.h"

#include <chrono>
#include <utility>

namespace tandem::bench {

using tandem::v1::SearchResponse;
using tandem::v1::SearchService;

struct UnaryTransport::Call {
  grpc::ClientContext context;
  SearchResponse response;
  grpc::Status status;
  std::unique_ptr<grpc::ClientAsyncResponseReader<SearchResponse>> reader;
  Clock::time_point scheduled;
  bool measured = false;
  int slot = -1;  // closed-loop client, -1 in the open loop
};

UnaryTransport::UnaryTransport(std::vector<SearchService::Stub*> stubs, int cq_threads,
                               const RunOptions& options, Host& host)
    : stubs_(std::move(stubs)), num_cqs_(cq_threads), timeout_s_(options.timeout_s), host_(host) {}

UnaryTransport::~UnaryTransport() = default;

void UnaryTransport::Start() {
  cqs_.clear();
  for (int i = 0; i < num_cqs_; ++i) cqs_.push_back(std::make_unique<grpc::CompletionQueue>());
  recorders_.assign(num_cqs_, Recorder{});
  for (int i = 0; i < num_cqs_; ++i) pollers_.emplace_back([this, i] { Poll(i); });
}

bool UnaryTransport::Send(Clock::time_point scheduled, bool measured, int slot, int cq_index) {
  auto* call = new Call;  // owned by the completion queue until Poll takes it back
  call->scheduled = scheduled;
  call->measured = measured;
  call->slot = slot;
  call->context.set_deadline(std::chrono::system_clock::now() +
                             std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                 std::chrono::duration<double>(timeout_s_)));
  const tandem::v1::SearchRequest& request = host_.StartQuery();
  SearchService::Stub& stub =
      *stubs_[next_stub_.fetch_add(1, std::memory_order_relaxed) % stubs_.size()];
  call->reader = stub.PrepareAsyncSearch(&call->context, request, cqs_[cq_index].get());
  call->reader->StartCall();
  call->reader->Finish(&call->response, &call->status, call);
  return true;
}

std::vector<Recorder> UnaryTransport::Finish() {
  for (auto& cq : cqs_) cq->Shutdown();
  for (auto& t : pollers_) t.join();
  pollers_.clear();
  cqs_.clear();
  return std::move(recorders_);
}

void UnaryTransport::Poll(int cq_index) {
  grpc::CompletionQueue& cq = *cqs_[cq_index];
  Recorder& rec = recorders_[cq_index];
  void* tag;
  bool ok;
  while (cq.Next(&tag, &ok)) {
    std::unique_ptr<Call> call(static_cast<Call*>(tag));
    if (call->measured) {
      rec.Record(call->scheduled, Clock::now(), call->status.error_code(),
                 call->status.ok() ? &call->response.stats() : nullptr);
    }
    const int slot = call->slot;
    call.reset();
    host_.Completed(slot, cq_index);
  }
}

}  // namespace tandem::bench
