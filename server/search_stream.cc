#include "server/search_stream.h"

#include <utility>

#include "rpc/status_mapping.h"
#include "server/search_service.h"
#include "server/wire.h"

namespace tandem::server {

using tandem::v1::SearchRequest;
using tandem::v1::SearchResponse;

SearchStreamReactor::SearchStreamReactor(grpc::CallbackServerContext* context,
                                         QueryDispatcher& dispatcher, RequestReader& reader,
                                         size_t max_response_bytes)
    : context_(*context),
      dispatcher_(dispatcher),
      reader_(reader),
      max_response_bytes_(max_response_bytes),
      deadline_(CallDeadline(*context)),
      cancelled_(std::make_shared<std::atomic<bool>>(false)) {
  absl::MutexLock lock(&mu_);
  reading_ = true;
  StartRead(&request_);
}

void SearchStreamReactor::OnReadDone(bool ok) {
  Slot* slot = nullptr;
  {
    absl::MutexLock lock(&mu_);
    if (!ok || broken_) {
      reading_ = false;
      reads_done_ = true;
    } else {
      slots_.push_back(std::make_unique<Slot>());
      slot = slots_.back().get();
      ++unanswered_;
    }
  }
  if (slot != nullptr) {
    // Outside the lock: Dispatch may answer an invalid request on this thread, through Fill.
    SearchRequest request;
    if (absl::Status read = reader_.Read(request_, context_, request); !read.ok()) {
      Fill(*slot, read);
    } else {
      slot->request_id = request.request_id();
      const CallContext call{.deadline = deadline_, .cancelled = cancelled_};
      const SearchRequest* const requests[] = {&request};
      absl::Status admitted = dispatcher_.Dispatch(
          requests, call,
          [this, slot](size_t, absl::StatusOr<SearchResponse> r) { Fill(*slot, std::move(r)); });
      if (!admitted.ok()) Fill(*slot, admitted);
    }
  }
  std::optional<grpc::Status> finish;
  {
    absl::MutexLock lock(&mu_);
    reading_ = false;  // request_ is free only now: no thread may start the next read before this
    finish = Advance();
  }
  if (finish) Finish(*finish);
}

void SearchStreamReactor::Fill(Slot& slot, absl::StatusOr<SearchResponse> result) {
  // Encoded before taking the lock; `slot` is this thread's until it is marked ready.
  tandem::v1::SearchStreamResponse message;
  message.set_request_id(slot.request_id);
  *message.mutable_status() = rpc::ToQueryStatus(result.status());
  if (result.ok()) *message.mutable_response() = *std::move(result);
  if (absl::Status written = SerializeResponse(message, max_response_bytes_, slot.response);
      !written.ok()) {
    message.clear_response();
    *message.mutable_status() = rpc::ToQueryStatus(written);
    // A status and an id always fit.
    SerializeResponse(message, max_response_bytes_, slot.response).IgnoreError();
  }
  std::optional<grpc::Status> finish;
  {
    absl::MutexLock lock(&mu_);
    slot.ready = true;
    --unanswered_;
    finish = Advance();
  }
  if (finish) Finish(*finish);
}

void SearchStreamReactor::OnWriteDone(bool ok) {
  std::optional<grpc::Status> finish;
  {
    absl::MutexLock lock(&mu_);
    writing_ = false;
    slots_.pop_front();
    if (!ok) broken_ = true;
    finish = Advance();
  }
  if (finish) Finish(*finish);
}

void SearchStreamReactor::OnCancel() {
  MarkCancelled(*cancelled_, deadline_);
  std::optional<grpc::Status> finish;
  {
    absl::MutexLock lock(&mu_);
    broken_ = true;
    finish = Advance();
  }
  if (finish) Finish(*finish);
}

void SearchStreamReactor::OnDone() { delete this; }

std::optional<grpc::Status> SearchStreamReactor::Advance() {
  if (finished_) return std::nullopt;
  if (broken_) {
    // Nothing more goes out; drop answered slots, keep those that queries still write into.
    while (!writing_ && !slots_.empty() && slots_.front()->ready) slots_.pop_front();
  } else if (!writing_ && !slots_.empty() && slots_.front()->ready) {
    writing_ = true;
    StartWrite(&slots_.front()->response);
  }
  if (!broken_ && !reads_done_ && !reading_ && slots_.size() < kMaxQueriesInFlight) {
    reading_ = true;
    StartRead(&request_);
  }
  const bool reads_over = reads_done_ || (broken_ && !reading_);
  if (reads_over && !writing_ && unanswered_ == 0 && slots_.empty()) {
    // Finish is called by the caller after it releases mu_: OnDone may run (and delete this) on
    // another thread as soon as Finish is called.
    finished_ = true;
    return broken_ ? grpc::Status(grpc::StatusCode::CANCELLED, "stream cancelled")
                   : grpc::Status::OK;
  }
  return std::nullopt;
}

}  // namespace tandem::server
